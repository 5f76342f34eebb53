#include "model/layer_plan.h"

#include <algorithm>

namespace mogserve::model {
namespace {

int OutSize(int in, int before, int after, int kernel, int stride, int dilation) {
  return (in + before + after - dilation * (kernel - 1) - 1) / stride + 1;
}

std::string ShapeText(const TensorShape& s) {
  return std::string("[") + std::to_string(s.channels) + "," + std::to_string(s.height) + "," +
         std::to_string(s.width) + "]";
}

}  // namespace

void TfSamePadding(int in, int kernel, int stride, int* before, int* after) {
  const int out = (in + stride - 1) / stride;
  const int total = std::max((out - 1) * stride + kernel - in, 0);
  *before = total / 2;
  *after = total - total / 2;
}

StatusOr<LayerPlan> LayerPlan::Create(std::shared_ptr<const Network> network, int input_height,
                                      int input_width) {
  const int fixed = network->fixed_input_side();
  if (fixed > 0 && (input_height != fixed || input_width != fixed)) {
    return InvalidArgument(network->name() + " takes " + std::to_string(fixed) + "x" +
                           std::to_string(fixed) + " inputs, not " + std::to_string(input_width) +
                           "x" + std::to_string(input_height));
  }
  if (input_height < 1 || input_width < 1) return InvalidArgument("input size must be >= 1");
  LayerPlan plan;
  plan.network_ = std::move(network);
  plan.input_height_ = input_height;
  plan.input_width_ = input_width;
  MOGSERVE_RETURN_IF_ERROR(plan.Resolve());
  return plan;
}

Status LayerPlan::Resolve() {
  const Network& net = *network_;
  const size_t ops = net.ops().size();
  shapes_.assign(net.tensor_channels().size(), {});
  shapes_[0] = {net.input_channels(), input_height_, input_width_};
  padding_.assign(ops, {});
  macs_.assign(ops, 0);
  last_use_.assign(shapes_.size(), -1);
  for (size_t i = 0; i < ops; ++i) {
    MOGSERVE_RETURN_IF_ERROR(ResolveOp(static_cast<int>(i)));
    total_macs_ += macs_[i];
    for (int in : net.ops()[i].inputs) last_use_[in] = static_cast<int>(i);
  }
  for (const OutputLevel& level : net.outputs()) {
    level_offsets_.push_back(anchors_);
    last_use_[level.score_tensor] = last_use_[level.box_tensor] = static_cast<int>(ops);
    const TensorShape& s = shapes_[level.score_tensor];
    const TensorShape& b = shapes_[level.box_tensor];
    if (s.height != b.height || s.width != b.width) {
      return Internal(net.name() + ": an output level's score and box maps differ in size");
    }
    anchors_ += s.height * s.width * level.anchors_per_cell;
  }
  for (int tensor : net.raw_outputs()) {
    raw_offsets_.push_back(raw_floats_);
    last_use_[tensor] = static_cast<int>(ops);
    raw_floats_ += shapes_[tensor].elements();
  }
  return Status::Ok();
}

Status LayerPlan::ResolveOp(int index) {
  const Op& op = network_->ops()[index];
  const TensorShape& in = shapes_[op.inputs[0]];
  TensorShape& out = shapes_[op.output];
  out = {network_->tensor_channels()[op.output], in.height, in.width};
  ResolvedPadding& pad = padding_[index];
  switch (op.kind) {
    case OpKind::kConv:
    case OpKind::kMaxPool: {
      if (op.padding.tf_same) {
        TfSamePadding(in.height, op.kernel, op.stride, &pad.top, &pad.bottom);
        TfSamePadding(in.width, op.kernel, op.stride, &pad.left, &pad.right);
      } else if (op.padding.fixed_sides) {
        pad = {op.padding.top, op.padding.bottom, op.padding.left, op.padding.right};
      } else {
        pad = {op.padding.pad, op.padding.pad, op.padding.pad, op.padding.pad};
      }
      out.height = OutSize(in.height, pad.top, pad.bottom, op.kernel, op.stride, op.dilation);
      out.width = OutSize(in.width, pad.left, pad.right, op.kernel, op.stride, op.dilation);
      if (op.kind == OpKind::kConv) {
        const ConvDef& d = network_->convs()[op.def];
        macs_[index] = int64_t{d.out_channels} * (d.in_channels / d.groups) * d.kernel * d.kernel *
                       out.height * out.width;
        if (op.inputs.size() > 1) {
          const TensorShape& r = shapes_[op.inputs[1]];
          if (r.height != out.height || r.width != out.width) {
            return InvalidArgument(op.name + ": residual " + ShapeText(r) + " does not match " +
                                   ShapeText(out));
          }
        }
      }
      break;
    }
    case OpKind::kGroupNorm:
    case OpKind::kPadChannels:
    case OpKind::kActivation:
      break;
    case OpKind::kUpsampleAdd: {
      const TensorShape& lateral = shapes_[op.inputs[1]];
      if (2 * in.height < lateral.height || 2 * in.width < lateral.width) {
        return InvalidArgument(op.name + ": the doubled map " + ShapeText(in) +
                               " is smaller than the lateral " + ShapeText(lateral));
      }
      out.height = lateral.height;
      out.width = lateral.width;
      break;
    }
    case OpKind::kConcat:
      for (int t : op.inputs) {
        if (shapes_[t].height != in.height || shapes_[t].width != in.width) {
          return InvalidArgument(op.name + ": concatenated maps differ in size");
        }
      }
      break;
  }
  if (out.height < 1 || out.width < 1) {
    return InvalidArgument(network_->name() + ": input " + std::to_string(input_width_) + "x" +
                           std::to_string(input_height_) + " is too small (" + op.name +
                           " has no output)");
  }
  return Status::Ok();
}

std::vector<int64_t> LayerPlan::raw_bounds() const {
  std::vector<int64_t> bounds = raw_offsets_;
  bounds.push_back(raw_floats_);
  return bounds;
}

std::string LayerPlan::Dump() const {
  std::string text;
  const auto& ops = network_->ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    text += std::to_string(i) + " " + OpKindName(op.kind) + " " + op.name + " " +
            ShapeText(shapes_[op.output]) + " <-";
    for (int in : op.inputs) {
      text += ' ';
      text += std::to_string(in);
    }
    if (op.kind == OpKind::kConv || op.kind == OpKind::kGroupNorm) {
      text += std::string(" ") + ActivationName(op.act);
    }
    if (macs_[i] > 0) text += std::string(" macs ") + std::to_string(macs_[i]);
    text += "\n";
  }
  return text;
}

}  // namespace mogserve::model
