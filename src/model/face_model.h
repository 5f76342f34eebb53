// A loaded face detector, torch-free: its network (one definition, run by every backend), the
// weights prepared for it, and the model's own pre- and post-processing rules (input geometry,
// default thresholds, anchors, box decoding, NMS, mapping back to the original picture).
// Immutable after creation and shared by every engine instance; all methods are thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/detection.h"
#include "image/resize.h"
#include "model/network.h"
#include "model/output_decoder.h"
#include "model/prepared_weights.h"
#include "mogserve/result.h"

namespace mogserve::model {

// Clips every face's box to the picture (letterbox.source_extent_x/y) and drops those left without
// area (they lay in the padding); landmarks are kept as decoded.
void ClipToPicture(std::vector<Detection>& faces, const image::Letterbox& letterbox);

class FaceModel : public OutputDecoder {
 public:
  FaceModel(std::shared_ptr<const Network> network, PreparedWeights weights)
      : network_(std::move(network)), weights_(std::move(weights)) {}
  virtual ~FaceModel() = default;

  const std::shared_ptr<const Network>& network() const { return network_; }
  const PreparedWeights& weights() const { return weights_; }

  virtual std::string name() const = 0;               // "ssd-mobilenetv1", "mogface"
  virtual std::string variant() const { return ""; }  // MogFace: "r101", "e", "r50"
  // Input geometry: a fixed square side (> 0), or any size whose sides are multiples of
  // multiple() for batching into buckets.
  virtual int fixed_side() const { return 0; }
  // How pictures fill the fixed square (insightface's families: as insightface does it).
  virtual image::FitRule fixed_fit() const { return image::FitRule::kRounded; }
  virtual int multiple() const { return 1; }
  // > 0: every picture runs at its own size padded to multiples of this (ShapeBuckets::Native:
  // YuNet as OpenCV runs it), whatever the input policy asks.
  virtual int native_multiple() const { return 0; }
  DetectOptions default_detect_options() const override = 0;

  // The model's Decode, then KeepFaces (common/detection.h: the faces an image keeps, the same
  // rule for every model).
  std::vector<Detection> Postprocess(const OutputRows& rows,
                                     const DetectOptions& options) const final {
    return KeepFaces(Decode(rows, options), options);
  }

 protected:
  // Every face of the rows: decoded, thresholded, NMS-filtered, mapped through the letterbox into
  // original-picture pixels and clipped to the picture, those left without area dropped; highest
  // score first. options.max_faces is KeepFaces', not the decoder's.
  virtual std::vector<Detection> Decode(const OutputRows& rows,
                                        const DetectOptions& options) const = 0;

 private:
  std::shared_ptr<const Network> network_;
  PreparedWeights weights_;
};

}  // namespace mogserve::model
