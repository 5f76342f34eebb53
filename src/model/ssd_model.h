// The embedded SSD-MobileNetV1 as a FaceModel: network, prepared weights, the weights file's
// anchors and face-api's post-processing (model/ssd_box_coder.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/face_model.h"
#include "model/ssd_box_coder.h"
#include "model/tfjs_weights.h"
#include "mogserve/status.h"

namespace mogserve::model {

class SsdModel final : public FaceModel {
 public:
  // From the tfjs tensors: every tensor the network reads, checked by name and TF shape
  // (kInvalidData listing the missing or mis-shaped ones).
  static StatusOr<std::unique_ptr<SsdModel>> Create(const TfjsWeights& weights);
  // Reads `<dir>/ssd_mobilenetv1_model-weights_manifest.json` and its shards, then Create().
  static StatusOr<std::unique_ptr<SsdModel>> Load(const std::string& dir);

  std::string name() const override { return "ssd-mobilenetv1"; }
  int fixed_side() const override;
  DetectOptions default_detect_options() const override { return DetectOptions{}; }

  const std::vector<AnchorBox>& anchors() const { return anchors_; }

 private:
  std::vector<Detection> Decode(const OutputRows& rows, const DetectOptions& options) const override;
  SsdModel(std::shared_ptr<const Network> network, PreparedWeights weights,
           std::vector<AnchorBox> anchors)
      : FaceModel(std::move(network), std::move(weights)), anchors_(std::move(anchors)) {}

  std::vector<AnchorBox> anchors_;
};

}  // namespace mogserve::model
