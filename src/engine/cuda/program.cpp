#include "engine/cuda/program.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/enum_names.h"

namespace mogserve::engine::cuda {
namespace {

NhwcShape DeviceShape(const model::LayerPlan& plan, int tensor, int batch) {
  const model::TensorShape& s = plan.shape(tensor);
  return {batch, s.height, s.width, DeviceChannels(s.channels)};
}

int ActivationCode(model::Activation act) {
  switch (act) {
    case model::Activation::kNone:
      return kActNone;
    case model::Activation::kRelu:
      return kActRelu;
    case model::Activation::kRelu6:
      return kActRelu6;
  }
  return kActNone;
}

class Lowering {
 public:
  Lowering(const model::LayerPlan& plan, int batch, Program& program)
      : plan_(plan), batch_(batch), program_(program) {}

  Status Op(int index) {
    const model::Op& op = plan_.network().ops()[index];
    switch (op.kind) {
      case model::OpKind::kConv:
        return Conv(index);
      case model::OpKind::kMaxPool: {
        Step s = Base(StepKind::kMaxPool, index);
        s.kernel = op.kernel;
        s.stride = op.stride;
        s.pad_top = plan_.padding(index).top;
        s.pad_left = plan_.padding(index).left;
        program_.steps.push_back(s);
        return Status::Ok();
      }
      case model::OpKind::kGroupNorm: {
        const model::NormDef& def = plan_.network().norms()[op.def];
        Step s = Base(StepKind::kGroupNormStats, index);
        s.def = op.def;
        s.channels = def.channels;
        s.groups = def.groups;
        s.eps = static_cast<float>(def.eps);
        s.out = -1;
        program_.steps.push_back(s);
        s.kind = StepKind::kGroupNormApply;
        s.out = Offset(op.output);
        s.act = ActivationCode(op.act);
        program_.steps.push_back(s);
        program_.max_norm_groups = std::max(program_.max_norm_groups, def.groups);
        return Status::Ok();
      }
      case model::OpKind::kUpsampleAdd: {
        Step s = Base(StepKind::kUpsampleAdd, index);
        s.in2 = Offset(op.inputs[1]);
        s.nearest = op.nearest;
        program_.steps.push_back(s);
        return Status::Ok();
      }
      case model::OpKind::kConcat:
      case model::OpKind::kPadChannels:  // one input, the rest zeros
        return Concat(index);
      case model::OpKind::kActivation:
        return Activation(index);
    }
    return InvalidArgument("op " + op.name + ": a kind the CUDA lowering does not know");
  }

  void OutputStage() {
    const auto& levels = plan_.network().outputs();
    for (size_t l = 0; l < levels.size(); ++l) {
      const model::OutputLevel& level = levels[l];
      Step s;
      s.kind = StepKind::kOutputLevel;
      s.in = Offset(level.score_tensor);
      s.in_shape = DeviceShape(plan_, level.score_tensor, batch_);
      s.in2 = Offset(level.box_tensor);
      s.in2_shape = DeviceShape(plan_, level.box_tensor, batch_);
      s.score_channel = level.score_channel;
      s.box_channel = level.box_channel;
      s.anchors_per_cell = level.anchors_per_cell;
      s.level_offset = plan_.level_offset(static_cast<int>(l));
      program_.steps.push_back(s);
    }
    const auto& raw = plan_.network().raw_outputs();
    for (size_t r = 0; r < raw.size(); ++r) {
      Step s;
      s.kind = StepKind::kRawOutput;
      s.in = Offset(raw[r]);
      s.in_shape = DeviceShape(plan_, raw[r], batch_);
      s.channels = plan_.shape(raw[r]).channels;
      s.raw_offset = plan_.raw_offset(static_cast<int>(r));
      program_.steps.push_back(s);
    }
  }

 private:
  int64_t Offset(int tensor) const { return program_.arena.tensor_offsets[tensor]; }

  // A step reading the op's first input and writing its output.
  Step Base(StepKind kind, int index) const {
    const model::Op& op = plan_.network().ops()[index];
    Step s;
    s.kind = kind;
    s.op = index;
    s.in = Offset(op.inputs[0]);
    s.in_shape = DeviceShape(plan_, op.inputs[0], batch_);
    s.out = Offset(op.output);
    s.out_shape = DeviceShape(plan_, op.output, batch_);
    return s;
  }

  Status Conv(int index) {
    const model::Op& op = plan_.network().ops()[index];
    MOGSERVE_ASSIGN_OR_RETURN(ConvGeometry g, ConvGeometryOf(plan_, index, batch_));
    Step s = Base(StepKind::kConv, index);
    if (!g.padding.symmetric()) {
      // The zero border written out: the convolution then reads a padded copy and pads nothing.
      Step pad = Base(StepKind::kPad, index);
      pad.out = program_.arena.op_scratch_offsets[index];
      pad.pad_top = g.padding.top;
      pad.pad_left = g.padding.left;
      pad.out_shape = {batch_, g.in_h + g.padding.top + g.padding.bottom,
                       g.in_w + g.padding.left + g.padding.right, s.in_shape.c};
      program_.steps.push_back(pad);
      s.in = pad.out;
      s.in_shape = pad.out_shape;
      g.in_h = pad.out_shape.h;
      g.in_w = pad.out_shape.w;
      g.padding = {};
    }
    if (g.residual) s.in2 = Offset(op.inputs[1]);
    s.def = op.def;
    const bool relu6 = g.act == model::Activation::kRelu6;
    if (relu6) g.act = model::Activation::kRelu;
    s.conv = g;
    program_.steps.push_back(s);
    if (relu6) {
      Step clamp;
      clamp.kind = StepKind::kClamp;
      clamp.op = index;
      clamp.out = s.out;
      clamp.out_shape = s.out_shape;
      clamp.lo = 0.0f;
      clamp.hi = 6.0f;
      program_.steps.push_back(clamp);
    }
    return Status::Ok();
  }

  // act(x) as a copy (which also zeroes the padding channels) clamped in place: ReLU to
  // [0, +inf), ReLU6 to [0, 6]; the clamp maps the zeros to zeros.
  Status Activation(int index) {
    const model::Op& op = plan_.network().ops()[index];
    if (op.act == model::Activation::kNone) {
      return InvalidArgument("activation " + op.name + ": none");
    }
    MOGSERVE_RETURN_IF_ERROR(Concat(index));
    Step clamp;
    clamp.kind = StepKind::kClamp;
    clamp.op = index;
    clamp.out = Offset(op.output);
    clamp.out_shape = DeviceShape(plan_, op.output, batch_);
    clamp.lo = 0.0f;
    clamp.hi = op.act == model::Activation::kRelu6 ? 6.0f : std::numeric_limits<float>::infinity();
    program_.steps.push_back(clamp);
    return Status::Ok();
  }

  Status Concat(int index) {
    const model::Op& op = plan_.network().ops()[index];
    int offset = 0;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      Step s = Base(StepKind::kCopyChannels, index);
      s.in = Offset(op.inputs[k]);
      s.in_shape = DeviceShape(plan_, op.inputs[k], batch_);
      s.channels = plan_.shape(op.inputs[k]).channels;
      s.channel_offset = offset;
      s.last_input = k + 1 == op.inputs.size();
      offset += s.channels;
      program_.steps.push_back(s);
    }
    if (op.kind == model::OpKind::kConcat && offset != plan_.shape(op.output).channels) {
      return InvalidArgument("concat " + op.name + ": inputs add up to " + std::to_string(offset) +
                             " channels, the output has " +
                             std::to_string(plan_.shape(op.output).channels));
    }
    return Status::Ok();
  }

  const model::LayerPlan& plan_;
  const int batch_;
  Program& program_;
};

// Per op: the bytes of the padded copy an asymmetrically padded convolution reads (0: none).
std::vector<int64_t> ScratchBytes(const model::LayerPlan& plan, int batch, int element_bytes) {
  const auto& ops = plan.network().ops();
  std::vector<int64_t> bytes(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    const model::ResolvedPadding& p = plan.padding(static_cast<int>(i));
    if (ops[i].kind != model::OpKind::kConv || p.symmetric()) continue;
    const model::TensorShape& in = plan.shape(ops[i].inputs[0]);
    bytes[i] = int64_t{batch} * (in.height + p.top + p.bottom) * (in.width + p.left + p.right) *
               DeviceChannels(in.channels) * element_bytes;
  }
  return bytes;
}

}  // namespace

StatusOr<ConvGeometry> ConvGeometryOf(const model::LayerPlan& plan, int op, int batch) {
  const auto& ops = plan.network().ops();
  if (op < 0 || op >= static_cast<int>(ops.size()) || ops[op].kind != model::OpKind::kConv) {
    return InvalidArgument("op " + std::to_string(op) + " is not a convolution of the plan");
  }
  if (batch < 1) return InvalidArgument("batch must be >= 1, not " + std::to_string(batch));
  const model::Op& o = ops[op];
  const model::ConvDef& def = plan.network().convs()[o.def];
  const model::TensorShape& in = plan.shape(o.inputs[0]);
  const model::TensorShape& out = plan.shape(o.output);
  ConvGeometry g;
  g.batch = batch;
  g.groups = def.groups;
  // Grouped convolutions keep their channels (device_weights.cpp requires multiples of 8),
  // except depthwise ones: one group per device channel, the padding ones zero.
  g.in_channels = def.groups == 1 ? DeviceChannels(in.channels) : in.channels;
  g.out_channels = def.groups == 1 ? DeviceChannels(out.channels) : out.channels;
  if (IsDepthwise(def)) g.in_channels = g.out_channels = g.groups = DeviceChannels(out.channels);
  g.in_h = in.height;
  g.in_w = in.width;
  g.out_h = out.height;
  g.out_w = out.width;
  g.kernel = def.kernel;
  g.stride = o.stride;
  g.dilation = o.dilation;
  g.padding = plan.padding(op);
  g.residual = o.inputs.size() > 1;
  g.act = o.act;
  return g;
}

constexpr EnumNames<StepKind, StepKind::kRawOutput> kStepKindNames{
    {"preprocess", "pad", "conv", "clamp", "max-pool", "group-norm-stats", "group-norm-apply",
     "upsample-add", "copy-channels", "output-level", "raw-output"}};

const char* StepKindName(StepKind kind) {
  return NameOf(kStepKindNames, kind, "?");
}

std::string ShapeText(const NhwcShape& s) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "[" + string&&.
  std::string text = "[";
  for (int v : {s.n, s.h, s.w, s.c}) {
    text += std::to_string(v);
    text += ',';
  }
  text.back() = ']';
  return text;
}

PreprocessParams PreprocessParamsOf(const model::InputNormalization& normalization) {
  PreprocessParams p;
  for (int c = 0; c < 3; ++c) {
    p.mean[c] = static_cast<float>(normalization.mean[c]);
    p.divisor[c] = static_cast<float>(normalization.divisor[c]);
  }
  p.zero_padding = normalization.zero_padding;
  return p;
}

StatusOr<Program> BuildProgram(const model::LayerPlan& plan, int batch, StorageType type) {
  if (batch < 1) return InvalidArgument("batch must be >= 1, not " + std::to_string(batch));
  Program program;
  program.batch = batch;
  program.height = plan.input_height();
  program.width = plan.input_width();
  program.type = type;
  program.anchors = plan.anchors();
  program.raw_floats = plan.raw_floats();
  program.raw_bounds = plan.raw_bounds();
  program.preprocess = PreprocessParamsOf(plan.network().normalization());
  const int element_bytes = StorageBytes(type);
  const std::vector<int64_t> scratch = ScratchBytes(plan, batch, element_bytes);
  program.arena = PlanArena(plan, batch, element_bytes, {}, scratch);

  Step pre;
  pre.kind = StepKind::kPreprocess;
  const int input = plan.network().input_tensor();
  pre.out = program.arena.tensor_offsets[input];
  pre.out_shape = DeviceShape(plan, input, batch);
  program.steps.push_back(pre);
  Lowering lowering(plan, batch, program);
  for (int i = 0; i < static_cast<int>(plan.network().ops().size()); ++i) {
    MOGSERVE_RETURN_IF_ERROR(lowering.Op(i));
  }
  lowering.OutputStage();
  return program;
}

}  // namespace mogserve::engine::cuda
