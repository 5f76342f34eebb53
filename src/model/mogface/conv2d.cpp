#include "model/mogface/conv2d.h"

#include "model/conv_layer.h"

namespace mogserve::model::mogface {
at::Tensor Conv2d::Forward(const at::Tensor& x) const {
  const int64_t strides[2] = {stride, stride};
  const int64_t paddings[2] = {padding, padding};
  const int64_t dilations[2] = {dilation, dilation};
  const at::Tensor in = channels_last ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
  return Convolve(in, weight, bias, strides, paddings, dilations, 1);
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
