#include "engine/torch/plan_runner.h"

#include "engine/torch/torch_ops.h"

namespace mogserve::engine::torch_backend {
namespace {

at::Tensor FromHost(const model::HostTensor& t) {
  return at::from_blob(const_cast<float*>(t.values.data()), t.shape, at::kFloat).clone();
}

at::Tensor RunOp(const model::LayerPlan& plan, int index, const TorchWeights& w,
                 const std::vector<at::Tensor>& tensors) {
  const model::Network& net = plan.network();
  const model::Op& op = net.ops()[index];
  const at::Tensor& x = tensors[op.inputs[0]];
  switch (op.kind) {
    case model::OpKind::kConv: {
      const at::Tensor residual = op.inputs.size() > 1 ? tensors[op.inputs[1]] : at::Tensor();
      return ConvOp(op, plan.padding(index), net.convs()[op.def].groups, x, w.conv_weight[op.def],
                    w.conv_bias[op.def], residual, w.channels_last);
    }
    case model::OpKind::kMaxPool: {
      const int64_t pad = plan.padding(index).top;
      return at::max_pool2d(x, {op.kernel, op.kernel}, {op.stride, op.stride}, {pad, pad});
    }
    case model::OpKind::kGroupNorm: {
      const model::NormDef& d = net.norms()[op.def];
      return GroupNorm(x, d.groups, d.eps, w.norm_gamma[op.def], w.norm_beta[op.def],
                       op.act == model::Activation::kRelu);
    }
    case model::OpKind::kUpsampleAdd:
      return UpsampleAdd(x, tensors[op.inputs[1]]);
    case model::OpKind::kConcat: {
      std::vector<at::Tensor> parts;
      for (int t : op.inputs) parts.push_back(tensors[t]);
      return at::cat(parts, 1);
    }
  }
  return {};
}

// The output stage: per level, NCHW → NHWC rows of (anchor, value); levels concatenated.
PlanOutputs OutputStage(const model::LayerPlan& plan, const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> logits, boxes;
  for (const model::OutputLevel& level : plan.network().outputs()) {
    const int64_t a = level.anchors_per_cell;
    const at::Tensor& s = tensors[level.score_tensor];
    const int64_t n = s.size(0);
    if (level.score_tensor == level.box_tensor) {  // one fused head: reorder once
      const at::Tensor y = s.permute({0, 2, 3, 1}).contiguous().view({n, -1, s.size(1)});
      boxes.push_back(y.narrow(2, level.box_channel, 4 * a).reshape({n, -1, 4}));
      logits.push_back(y.narrow(2, level.score_channel, a).reshape({n, -1}));
    } else {
      const at::Tensor& b = tensors[level.box_tensor];
      logits.push_back(s.permute({0, 2, 3, 1}).narrow(3, level.score_channel, a).reshape({n, -1}));
      boxes.push_back(
          b.permute({0, 2, 3, 1}).narrow(3, level.box_channel, 4 * a).reshape({n, -1, 4}));
    }
  }
  return {at::sigmoid(at::cat(logits, 1).to(at::kFloat)), at::cat(boxes, 1).to(at::kFloat)};
}

}  // namespace

TorchWeights MakeTorchWeights(const model::PreparedWeights& prepared, at::ScalarType dtype,
                              bool channels_last) {
  TorchWeights w;
  w.dtype = dtype;
  w.channels_last = channels_last;
  const auto format = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  for (const model::PreparedConv& c : prepared.convs) {
    w.conv_weight.push_back(FromHost(c.weight).to(dtype).contiguous(format));
    w.conv_bias.push_back(FromHost(c.bias).to(dtype).contiguous());
  }
  for (const model::PreparedNorm& n : prepared.norms) {
    w.norm_gamma.push_back(FromHost(n.gamma));
    w.norm_beta.push_back(FromHost(n.beta));
  }
  return w;
}

PlanOutputs RunPlan(const model::LayerPlan& plan, const TorchWeights& weights, at::Tensor input) {
  const model::Network& net = plan.network();
  std::vector<at::Tensor> tensors(net.tensor_channels().size());
  tensors[0] = std::move(input);
  const int ops = static_cast<int>(net.ops().size());
  for (int i = 0; i < ops; ++i) {
    const model::Op& op = net.ops()[i];
    tensors[op.output] = RunOp(plan, i, weights, tensors);
    // Release what no later op reads, so the allocator can reuse it at once.
    for (int in : op.inputs) {
      if (plan.last_use(in) == i) tensors[in].reset();
    }
  }
  return OutputStage(plan, tensors);
}

}  // namespace mogserve::engine::torch_backend
