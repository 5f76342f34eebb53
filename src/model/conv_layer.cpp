#include "model/conv_layer.h"

#include <algorithm>

namespace mogserve::model {

SamePad ComputeSamePad(int in, int kernel, int stride) {
  const int out = (in + stride - 1) / stride;
  const int total = std::max((out - 1) * stride + kernel - in, 0);
  return {total / 2, total - total / 2};
}

namespace {

bool UseOneDnnDirectly(const at::Tensor& x) {
  return x.device().is_cpu() && x.is_contiguous(at::MemoryFormat::ChannelsLast) &&
         (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16);
}

}  // namespace

at::Tensor Convolve(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                    at::IntArrayRef strides, at::IntArrayRef padding, at::IntArrayRef dilation,
                    int64_t groups) {
  // oneDNN directly is never slower than conv2d's choice here and keeps the output
  // channels-last.
  if (UseOneDnnDirectly(x)) {
    return at::mkldnn_convolution(x, weight, bias, padding, strides, dilation, groups);
  }
  return at::conv2d(x, weight, bias, strides, padding, dilation, groups);
}

at::Tensor ConvLayer::Forward(const at::Tensor& x) const {
  const int k = kernel();
  const SamePad ph = ComputeSamePad(static_cast<int>(x.size(2)), k, stride);
  const SamePad pw = ComputeSamePad(static_cast<int>(x.size(3)), k, stride);
  const int64_t strides[2] = {stride, stride};
  const int64_t dilation[2] = {1, 1};
  at::Tensor y;
  if (ph.before == ph.after && pw.before == pw.after) {
    // Symmetric: let the convolution pad, no copy.
    const int64_t padding[2] = {ph.before, pw.before};
    y = Convolve(x, weight, bias, strides, padding, dilation, groups);
  } else {
    // Asymmetric (stride 2 on even sizes): pad explicitly, keep channels-last for oneDNN.
    at::Tensor padded = at::constant_pad_nd(x, {pw.before, pw.after, ph.before, ph.after}, 0)
                            .contiguous(x.suggest_memory_format());
    const int64_t no_padding[2] = {0, 0};
    y = Convolve(padded, weight, bias, strides, no_padding, dilation, groups);
  }
  if (relu6) y.clamp_(0.0, 6.0);
  return y;
}

int64_t ConvLayer::Macs(int in_h, int in_w, int* out_h, int* out_w) const {
  *out_h = (in_h + stride - 1) / stride;
  *out_w = (in_w + stride - 1) / stride;
  const int64_t per_output = weight.size(1) * weight.size(2) * weight.size(3);
  return per_output * weight.size(0) * static_cast<int64_t>(*out_h) * (*out_w);
}

}  // namespace mogserve::model
