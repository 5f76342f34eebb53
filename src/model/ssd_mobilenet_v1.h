// face-api's SSD-MobileNetV1 face detector in LibTorch (spec: shipped_face_models.md §2).
// Immutable after creation; Forward() is safe to call from several threads at once.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "model/conv_layer.h"
#include "model/ssd_box_coder.h"
#include "model/tfjs_weights.h"
#include "mogserve/status.h"

namespace mogserve::model {

struct SsdRawOutputs {
  at::Tensor box_encodings;  // [N, 5118, 4] float32 (ty, tx, th, tw)
  at::Tensor scores;         // [N, 5118] float32 face probability
};

class SsdMobilenetV1 {
 public:
  static constexpr int kInputSize = 512;
  static constexpr const char* kWeightsName = "ssd_mobilenetv1_model";

  // Builds the network from the tfjs weights: converts TF layouts to OIHW, folds the depthwise
  // BatchNorms into their convolutions (in FP32), keeps only the face logit of the class heads
  // and fuses each level's box and class heads into one convolution. `channels_last` selects
  // the weights' memory format (the fast oneDNN path on CPU).
  static StatusOr<std::unique_ptr<SsdMobilenetV1>> Create(const TfjsWeights& weights,
                                                          bool channels_last);

  // images: [N, 512, 512, 3] uint8 RGB (the letterboxed canvases). Normalises to [-1, 1].
  SsdRawOutputs Forward(const at::Tensor& images) const;

  const std::vector<AnchorBox>& anchors() const { return anchors_; }
  bool channels_last() const { return channels_last_; }
  // Multiply-accumulates of one 512x512 forward pass.
  int64_t MacsPerImage() const;

 private:
  SsdMobilenetV1() = default;

  std::vector<ConvLayer> backbone_;  // conv_0, then (depthwise, pointwise) x 13
  std::vector<ConvLayer> extras_;    // Prediction/Conv2d_0..7
  std::vector<ConvLayer> heads_;     // per level: [A*4 box | A face-logit] outputs
  std::vector<int> anchors_per_cell_;
  std::vector<AnchorBox> anchors_;
  bool channels_last_ = true;
};

}  // namespace mogserve::model
