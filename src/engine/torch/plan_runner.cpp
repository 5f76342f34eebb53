#include "engine/torch/plan_runner.h"

#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "engine/torch/torch_ops.h"

namespace mogserve::engine::torch_backend {
namespace {

// Route of the INT8 convolutions, measured on the 2-core AVX512-VNNI EPYC (LibTorch 1.13.1,
// Debian's, linked to the system's oneDNN 2.6; 1 thread, batch 1, channels-last, best of 20):
//   3x3 conv 64->64 at 128x128:      FP32 5.3 ms, BF16 2.65 ms, INT8 oneDNN 1.36 ms (3.9x FP32),
//                                    INT8 QNNPACK 23.4 ms (0.23x)
//   3x3 conv 512->512 at 32x32:      FP32 22.4 ms, BF16 10.8 ms, INT8 oneDNN 5.07 ms (4.4x)
//   1x1 conv 256->256 at 32x32:      FP32 0.60 ms, BF16 0.32 ms, INT8 oneDNN 0.164 ms (3.6x)
//   3x3 depthwise 256 at 64x64:      FP32 0.217 ms, BF16 0.173 ms, INT8 oneDNN 0.211 ms (1.0x)
// This LibTorch has no FBGEMM (supportedQEngines: QNNPACK, ONEDNN), so the quantized ops go
// through its ONEDNN engine, which calls the same oneDNN 2.6 library (VNNI kernels) that
// libdnnl-dev would give directly.
QuantParams ParamsOf(const model::TensorScale& t, bool after_relu) {
  if (t.non_negative || after_relu) return {t.range / 255.0, 0};
  return {t.range / 127.0, 128};
}

// MOGSERVE_DIRECT_CONV=0 sends every convolution through LibTorch as before the direct path
// (for A/B benchmarks in one binary, and as an escape hatch).
bool DirectConvEnabled() {
  const char* v = std::getenv("MOGSERVE_DIRECT_CONV");
  return v == nullptr || std::string(v) != "0";
}

// MOGSERVE_WINOGRAD=0 runs FP32 3x3 convolutions directly (A/B); needs the direct path.
bool WinogradEnabled() {
  const char* v = std::getenv("MOGSERVE_WINOGRAD");
  return DirectConvEnabled() && (v == nullptr || std::string(v) != "0");
}

// LibTorch 1.13's quantize and dequantize kernels are slow here (quantizing the SSD's first
// 32x256x256 map: 6.3 ms, dequantizing it 3.5 ms, single thread): these loops do the same on the
// NHWC layout (contiguous for channels-last tensors) in ~0.5 ms, and the result is viewed back
// as NCHW with channels-last strides (no copy). Round half up instead of half to even: ties are
// rare and one step apart either way.
at::Tensor Nhwc(const at::Tensor& x) {
  return x.permute({0, 2, 3, 1}).contiguous();
}
at::Tensor Nchw(const at::Tensor& nhwc) {
  return nhwc.permute({0, 3, 1, 2});
}

uint8_t* Bytes(const at::Tensor& q) {
  return reinterpret_cast<uint8_t*>(q.data_ptr<c10::quint8>());
}

at::Tensor Quantize(const at::Tensor& x, const QuantParams& q) {
  if (x.is_quantized()) return x;
  const at::Tensor src = Nhwc(x.to(at::kFloat));
  at::Tensor out = at::_empty_affine_quantized(src.sizes(), at::device(at::kCPU).dtype(at::kQUInt8),
                                               q.scale, q.zero_point);
  const float* in = src.data_ptr<float>();
  uint8_t* dst = Bytes(out);
  const float inv = static_cast<float>(1.0 / q.scale);
  const float offset = static_cast<float>(q.zero_point) + 0.5f;
  at::parallel_for(0, src.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float v = std::min(std::max(in[i] * inv + offset, 0.0f), 255.0f);
      dst[i] = static_cast<uint8_t>(v);
    }
  });
  return Nchw(out);
}

at::Tensor Float(const at::Tensor& x) {
  if (!x.is_quantized()) return x;
  const at::Tensor src = Nhwc(x);
  at::Tensor out = at::empty(src.sizes(), at::kFloat);
  const uint8_t* in = Bytes(src);
  float* dst = out.data_ptr<float>();
  const float scale = static_cast<float>(src.q_scale());
  const float zero = static_cast<float>(src.q_zero_point());
  at::parallel_for(0, src.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] = (static_cast<float>(in[i]) - zero) * scale;
  });
  return Nchw(out);
}

// x padded with real zeros (the zero point): a new quantized NHWC tensor viewed as NCHW.
at::Tensor PadQuantized(const at::Tensor& x, const model::ResolvedPadding& pad) {
  const at::Tensor src = Nhwc(x);
  const int64_t n = src.size(0), h = src.size(1), w = src.size(2), c = src.size(3);
  at::Tensor out = at::_empty_affine_quantized(
      {n, h + pad.top + pad.bottom, w + pad.left + pad.right, c},
      at::device(at::kCPU).dtype(at::kQUInt8), src.q_scale(), src.q_zero_point());
  const at::Tensor in_bytes = at::from_blob(Bytes(src), src.sizes(), at::kByte);
  at::Tensor out_bytes = at::from_blob(Bytes(out), out.sizes(), at::kByte);
  out_bytes.fill_(src.q_zero_point());
  out_bytes.narrow(1, pad.top, h).narrow(2, pad.left, w).copy_(in_bytes);
  return Nchw(out);
}

at::Tensor RunInt8Conv(const Int8Conv& c, const model::Op& op, const model::ResolvedPadding& pad,
                       const at::Tensor& x) {
  at::Tensor q = Quantize(x, c.input);
  if (c.direct != nullptr && c.direct->Accepts(q)) {
    at::Tensor y = c.direct->Run(op, pad, q);
    if (y.defined()) return y;
  }
  if (c.explicit_padding && (pad.top | pad.bottom | pad.left | pad.right) != 0) {
    q = PadQuantized(q, pad);
  }
  return c.relu ? c.packed->apply_relu(q, c.output.scale, c.output.zero_point)
                : c.packed->apply(q, c.output.scale, c.output.zero_point);
}

at::Tensor FromHost(const model::HostTensor& t) {
  return at::from_blob(const_cast<float*>(t.values.data()), t.shape, at::kFloat).clone();
}

at::Tensor RunConv(const model::LayerPlan& plan, int index, const TorchWeights& w,
                   const std::vector<at::Tensor>& tensors) {
  const model::Network& net = plan.network();
  const model::Op& op = net.ops()[index];
  const at::Tensor x = Float(tensors[op.inputs[0]]);
  const at::Tensor residual = op.inputs.size() > 1 ? Float(tensors[op.inputs[1]]) : at::Tensor();
  const OneDnnConv* direct = w.onednn.empty() ? nullptr : w.onednn[op.def].get();
  const WinogradConv* winograd = w.winograd.empty() ? nullptr : w.winograd[op.def].get();
  if (direct != nullptr || winograd != nullptr) {
    const at::Tensor in = x.contiguous(at::MemoryFormat::ChannelsLast);
    // The residual's buffer may become the output when this op is its last reader and no
    // other tensor id holds it.
    const bool reusable = residual.defined() && plan.last_use(op.inputs[1]) == index &&
                          op.inputs[1] != op.inputs[0] && residual.use_count() <= 2 &&
                          residual.storage().use_count() == 1;
    if (winograd != nullptr && winograd->Suits(op, plan.padding(index), in)) {
      return winograd->Run(op, plan.padding(index), in, residual, reusable);
    }
    if (direct != nullptr && direct->Accepts(in)) {
      at::Tensor y = direct->Run(op, plan.padding(index), in, residual, reusable);
      if (y.defined()) return y;
    }
  }
  return ConvOp(op, plan.padding(index), net.convs()[op.def].groups, x, w.conv_weight[op.def],
                w.conv_bias[op.def], residual, w.channels_last);
}

at::Tensor RunOp(const model::LayerPlan& plan, int index, const TorchWeights& w,
                 const std::vector<at::Tensor>& tensors) {
  const model::Network& net = plan.network();
  const model::Op& op = net.ops()[index];
  if (!w.int8.empty() && w.int8[index]) {
    return RunInt8Conv(*w.int8[index], op, plan.padding(index), tensors[op.inputs[0]]);
  }
  // Every other op runs in floating point.
  const at::Tensor x = Float(tensors[op.inputs[0]]);
  switch (op.kind) {
    case model::OpKind::kConv:
      return RunConv(plan, index, w, tensors);
    case model::OpKind::kMaxPool: {
      const model::ResolvedPadding& pad = plan.padding(index);
      if (pad.top == pad.left && pad.symmetric()) {
        return at::max_pool2d(x, {op.kernel, op.kernel}, {op.stride, op.stride},
                              {pad.top, pad.left});
      }
      // Sides that differ: the -inf border written out (max_pool2d pads symmetrically only).
      const at::Tensor padded = at::constant_pad_nd(x, {pad.left, pad.right, pad.top, pad.bottom},
                                                    -std::numeric_limits<double>::infinity())
                                    .contiguous(x.suggest_memory_format());
      return at::max_pool2d(padded, {op.kernel, op.kernel}, {op.stride, op.stride}, {0, 0});
    }
    case model::OpKind::kGroupNorm: {
      const model::NormDef& d = net.norms()[op.def];
      return GroupNorm(x, d.groups, d.eps, w.norm_gamma[op.def], w.norm_beta[op.def],
                       op.act == model::Activation::kRelu);
    }
    case model::OpKind::kUpsampleAdd:
      return UpsampleAdd(x, Float(tensors[op.inputs[1]]), op.nearest);
    case model::OpKind::kConcat: {
      std::vector<at::Tensor> parts;
      for (int t : op.inputs) parts.push_back(Float(tensors[t]));
      return at::cat(parts, 1);
    }
    case model::OpKind::kPadChannels: {
      const int64_t extra = plan.shape(op.output).channels - x.size(1);
      const at::Tensor zeros = at::zeros({x.size(0), extra, x.size(2), x.size(3)},
                                         x.options().memory_format(x.suggest_memory_format()));
      return at::cat({x, zeros}, 1);
    }
    case model::OpKind::kActivation:
      switch (op.act) {
        case model::Activation::kRelu:
          return at::relu(x);
        case model::Activation::kRelu6:
          return at::clamp(x, 0, 6);
        case model::Activation::kNone:
          return x;
      }
  }
  return {};
}

// The raw outputs: each tensor's images as [H, W, C] rows, the outputs side by side per image.
at::Tensor RawOutputs(const model::LayerPlan& plan, const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> parts;
  for (int t : plan.network().raw_outputs()) {
    const at::Tensor y = Float(tensors[t]);
    parts.push_back(y.permute({0, 2, 3, 1}).reshape({y.size(0), -1}).to(at::kFloat));
  }
  return parts.empty() ? at::Tensor() : at::cat(parts, 1).contiguous();
}

// The output stage: per level, NCHW → NHWC rows of (anchor, value); levels concatenated.
PlanOutputs OutputStage(const model::LayerPlan& plan, const std::vector<at::Tensor>& tensors,
                        int64_t n_images) {
  std::vector<at::Tensor> logits, boxes;
  for (const model::OutputLevel& level : plan.network().outputs()) {
    const int64_t a = level.anchors_per_cell;
    const at::Tensor s = Float(tensors[level.score_tensor]);
    const int64_t n = s.size(0);
    if (level.score_tensor == level.box_tensor) {  // one fused head: reorder once
      const at::Tensor y = s.permute({0, 2, 3, 1}).contiguous().view({n, -1, s.size(1)});
      boxes.push_back(y.narrow(2, level.box_channel, 4 * a).reshape({n, -1, 4}));
      logits.push_back(y.narrow(2, level.score_channel, a).reshape({n, -1}));
    } else {
      const at::Tensor b = Float(tensors[level.box_tensor]);
      logits.push_back(s.permute({0, 2, 3, 1}).narrow(3, level.score_channel, a).reshape({n, -1}));
      boxes.push_back(
          b.permute({0, 2, 3, 1}).narrow(3, level.box_channel, 4 * a).reshape({n, -1, 4}));
    }
  }
  if (logits.empty()) return {at::empty({n_images, 0}), at::empty({n_images, 0, 4}), {}};
  return {at::sigmoid(at::cat(logits, 1).to(at::kFloat)), at::cat(boxes, 1).to(at::kFloat), {}};
}

}  // namespace

TorchWeights MakeTorchWeights(const model::Network& net, const model::PreparedWeights& prepared,
                              at::ScalarType dtype, bool channels_last) {
  TorchWeights w;
  w.dtype = dtype;
  w.channels_last = channels_last;
  const auto format = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  for (size_t d = 0; d < prepared.convs.size(); ++d) {
    const model::PreparedConv& c = prepared.convs[d];
    w.conv_weight.push_back(FromHost(c.weight).to(dtype).contiguous(format));
    w.conv_bias.push_back(FromHost(c.bias).to(dtype).contiguous());
    if (channels_last && DirectConvEnabled()) {
      w.onednn.push_back(std::make_shared<const OneDnnConv>(net.convs()[d], w.conv_weight[d],
                                                            w.conv_bias[d], dtype));
    }
    if (channels_last && dtype == at::kFloat && WinogradEnabled()) {
      w.winograd.push_back(WinogradConv::Eligible(net.convs()[d])
                               ? std::make_shared<const WinogradConv>(
                                     net.convs()[d], w.conv_weight[d], w.conv_bias[d])
                               : nullptr);
    }
  }
  for (const model::PreparedNorm& n : prepared.norms) {
    w.norm_gamma.push_back(FromHost(n.gamma));
    w.norm_beta.push_back(FromHost(n.beta));
  }
  return w;
}

void AddInt8Convs(const model::Network& net, const model::ActivationScales& scales,
                  const Int8Choice& choice, TorchWeights* w) {
  static const auto prepack = c10::Dispatcher::singleton()
                                  .findSchemaOrThrow("quantized::conv2d_prepack", "")
                                  .typed<c10::intrusive_ptr<ConvPackedParamsBase<2>>(
                                      at::Tensor, c10::optional<at::Tensor>, c10::List<int64_t>,
                                      c10::List<int64_t>, c10::List<int64_t>, int64_t)>();
  std::vector<bool> output_tensor(net.tensor_channels().size(), false);
  for (const model::OutputLevel& level : net.outputs()) {
    output_tensor[level.score_tensor] = output_tensor[level.box_tensor] = true;
  }
  for (int t : net.raw_outputs()) output_tensor[t] = true;
  w->int8.assign(net.ops().size(), nullptr);
  for (size_t i = 0; i < net.ops().size(); ++i) {
    const model::Op& op = net.ops()[i];
    if (op.kind != model::OpKind::kConv || op.inputs.size() > 1) continue;
    if (choice.first_float && op.inputs[0] == 0) continue;
    if (choice.heads_float && output_tensor[op.output]) continue;
    const model::TensorScale* in = scales.Find(op.inputs[0]);
    const model::TensorScale* out = scales.Find(op.output);
    if (in == nullptr || out == nullptr) continue;
    const model::ConvDef& d = net.convs()[op.def];
    auto c = std::make_shared<Int8Conv>();
    c->relu = op.act != model::Activation::kNone;
    c->input = ParamsOf(*in, false);
    model::TensorScale o = *out;
    if (op.act == model::Activation::kRelu6) o.range = std::min(o.range, 6.0);
    c->output = ParamsOf(o, c->relu);
    // TF SAME with stride > 1 pads asymmetrically on even sizes: pad explicitly at run time.
    // Stride 1 (odd kernels) is symmetric at every size.
    // Fixed sides that differ (an ONNX file's pads) too.
    const model::Padding& p = op.padding;
    const bool uneven_sides =
        p.fixed_sides && (p.top != p.bottom || p.left != p.right || p.top != p.left);
    c->explicit_padding = (p.tf_same && op.stride > 1) || uneven_sides;
    const int64_t pad = c->explicit_padding ? 0
                        : p.tf_same         ? (op.kernel - 1) / 2 * op.dilation
                        : p.fixed_sides     ? p.top
                                            : p.pad;
    const at::Tensor weight = w->conv_weight[op.def].to(at::kFloat).contiguous();
    const at::Tensor channel_scale =
        (weight.abs().amax({1, 2, 3}).clamp_min(1e-12) / 127.0).to(at::kDouble);
    const at::Tensor qweight = at::quantize_per_channel(
        weight, channel_scale, at::zeros({d.out_channels}, at::kLong), 0, at::kQInt8);
    if (c->input.zero_point == 0 && c->output.zero_point == 0 && DirectConvEnabled()) {
      Int8ConvScales direct_scales;
      const at::Tensor s = channel_scale.contiguous();
      direct_scales.weight.assign(s.data_ptr<double>(), s.data_ptr<double>() + s.numel());
      direct_scales.output = c->output.scale;
      c->direct = std::make_shared<const OneDnnConv>(d, weight, w->conv_bias[op.def],
                                                     std::move(direct_scales));
    }
    c->packed = prepack.call(
        qweight, w->conv_bias[op.def].to(at::kFloat), c10::List<int64_t>({op.stride, op.stride}),
        c10::List<int64_t>({pad, pad}), c10::List<int64_t>({op.dilation, op.dilation}), d.groups);
    w->int8[i] = std::move(c);
  }
  // The FP32 copy of a kernel only INT8 ops use is no longer needed (oneDNN keeps its packed
  // INT8 weights and the FP32 bias).
  std::vector<bool> float_use(net.convs().size(), false);
  for (size_t i = 0; i < net.ops().size(); ++i) {
    const model::Op& op = net.ops()[i];
    if (op.kind == model::OpKind::kConv && !w->int8[i]) float_use[op.def] = true;
  }
  for (size_t d = 0; d < float_use.size(); ++d) {
    if (float_use[d]) continue;
    w->conv_weight[d] = at::Tensor();
    if (!w->onednn.empty()) w->onednn[d] = nullptr;
    if (!w->winograd.empty()) w->winograd[d] = nullptr;
  }
}

PlanOutputs RunPlan(const model::LayerPlan& plan, const TorchWeights& weights, at::Tensor input,
                    const TensorObserver* observe) {
  const model::Network& net = plan.network();
  std::vector<at::Tensor> tensors(net.tensor_channels().size());
  const int64_t images = input.size(0);
  tensors[0] = std::move(input);
  if (observe != nullptr) (*observe)(0, tensors[0]);
  const int ops = static_cast<int>(net.ops().size());
  for (int i = 0; i < ops; ++i) {
    const model::Op& op = net.ops()[i];
    tensors[op.output] = RunOp(plan, i, weights, tensors);
    if (observe != nullptr) (*observe)(op.output, tensors[op.output]);
    // Release what no later op reads, so the allocator can reuse it at once.
    for (int in : op.inputs) {
      if (plan.last_use(in) == i) tensors[in].reset();
    }
  }
  PlanOutputs out = OutputStage(plan, tensors, images);
  out.raw = RawOutputs(plan, tensors);
  return out;
}

}  // namespace mogserve::engine::torch_backend
