// Builds MogFace layers from a checkpoint's tensors: FP32 copies, BatchNorm folded. Call only
// after CheckCheckpointKeys() passed; a missing key here is a bug and throws c10::Error.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "model/host_tensor.h"
#include "model/mogface/conv2d.h"

namespace mogserve::model::mogface {

inline constexpr double kBatchNormEpsilon = 1e-5;

class CheckpointReader {
 public:
  explicit CheckpointReader(const HostTensorMap& weights) : weights_(weights) {}

  // A float32 copy (the model owns its weights).
  at::Tensor Tensor(const std::string& name) const;
  // `prefix`.weight and, when present, `prefix`.bias (zeros otherwise).
  Conv2d Conv(const std::string& prefix, int stride, int padding, int dilation = 1) const;
  // Conv `conv_prefix` with the BatchNorm `bn_prefix` folded in.
  Conv2d ConvBn(const std::string& conv_prefix, const std::string& bn_prefix, int stride,
                int padding) const;

 private:
  const HostTensorMap& weights_;
};

}  // namespace mogserve::model::mogface
