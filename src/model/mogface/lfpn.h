// MogFace's neck (LFPN, spec §3): six 256-channel maps P2..P7 from C2..C5. The training-only
// DSFD branch is not built.
#pragma once

#include <ATen/ATen.h>

#include <array>

#include "model/mogface/checkpoint_reader.h"
#include "model/mogface/conv2d.h"

namespace mogserve::model::mogface {

inline constexpr int kLevels = 6;

class Lfpn {
 public:
  static Lfpn Load(const CheckpointReader& reader);

  // c: C2..C5. Returns P2..P7 (strides 4..128).
  std::array<at::Tensor, kLevels> Forward(const std::array<at::Tensor, 4>& c) const;
  // MACs for C2..C5 of the given sizes; `levels` receives the P2..P7 sizes.
  int64_t Macs(const std::array<Size2, 4>& c, std::array<Size2, kLevels>* levels) const;

  void Prepare(at::ScalarType dtype, bool channels_last);

 private:
  Conv2d c6_reduce_, c6_conv_, c7_reduce_, c7_conv_;  // conv+BN+ReLU, BN folded
  Conv2d c5_lat_, c6_lat_, c7_lat_;
  Conv2d ff_c5_c4_, ff_c4_c3_, ff_c3_c2_;  // 1x1 laterals of the top-down sums
  Conv2d p4_lat_, p3_lat_, p2_lat_;        // 3x3 smoothing, applied after the chain
};

// Bilinear x2 of `top` (align_corners=False: half-pixel centres, edges clamped), cropped to the
// top-left of `lateral`'s size when larger (odd sizes), plus `lateral`.
at::Tensor UpsampleAdd(const at::Tensor& top, const at::Tensor& lateral);

}  // namespace mogserve::model::mogface
