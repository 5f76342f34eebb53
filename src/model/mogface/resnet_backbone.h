// MogFace's torchvision-style ResNet ("v1.5": stride on the 3x3 conv), BN folded, returning
// C2..C5 (spec §2).
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <optional>
#include <vector>

#include "model/mogface/checkpoint_reader.h"
#include "model/mogface/conv2d.h"

namespace mogserve::model::mogface {

struct Bottleneck {
  Conv2d conv1, conv2, conv3;
  std::optional<Conv2d> downsample;  // block 0 of each stage

  at::Tensor Forward(const at::Tensor& x) const;
  int64_t Macs(Size2 in, Size2* out) const;
};

class ResNetBackbone {
 public:
  // blocks: per stage (layer1..4), e.g. {3, 4, 23, 3}.
  static ResNetBackbone Load(const CheckpointReader& reader, const std::array<int, 4>& blocks);

  // C2, C3, C4, C5 (256, 512, 1024, 2048 channels; strides 4, 8, 16, 32 with n -> ceil(n/2)).
  std::array<at::Tensor, 4> Forward(const at::Tensor& x) const;
  // MACs for an input of `in`; `features` receives the C2..C5 sizes.
  int64_t Macs(Size2 in, std::array<Size2, 4>* features) const;

  void Prepare(at::ScalarType dtype, bool channels_last);

 private:
  Conv2d stem_;
  std::array<std::vector<Bottleneck>, 4> stages_;
};

}  // namespace mogserve::model::mogface
