// The LibTorch calls the CPU backend builds every op of a layer plan from. CPU backend only.
#pragma once

#include <ATen/ATen.h>

#include "model/layer_plan.h"

namespace mogserve::engine::torch_backend {

// A 2-D convolution that takes oneDNN directly for channels-last FP32/BF16 CPU input (LibTorch
// 1.13's at::conv2d sends small-batch 1x1 convolutions to its slow reference path when one
// intra-op thread is set: 148 ms instead of 2.7 ms for 512->512 on 32x32), at::conv2d otherwise.
at::Tensor Convolve(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                    at::IntArrayRef strides, at::IntArrayRef padding, at::IntArrayRef dilation,
                    int64_t groups);

// One conv op of a plan: x made channels-last first when `channels_last`; asymmetric padding
// (TF SAME, stride 2 on even sizes) applied explicitly, symmetric padding by the convolution;
// then + residual (when defined) and the activation, in place.
at::Tensor ConvOp(const model::Op& op, const model::ResolvedPadding& pad, int64_t groups,
                  at::Tensor x, const at::Tensor& weight, const at::Tensor& bias,
                  const at::Tensor& residual, bool channels_last);

// x converted to `dtype`, fast for any dense memory format (channels-last included).
at::Tensor CastDense(const at::Tensor& x, at::ScalarType dtype);

// GroupNorm with statistics in FP32 (a group at MogFace's P2 spans ~800k values: BF16 sums
// would lose the mean, spec §10.3), then ReLU when `relu`; returns x's dtype.
at::Tensor GroupNorm(const at::Tensor& x, int64_t groups, double eps, const at::Tensor& gamma,
                     const at::Tensor& beta, bool relu);

// Bilinear x2 of `top` (align_corners=False: half-pixel centres, edges clamped), cropped to the
// top-left of `lateral`'s size when larger (odd sizes), plus `lateral`.
at::Tensor UpsampleAdd(const at::Tensor& top, const at::Tensor& lateral, bool nearest);

}  // namespace mogserve::engine::torch_backend
