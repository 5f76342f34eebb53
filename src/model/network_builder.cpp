#include "model/network_builder.h"

#include <cstdio>
#include <cstdlib>

namespace mogserve::model {

NetworkBuilder::NetworkBuilder(std::string name) : net_(std::make_shared<Network>()) {
  net_->name_ = std::move(name);
  NewTensor(3, "input");
}

int NetworkBuilder::NewTensor(int channels, std::string name) {
  net_->tensor_channels_.push_back(channels);
  net_->tensor_names_.push_back(std::move(name));
  return static_cast<int>(net_->tensor_channels_.size()) - 1;
}

void NetworkBuilder::Fail(const std::string& what) {
  if (error_.empty()) error_ = net_->name_ + ": " + what;
}

int NetworkBuilder::AddOp(Op op, int out_channels) {
  std::string name = op.name.empty() ? std::string(OpKindName(op.kind)) : op.name;
  op.output = NewTensor(out_channels, name);
  op.name = std::move(name);
  net_->ops_.push_back(std::move(op));
  return net_->ops_.back().output;
}

int NetworkBuilder::AddTorchConv(const std::string& prefix, int out, int in, int kernel, bool bias,
                                 const std::string& bn_prefix, int groups) {
  ConvDef def;
  def.name = prefix;
  def.out_channels = out;
  def.in_channels = in;
  def.kernel = kernel;
  def.groups = groups;
  def.parts.push_back(
      {KernelLayout::kOihw, prefix + ".weight", bias ? prefix + ".bias" : "", out, 0, 1, out});
  if (!bn_prefix.empty()) {
    def.batch_norm = BatchNormKeys{bn_prefix + ".weight",
                                   bn_prefix + ".bias",
                                   bn_prefix + ".running_mean",
                                   bn_prefix + ".running_var",
                                   bn_prefix + ".num_batches_tracked",
                                   1e-5};
  }
  return AddConvDef(std::move(def));
}

int NetworkBuilder::AddConvDef(ConvDef def) {
  int rows = 0;
  for (const WeightPart& p : def.parts) rows += p.rows;
  if (rows != def.out_channels) Fail("conv " + def.name + ": parts do not add up to its outputs");
  if (def.groups < 1 || def.in_channels % def.groups != 0) {
    Fail("conv " + def.name + ": input channels not divisible by groups");
  }
  net_->convs_.push_back(std::move(def));
  return static_cast<int>(net_->convs_.size()) - 1;
}

int NetworkBuilder::AddNormDef(NormDef def) {
  if (def.groups < 1 || def.channels % def.groups != 0) {
    Fail("norm " + def.name + ": channels not divisible by groups");
  }
  net_->norms_.push_back(std::move(def));
  return static_cast<int>(net_->norms_.size()) - 1;
}

void NetworkBuilder::AddUnusedTorchConv(const std::string& prefix, int out, int in, int kernel,
                                        bool bias) {
  AddOtherKey({prefix + ".weight", {out, in, kernel, kernel}, false});
  if (bias) AddOtherKey({prefix + ".bias", {out}, false});
}

int NetworkBuilder::Conv(int def, int x, const ConvArgs& args, const std::string& name) {
  const ConvDef& d = net_->convs_[def];
  if (channels(x) != d.in_channels) {
    Fail("conv " + d.name + " expects " + std::to_string(d.in_channels) + " input channels, got " +
         std::to_string(channels(x)));
  }
  Op op;
  op.kind = OpKind::kConv;
  op.name = name.empty() ? d.name : name;
  op.inputs = {x};
  if (args.residual >= 0) {
    if (channels(args.residual) != d.out_channels) Fail("conv " + d.name + ": residual channels");
    op.inputs.push_back(args.residual);
  }
  op.def = def;
  op.act = args.act;
  op.stride = args.stride;
  op.dilation = args.dilation;
  op.padding = args.padding;
  op.kernel = d.kernel;
  return AddOp(std::move(op), d.out_channels);
}

int NetworkBuilder::MaxPool(int x, int kernel, int stride, int pad) {
  Padding padding;
  padding.pad = pad;
  return MaxPool(x, kernel, stride, padding);
}

int NetworkBuilder::MaxPool(int x, int kernel, int stride, const Padding& padding,
                            const std::string& name) {
  Op op;
  op.kind = OpKind::kMaxPool;
  op.name = name;
  op.inputs = {x};
  op.kernel = kernel;
  op.stride = stride;
  op.padding = padding;
  return AddOp(std::move(op), channels(x));
}

int NetworkBuilder::GroupNorm(int def, int x, Activation act) {
  const NormDef& d = net_->norms_[def];
  if (channels(x) != d.channels) Fail("group norm " + d.name + ": channels");
  Op op;
  op.kind = OpKind::kGroupNorm;
  op.name = d.name;
  op.inputs = {x};
  op.def = def;
  op.act = act;
  return AddOp(std::move(op), d.channels);
}

int NetworkBuilder::UpsampleAdd(int top, int lateral, const std::string& name, bool nearest) {
  if (channels(top) != channels(lateral)) Fail("upsample-add " + name + ": channels");
  Op op;
  op.kind = OpKind::kUpsampleAdd;
  op.name = name;
  op.nearest = nearest;
  op.inputs = {top, lateral};
  return AddOp(std::move(op), channels(lateral));
}

int NetworkBuilder::Concat(const std::vector<int>& parts) {
  Op op;
  op.kind = OpKind::kConcat;
  op.inputs = parts;
  int total = 0;
  for (int p : parts) total += channels(p);
  return AddOp(std::move(op), total);
}

int NetworkBuilder::PadChannels(int x, int channels, const std::string& name) {
  if (channels <= this->channels(x)) Fail("pad-channels " + name + ": no channels added");
  Op op;
  op.kind = OpKind::kPadChannels;
  op.name = name;
  op.inputs = {x};
  return AddOp(std::move(op), channels);
}

int NetworkBuilder::Activate(int x, Activation act, const std::string& name) {
  if (act == Activation::kNone) Fail("activation " + name + ": none");
  Op op;
  op.kind = OpKind::kActivation;
  op.name = name;
  op.inputs = {x};
  op.act = act;
  return AddOp(std::move(op), channels(x));
}

StatusOr<std::shared_ptr<const Network>> NetworkBuilder::Finish() {
  const int tensors = static_cast<int>(net_->tensor_channels_.size());
  for (int t : net_->raw_outputs_) {
    if (t <= 0 || t >= tensors) Fail("a raw output names tensor " + std::to_string(t));
  }
  for (const OutputLevel& l : net_->outputs_) {
    if (l.score_tensor <= 0 || l.score_tensor >= tensors || l.box_tensor <= 0 ||
        l.box_tensor >= tensors) {
      Fail("an output level names a tensor the network does not have");
      break;
    }
    if (l.score_channel + l.anchors_per_cell > channels(l.score_tensor) ||
        l.box_channel + 4 * l.anchors_per_cell > channels(l.box_tensor)) {
      Fail("an output level reads channels its tensors do not have");
    }
  }
  if (!error_.empty()) return Internal(error_);
  return std::shared_ptr<const Network>(std::move(net_));
}

std::shared_ptr<const Network> NetworkBuilder::FinishOrAbort() {
  StatusOr<std::shared_ptr<const Network>> net = Finish();
  if (!net.ok()) {
    std::fprintf(stderr, "bug: %s\n", net.status().message().c_str());
    std::abort();
  }
  return *net;
}

}  // namespace mogserve::model
