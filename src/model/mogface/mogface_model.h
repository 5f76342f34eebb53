// A MogFace checkpoint (R101 / E / R50) as a FaceModel: the variant's network, its weights
// checked strictly against the network's keys and prepared (BN folded in FP64), anchors per
// input shape and ModelScope's post-processing (spec §5, §7).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "model/face_model.h"
#include "model/host_tensor.h"
#include "model/mogface/mogface_variant.h"
#include "mogserve/status.h"

namespace mogserve::model::mogface {

class MogFaceModel final : public FaceModel {
 public:
  // Detects the variant (module.-prefixed keys are accepted), checks the layout strictly
  // (kInvalidData naming the missing / extra / mis-shaped keys; HCAM → kUnsupported) and
  // prepares the weights. The map is only read.
  static StatusOr<std::unique_ptr<MogFaceModel>> Create(const HostTensorMap& weights);

  Variant mogface_variant() const { return variant_; }
  std::string name() const override { return "mogface"; }
  std::string variant() const override { return VariantName(variant_); }
  // Sides of multiples of 32 keep every P2..P5 map exactly twice the next (spec §10.1); any
  // size runs (the FPN crops).
  int multiple() const override { return 32; }
  DetectOptions default_detect_options() const override;

  // The anchors of a height x width input (MogFaceAnchors), computed once per shape.
  std::span<const float> Anchors(int height, int width) const;

 private:
  std::vector<Detection> Decode(const OutputRows& rows, const DetectOptions& options) const override;
  MogFaceModel(std::shared_ptr<const Network> network, PreparedWeights weights, Variant variant)
      : FaceModel(std::move(network), std::move(weights)), variant_(variant) {}

  Variant variant_;
  mutable std::mutex anchors_mutex_;
  // Entries are never erased, so spans into them stay valid. Guarded by anchors_mutex_.
  mutable std::map<std::pair<int, int>, std::vector<float>> anchors_;
};

}  // namespace mogserve::model::mogface
