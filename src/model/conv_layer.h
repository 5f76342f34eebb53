// A 2-D convolution with folded bias, TF "SAME" padding made explicit, and an optional ReLU6:
// the building block of the TF-trained networks. Includes LibTorch: model/ and engine/ only.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace mogserve::model {

struct ConvLayer {
  at::Tensor weight;  // OIHW, channels-last memory format
  at::Tensor bias;    // [O]
  int stride = 1;
  int groups = 1;
  bool relu6 = true;

  int kernel() const { return static_cast<int>(weight.size(2)); }
  int out_channels() const { return static_cast<int>(weight.size(0)); }

  // x: NCHW (any memory format). SAME padding: out = ceil(in / stride); the top/left side gets
  // floor(total / 2) of the padding and the bottom/right the rest.
  at::Tensor Forward(const at::Tensor& x) const;

  // Multiply-accumulates per image for an input of in_h x in_w (for GFLOP/s reporting), and the
  // output size.
  int64_t Macs(int in_h, int in_w, int* out_h, int* out_w) const;
};

// A 2-D convolution that takes oneDNN directly for channels-last FP32/BF16 CPU input (LibTorch
// 1.13's at::conv2d sends small-batch 1x1 convolutions to its slow reference path when one
// intra-op thread is set: 148 ms instead of 2.7 ms for 512->512 on 32x32), at::conv2d otherwise.
at::Tensor Convolve(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                    at::IntArrayRef strides, at::IntArrayRef padding, at::IntArrayRef dilation,
                    int64_t groups);

// TF SAME padding for one axis: the (before, after) amounts.
struct SamePad {
  int before = 0, after = 0;
};
SamePad ComputeSamePad(int in, int kernel, int stride);

}  // namespace mogserve::model
