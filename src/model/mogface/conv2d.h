// A PyTorch-style 2-D convolution (symmetric zero padding, dilation, bias) for MogFace, with
// BatchNorm folded in at load time. Includes LibTorch: model/ only.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace mogserve::model::mogface {

struct Size2 {
  int64_t h = 0, w = 0;
};

struct Conv2d {
  at::Tensor weight;  // OIHW; channels-last memory format when the network runs channels-last
  at::Tensor bias;    // [O]; always defined (zeros for bias-free convs, after BN folding)
  int stride = 1;
  int padding = 0;
  int dilation = 1;
  // Run channels-last (through oneDNN directly on CPU). A flag, not the weight's format: a 1x1
  // weight is contiguous in both.
  bool channels_last = false;

  // x: NCHW, any memory format; made channels-last first when channels_last. Output size per
  // axis: (in + 2p - d(k-1) - 1) / s + 1.
  at::Tensor Forward(const at::Tensor& x) const;

  Size2 OutSize(Size2 in) const;
  // Multiply-accumulates of one image for an input of `in`.
  int64_t Macs(Size2 in) const;

  // Weight and bias to `dtype` and the weight to the memory format (after folding, in FP32).
  void Prepare(at::ScalarType dtype, bool to_channels_last);
};

// Folds an inference BatchNorm into the conv in FP32: w' = w * s, b' = (b - mean) * s + beta
// with s = gamma / sqrt(var + eps).
void FoldBatchNorm(Conv2d& conv, const at::Tensor& gamma, const at::Tensor& beta,
                   const at::Tensor& mean, const at::Tensor& var, double eps);

}  // namespace mogserve::model::mogface
