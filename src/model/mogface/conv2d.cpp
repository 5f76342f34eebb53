#include "model/mogface/conv2d.h"

namespace mogserve::model::mogface {
namespace {

// As in model/conv_layer.cpp: at::conv2d's backend choice in LibTorch 1.13 sends small-batch
// 1x1 convolutions to a slow reference path when one intra-op thread is set; for CPU
// channels-last FP32/BF16 input, oneDNN directly is never slower and keeps channels-last.
bool UseOneDnnDirectly(const at::Tensor& x) {
  return x.device().is_cpu() && x.is_contiguous(at::MemoryFormat::ChannelsLast) &&
         (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16);
}

}  // namespace

at::Tensor Conv2d::Forward(const at::Tensor& x) const {
  const int64_t strides[2] = {stride, stride};
  const int64_t paddings[2] = {padding, padding};
  const int64_t dilations[2] = {dilation, dilation};
  if (channels_last) {
    const at::Tensor in = x.contiguous(at::MemoryFormat::ChannelsLast);
    if (UseOneDnnDirectly(in)) {
      return at::mkldnn_convolution(in, weight, bias, paddings, strides, dilations, 1);
    }
    return at::conv2d(in, weight, bias, strides, paddings, dilations, 1);
  }
  return at::conv2d(x, weight, bias, strides, paddings, dilations, 1);
}

Size2 Conv2d::OutSize(Size2 in) const {
  const int64_t k = weight.size(2);
  auto axis = [&](int64_t n) { return (n + 2 * padding - dilation * (k - 1) - 1) / stride + 1; };
  return {axis(in.h), axis(in.w)};
}

int64_t Conv2d::Macs(Size2 in) const {
  const Size2 out = OutSize(in);
  return weight.numel() * out.h * out.w;
}

void Conv2d::Prepare(at::ScalarType dtype, bool to_channels_last) {
  channels_last = to_channels_last;
  weight = weight.to(dtype).contiguous(to_channels_last ? at::MemoryFormat::ChannelsLast
                                                        : at::MemoryFormat::Contiguous);
  bias = bias.to(dtype).contiguous();
}

void FoldBatchNorm(Conv2d& conv, const at::Tensor& gamma, const at::Tensor& beta,
                   const at::Tensor& mean, const at::Tensor& var, double eps) {
  const at::Tensor scale = gamma / at::sqrt(var + eps);
  conv.weight = (conv.weight * scale.view({-1, 1, 1, 1})).contiguous();
  conv.bias = (conv.bias - mean) * scale + beta;
}

}  // namespace mogserve::model::mogface
