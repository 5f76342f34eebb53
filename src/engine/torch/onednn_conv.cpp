#include "engine/torch/onednn_conv.h"

#include "engine/torch/onednn_support.h"

#include <dnnl.hpp>

#include <array>
#include <cmath>
#include <optional>

namespace mogserve::engine::torch_backend {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

memory::data_type DataType(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16:
      return memory::data_type::bf16;
    case at::kChar:
      return memory::data_type::s8;
    case at::kQUInt8:
      return memory::data_type::u8;
    default:
      return memory::data_type::f32;
  }
}

// The key of one primitive: the input shape, everything of the op the kernel depends on and,
// for INT8, the input's scale (the output scales and the bias depend on it).
struct Key {
  int64_t n, h, w;
  int stride, dilation;
  model::ResolvedPadding pad;
  model::Activation act;
  bool residual;
  double input_scale;
  bool operator==(const Key& o) const {
    return n == o.n && h == o.h && w == o.w && stride == o.stride && dilation == o.dilation &&
           pad.top == o.pad.top && pad.bottom == o.pad.bottom && pad.left == o.pad.left &&
           pad.right == o.pad.right && act == o.act && residual == o.residual &&
           input_scale == o.input_scale;
  }
};

int64_t OutputSide(int64_t in, int kernel, int stride, int dilation, int before, int after) {
  return (in + before + after - ((kernel - 1) * dilation + 1)) / stride + 1;
}

// Symmetric per-output-channel INT8 weights: round(w / scale), in [-127, 127].
at::Tensor QuantizeWeights(const at::Tensor& weight, const std::vector<double>& scales) {
  const at::Tensor w = weight.to(at::kFloat).contiguous();
  at::Tensor q = at::empty(w.sizes(), at::kChar);
  const int64_t rows = w.size(0), per_row = w.numel() / rows;
  const float* in = w.data_ptr<float>();
  int8_t* out = q.data_ptr<int8_t>();
  for (int64_t o = 0; o < rows; ++o) {
    const double inv = 1.0 / scales[o];
    for (int64_t i = o * per_row; i < (o + 1) * per_row; ++i) {
      out[i] = static_cast<int8_t>(std::clamp(std::nearbyint(in[i] * inv), -127.0, 127.0));
    }
  }
  return q;
}

}  // namespace

struct OneDnnConv::Prepared {
  Key key;
  std::optional<dnnl::convolution_forward::primitive_desc> pd;  // empty: no oneDNN kernel
  std::optional<dnnl::convolution_forward> primitive;
  std::shared_ptr<const ReorderedWeights> weights;  // in pd's layout
  std::vector<float> int8_bias;  // INT8: the bias in accumulator units (of this input scale)
  memory bias;
  int64_t out_h = 0, out_w = 0;
};

OneDnnConv::OneDnnConv(const model::ConvDef& def, const at::Tensor& weight, const at::Tensor& bias,
                       at::ScalarType dtype)
    : out_channels_(def.out_channels),
      in_channels_(def.in_channels),
      kernel_(def.kernel),
      groups_(def.groups),
      int8_(false),
      dtype_(dtype),
      weight_(weight),
      bias_(bias.to(at::kFloat).contiguous()) {}

OneDnnConv::OneDnnConv(const model::ConvDef& def, const at::Tensor& weight, const at::Tensor& bias,
                       Int8ConvScales scales)
    : out_channels_(def.out_channels),
      in_channels_(def.in_channels),
      kernel_(def.kernel),
      groups_(def.groups),
      int8_(true),
      dtype_(at::kQUInt8),
      weight_(QuantizeWeights(weight, scales.weight)),
      bias_(bias.to(at::kFloat).contiguous()),
      scales_(std::move(scales)) {}

OneDnnConv::~OneDnnConv() = default;

bool OneDnnConv::Accepts(const at::Tensor& x) const {
  if (!x.device().is_cpu() || x.dim() != 4 || !x.is_contiguous(at::MemoryFormat::ChannelsLast)) {
    return false;
  }
  if (int8_) return x.scalar_type() == at::kQUInt8 && x.q_zero_point() == 0;
  return x.scalar_type() == dtype_;
}

const OneDnnConv::Prepared* OneDnnConv::Find(const model::Op& op, const model::ResolvedPadding& pad,
                                             const at::Tensor& x) const {
  const Key key{x.size(0),
                x.size(2),
                x.size(3),
                op.stride,
                op.dilation,
                pad,
                op.act,
                op.inputs.size() > 1,
                int8_ ? x.q_scale() : 0.0};
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& p : prepared_) {
    if (p->key == key) return p.get();
  }
  auto p = std::make_unique<Prepared>();
  p->key = key;
  p->out_h = OutputSide(key.h, kernel_, op.stride, op.dilation, pad.top, pad.bottom);
  p->out_w = OutputSide(key.w, kernel_, op.stride, op.dilation, pad.left, pad.right);
  const memory::data_type dt = DataType(dtype_);
  const memory::desc src({key.n, in_channels_, key.h, key.w}, dt, Tag::nhwc);
  const memory::desc dst({key.n, out_channels_, p->out_h, p->out_w}, dt, Tag::nhwc);
  const memory::dims weight_dims =
      groups_ > 1
          ? memory::dims{groups_, out_channels_ / groups_, in_channels_ / groups_, kernel_, kernel_}
          : memory::dims{out_channels_, in_channels_, kernel_, kernel_};
  const memory::desc weights_any(weight_dims, int8_ ? memory::data_type::s8 : dt, Tag::any);
  const memory::desc bias_md({out_channels_}, memory::data_type::f32, Tag::x);
  dnnl::primitive_attr attr;
  dnnl::post_ops post;
  if (int8_) {
    // dst = output_scale[oc] * (acc + bias[oc]), acc in units of input_scale * weight[oc]; the
    // u8 destination saturates at 0 and 255 (ReLU, and ReLU6 through the scale's range).
    std::vector<float> output_scales(out_channels_);
    p->int8_bias.resize(out_channels_);
    const float* bias = bias_.data_ptr<float>();
    for (int o = 0; o < out_channels_; ++o) {
      const double acc_unit = key.input_scale * scales_.weight[o];
      output_scales[o] = static_cast<float>(acc_unit / scales_.output);
      p->int8_bias[o] = static_cast<float>(bias[o] / acc_unit);
    }
    attr.set_output_scales(1 << 1, output_scales);  // per output channel (dimension 1 of dst)
  } else {
    if (key.residual) post.append_sum(1.0f);
    if (op.act == model::Activation::kRelu) {
      post.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    } else if (op.act == model::Activation::kRelu6) {
      post.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
    }
  }
  attr.set_post_ops(post);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per call: concurrent instances
  try {
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, weights_any,
        bias_md, dst, {op.stride, op.stride}, {op.dilation - 1, op.dilation - 1},
        {pad.top, pad.left}, {pad.bottom, pad.right});
    p->pd.emplace(desc, attr, OneDnnCpuEngine());
  } catch (const dnnl::error& e) {
    if (e.status != dnnl_unimplemented) throw;
    prepared_.push_back(std::move(p));  // remembered: LibTorch runs this case
    return prepared_.back().get();
  }
  p->primitive.emplace(*p->pd);
  // The weights in the kernel's layout: reordered once per layout, shared across shapes. (INT8
  // kernels without VNNI want weights pre-scaled against vpmaddubsw's saturation: the reorder
  // into their desc does that.)
  const memory::desc wanted = p->pd->weights_desc();
  for (const auto& q : prepared_) {
    if (q->weights && q->weights->memory.get_desc() == wanted) p->weights = q->weights;
  }
  if (!p->weights) {
    // The stored tensor as it is laid out (OIHW, any strides; grouped: G x O/G x I/G x k x k).
    memory::dims strides(weight_.strides().begin(), weight_.strides().end());
    if (groups_ > 1) strides.insert(strides.begin(), strides[0] * (out_channels_ / groups_));
    const memory::desc user(weight_dims, DataType(weight_.scalar_type()), strides);
    p->weights = ReorderWeights(memory(user, OneDnnCpuEngine(), weight_.data_ptr()), wanted);
  }
  p->bias = memory(bias_md, OneDnnCpuEngine(), int8_ ? p->int8_bias.data() : bias_.data_ptr());
  prepared_.push_back(std::move(p));
  return prepared_.back().get();
}

std::vector<std::string> OneDnnConv::Kernels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> kernels;
  for (const auto& p : prepared_) kernels.push_back(p->pd ? p->pd->impl_info_str() : "");
  return kernels;
}

at::Tensor OneDnnConv::Run(const model::Op& op, const model::ResolvedPadding& pad,
                           const at::Tensor& x, const at::Tensor& residual,
                           bool residual_reusable) const {
  const Prepared* p = Find(op, pad, x);
  if (!p->primitive) return {};
  const int64_t n = x.size(0);
  at::Tensor y;
  if (int8_) {
    // NHWC quint8 storage viewed as NCHW, as the plan's quantised tensors are.
    y = at::_empty_affine_quantized({n, p->out_h, p->out_w, out_channels_},
                                    at::device(at::kCPU).dtype(at::kQUInt8), scales_.output, 0)
            .permute({0, 3, 1, 2});
  } else {
    // The sum post-op adds what the destination holds.
    y = ResidualOutput({n, out_channels_, p->out_h, p->out_w}, x.options(), residual,
                       residual_reusable);
  }
  ExecuteWithScratchpad(
      *p->primitive, p->pd->scratchpad_desc(),
      {{DNNL_ARG_SRC, memory(p->pd->src_desc(), OneDnnCpuEngine(), x.data_ptr())},
       {DNNL_ARG_WEIGHTS, p->weights->memory},
       {DNNL_ARG_BIAS, p->bias},
       {DNNL_ARG_DST, memory(p->pd->dst_desc(), OneDnnCpuEngine(), y.data_ptr())}});
  return y;
}

}  // namespace mogserve::engine::torch_backend
