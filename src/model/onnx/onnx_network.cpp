#include "model/onnx/onnx_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "model/network_builder.h"

namespace mogserve::model::onnx {
namespace {

// A convolution read but not yet written to the plan: what follows it (BatchNormalization, a
// residual Add, Relu/Clip) may still fuse into it.
struct PendingConv {
  ConvDef def;
  int x = -1;
  NetworkBuilder::ConvArgs args;
  std::string name;
  int node = -1;  // the last node fused into it
};

// A Resize (or Upsample) read but not written: the plan doubles a map only inside the sum that
// reads it (an FPN's top-down path), so the Add that follows makes the op.
struct PendingUpsample {
  std::string top;  // the value resized
  bool nearest = false;
};

// The source index ONNX's Resize reads for destination index `dst` along an axis of `in` values
// resized to `out` by `scale` (Resize's coordinate transformation, then its nearest rounding).
double ResizeSource(const std::string& transform, int64_t dst, int64_t in, int64_t out,
                    double scale) {
  if (transform == "align_corners") {
    return out == 1 ? 0.0 : static_cast<double>(dst) * (in - 1) / (out - 1);
  }
  if (transform == "asymmetric") return dst / scale;
  if (transform == "pytorch_half_pixel" && out == 1) return 0.0;
  return (dst + 0.5) / scale - 0.5;  // half_pixel, pytorch_half_pixel
}

int64_t NearestIndex(const std::string& rounding, double x, int64_t in) {
  double i = 0;
  if (rounding == "floor") {
    i = std::floor(x);
  } else if (rounding == "ceil") {
    i = std::ceil(x);
  } else if (rounding == "round_prefer_ceil") {
    i = std::floor(x + 0.5);
  } else {  // round_prefer_floor
    i = x == std::floor(x) + 0.5 ? std::floor(x) : std::round(x);
  }
  return std::clamp<int64_t>(static_cast<int64_t>(i), 0, in - 1);
}

class Importer {
 public:
  Importer(const StaticGraph& graph, const std::string& name, const ImportOptions& options)
      : g_(graph), b_(name), options_(options) {}

  StatusOr<ImportedNetwork> Run(const InputNormalization& normalization) {
    b_.SetNormalization(normalization);
    const ImageInput& in = g_.input();
    if (!in.dynamic_size() && in.height == in.width && !options_.any_size) {
      b_.SetFixedInputSide(static_cast<int>(in.height));
    }
    if (options_.bgr_input) MOGSERVE_RETURN_IF_ERROR(CheckBgrReaders());
    // An NHWC input is the plan's input only through its Transpose (0, 3, 1, 2) (Map).
    if (!in.channels_last) tensor_[in.name] = b_.input();
    const Graph& graph = g_.graph();
    for (int n : g_.live_nodes()) {
      for (const std::string& v : graph.nodes[n].inputs) ++readers_[v];
      for (const std::string& v : graph.nodes[n].outputs) producer_[v] = n;
    }
    for (const ValueInfo& out : graph.outputs) ++readers_[out.name];
    std::vector<std::vector<std::string>> levels(graph.outputs.size());
    std::vector<OutputSource> sources(graph.outputs.size());
    for (size_t o = 0; o < graph.outputs.size(); ++o) {
      sources[o].name = graph.outputs[o].name;
      MOGSERVE_RETURN_IF_ERROR(TraceOutput(sources[o].name, &sources[o], &levels[o]));
    }
    for (int n : g_.live_nodes()) {
      if (chain_.count(n) == 0) MOGSERVE_RETURN_IF_ERROR(Map(n));
    }
    ImportedNetwork result;
    int raw = 0;
    for (size_t o = 0; o < sources.size(); ++o) {
      sources[o].first_raw = raw;
      sources[o].raw_count = static_cast<int>(levels[o].size());
      for (const std::string& level : levels[o]) {
        MOGSERVE_ASSIGN_OR_RETURN(const int t, Resolve(level, "the output " + sources[o].name));
        b_.AddRawOutput(t);
        ++raw;
      }
    }
    MOGSERVE_ASSIGN_OR_RETURN(result.network, b_.Finish());
    result.weights = std::move(weights_);
    result.outputs = std::move(sources);
    return result;
  }

 private:
  const Node& NodeAt(int n) const { return g_.graph().nodes[n]; }
  const std::string& File() const { return g_.graph().file; }

  Status Refuse(int n, const std::string& why) const {
    const Node& node = NodeAt(n);
    return Unsupported(File() + ": node '" + node.name + "' (" + node.op_type + ") " + why);
  }

  // A B, G, R input is taken by reversing the kernels' input channels: only ungrouped
  // convolutions may read it.
  Status CheckBgrReaders() const {
    const ImageInput& in = g_.input();
    if (in.channels_last) {
      return Unsupported(File() + ": a B, G, R input in [N, H, W, 3] layout is not handled");
    }
    for (int n : g_.live_nodes()) {
      const Node& node = NodeAt(n);
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (node.inputs[i] != in.name) continue;
        if (node.op_type != "Conv" || i != 0 || node.Int("group", 1) != 1) {
          return Refuse(n, "reads the B, G, R input; only ungrouped convolutions may");
        }
      }
    }
    return Status::Ok();
  }

  // The producing live node of `value`, or -1 (the input, a constant).
  int Producer(const std::string& value) const {
    auto it = producer_.find(value);
    return it == producer_.end() ? -1 : it->second;
  }
  const std::vector<int64_t>& ShapeOf(const std::string& value) const {
    return g_.value(value).shape;
  }
  const Tensor* ConstantOf(const std::string& value) const {
    if (value.empty() || !g_.has_value(value)) return nullptr;
    const StaticValue& v = g_.value(value);
    return v.constant ? &*v.constant : nullptr;
  }

  // --- The outputs ---

  // Follows graph output `value` back to the tensors its rows come from.
  Status TraceOutput(const std::string& value, OutputSource* source,
                     std::vector<std::string>* levels) {
    const int n = Producer(value);
    const std::string what = File() + ": output '" + source->name + "'";
    if (n < 0) return Unsupported(what + " is not computed from the image");
    const Node& node = NodeAt(n);
    const std::vector<int64_t>& shape = ShapeOf(value);
    if (node.op_type == "Sigmoid" || node.op_type == "Softmax") {
      if (source->activation != OutputActivation::kNone) {
        return Refuse(n, "is a second activation on the way to output '" + source->name + "'");
      }
      if (node.op_type == "Softmax") {
        const int64_t rank = static_cast<int64_t>(shape.size());
        int64_t axis = node.Int("axis", g_.graph().opset >= 13 ? -1 : 1);
        if (axis < 0) axis += rank;
        if (axis != rank - 1) {
          return Refuse(n, "is a softmax over axis " + std::to_string(axis) +
                               "; the plan's outputs take it over the last axis only");
        }
      }
      source->activation =
          node.op_type == "Sigmoid" ? OutputActivation::kSigmoid : OutputActivation::kSoftmax;
      chain_.insert(n);
      return TraceOutput(node.inputs[0], source, levels);
    }
    if (node.op_type == "Concat") {
      const int64_t rank = static_cast<int64_t>(shape.size());
      int64_t axis = node.Int("axis", 0);
      if (axis < 0) axis += rank;
      if (rank < 2 || axis != rank - 2) {
        return Refuse(n, "concatenates output '" + source->name + "' along axis " +
                             std::to_string(axis) + ", not its anchor axis " +
                             std::to_string(rank - 2));
      }
      chain_.insert(n);
      for (const std::string& in : node.inputs) {
        MOGSERVE_RETURN_IF_ERROR(TraceOutput(in, source, levels));
      }
      return Status::Ok();
    }
    if (node.op_type == "Reshape") return TraceLevel(n, source, levels);
    return Refuse(n, "makes output '" + source->name +
                         "'; an output must be [Sigmoid | Softmax] of [Concat of] Reshape of "
                         "Transpose (0, 2, 3, 1) of a network tensor");
  }

  // Reshape (n) of Transpose (0, 2, 3, 1) [of Sigmoid] of an NCHW tensor: one level, its
  // rows the tensor's pixels × anchors.
  Status TraceLevel(int n, OutputSource* source, std::vector<std::string>* levels) {
    const Node& reshape = NodeAt(n);
    const std::vector<int64_t>& out = ShapeOf(reshape.outputs[0]);
    const int t = Producer(reshape.inputs[0]);
    if (t < 0 || NodeAt(t).op_type != "Transpose" ||
        NodeAt(t).Ints("perm") != std::vector<int64_t>{0, 2, 3, 1}) {
      return Refuse(n, "reshapes what is not a Transpose (0, 2, 3, 1) of a network tensor");
    }
    std::string level = NodeAt(t).inputs[0];
    chain_.insert(n);
    chain_.insert(t);
    const int act = Producer(level);
    if (act >= 0 && NodeAt(act).op_type == "Sigmoid" && readers_[level] == 1) {
      if (source->activation != OutputActivation::kNone) {
        return Refuse(act, "is a second activation on the way to output '" + source->name + "'");
      }
      source->activation = OutputActivation::kSigmoid;
      chain_.insert(act);
      level = NodeAt(act).inputs[0];
    }
    const std::vector<int64_t>& in = ShapeOf(level);
    if (in.size() != 4 || out.empty()) {
      return Refuse(n, "does not reshape a 4-D map into rows");
    }
    const int64_t width = out.back();
    if (width < 1 || in[1] % width != 0) {
      return Refuse(n, "makes rows of " + std::to_string(width) + " values from " +
                           std::to_string(in[1]) +
                           " channels, which is not a whole number of "
                           "anchors");
    }
    if (source->width != 0 && source->width != width) {
      return Refuse(n, "makes rows of " + std::to_string(width) + " values where output '" +
                           source->name + "' has " + std::to_string(source->width));
    }
    source->width = static_cast<int>(width);
    levels->push_back(level);
    return Status::Ok();
  }

  // --- The body ---

  // The plan tensor of `value`, writing a pending convolution out first.
  StatusOr<int> Resolve(const std::string& value, const std::string& reader) {
    if (auto it = tensor_.find(value); it != tensor_.end()) return it->second;
    if (auto it = pending_.find(value); it != pending_.end()) {
      PendingConv p = std::move(it->second);
      pending_.erase(it);
      const int def = b_.AddConvDef(std::move(p.def));
      const int t = b_.Conv(def, p.x, p.args, p.name);
      tensor_[value] = t;
      return t;
    }
    if (pending_upsample_.count(value) > 0) {
      return Unsupported(File() + ": " + reader + " reads the resized map '" + value +
                         "'; the plan resizes only inside a sum (an Add of the resized map and "
                         "a map of its shape)");
    }
    return Unsupported(File() + ": " + reader + " reads '" + value +
                       "', which is not a network tensor (a load-time constant where the plan "
                       "takes a tensor, or a value of a node that is not mapped)");
  }

  // The pending convolution `value` when `n` is its only reader and `ok` accepts it.
  template <typename Fn>
  PendingConv* Fusable(const std::string& value, Fn ok) {
    auto it = pending_.find(value);
    if (it == pending_.end() || readers_[value] != 1 || !ok(it->second)) return nullptr;
    return &it->second;
  }

  // Moves pending convolution `from` (now fused with node n) to value `to`.
  void Rename(const std::string& from, const std::string& to, int n) {
    PendingConv p = std::move(pending_.at(from));
    pending_.erase(from);
    p.node = n;
    pending_[to] = std::move(p);
  }

  Status Map(int n) {
    const Node& node = NodeAt(n);
    const std::string& op = node.op_type;
    const std::string reader = "node '" + node.name + "' (" + op + ")";
    if (op == "Conv") return Conv(n);
    if (op == "Identity" || op == "Dropout") {
      MOGSERVE_ASSIGN_OR_RETURN(tensor_[node.outputs[0]], Resolve(node.inputs[0], reader));
      return Status::Ok();
    }
    if (op == "Transpose" && node.inputs[0] == g_.input().name && g_.input().channels_last &&
        node.Ints("perm") == std::vector<int64_t>{0, 3, 1, 2}) {
      tensor_[node.outputs[0]] = b_.input();
      return Status::Ok();
    }
    if (op == "BatchNormalization") return BatchNorm(n);
    if (op == "Add") return Add(n);
    if (op == "Relu" || op == "Clip") return Activate(n);
    if (op == "MaxPool") return MaxPool(n);
    if (op == "Concat") return Concat(n);
    if (op == "Resize" || op == "Upsample") return Resize(n);
    return Refuse(n,
                  "is not mapped onto the network plan; mapped: Conv (with BatchNormalization, "
                  "a residual Add, Relu, Clip), MaxPool, Concat of channels, a x2 Resize or "
                  "Upsample added to a map (nearest or bilinear), Identity, Dropout, and the "
                  "output chains");
  }

  // Resize/Upsample by 2 into a sum: the plan's upsample-add takes nearest (source dst / 2,
  // rounded down) and bilinear (half-pixel, exactly x2). The node's own rule is evaluated at
  // every destination index and must give the plan's.
  Status Resize(int n) {
    const Node& node = NodeAt(n);
    const std::vector<int64_t>& in = ShapeOf(node.inputs[0]);
    const std::vector<int64_t>& out = ShapeOf(node.outputs[0]);
    if (readers_[node.outputs[0]] != 1) {
      return Refuse(n, "is read by more than one node; the plan resizes only inside a sum");
    }
    const bool opset11 = node.op_type == "Resize" && g_.graph().opset >= 11;
    const std::string mode = node.String("mode", "nearest");
    const std::string transform =
        opset11 ? node.String("coordinate_transformation_mode", "half_pixel") : "asymmetric";
    const std::string rounding =
        opset11 ? node.String("nearest_mode", "round_prefer_floor") : "floor";
    // The scales the node divides by: given ones, else out / in.
    double scale[2] = {static_cast<double>(out[2]) / in[2], static_cast<double>(out[3]) / in[3]};
    const size_t scales_at = opset11 ? 2 : 1;
    if (const Tensor* s = ConstantOf(node.inputs.size() > scales_at ? node.inputs[scales_at] : "");
        s != nullptr && s->elements() == 4) {
      scale[0] = s->floats[2];
      scale[1] = s->floats[3];
    } else if (const Attribute* a = node.Find("scales"); a != nullptr && a->floats.size() == 4) {
      scale[0] = a->floats[2];
      scale[1] = a->floats[3];
    }
    const bool nearest = mode == "nearest";
    for (int axis = 0; axis < 2; ++axis) {
      const int64_t from = in[2 + axis], to = out[2 + axis];
      if (to > 2 * from || to < 2 * from - 1) {
        return Refuse(n, "resizes " + std::to_string(from) + " to " + std::to_string(to) +
                             "; the plan doubles a map (cropping at most one row or column)");
      }
      if (nearest) {
        for (int64_t d = 0; d < to; ++d) {
          if (NearestIndex(rounding, ResizeSource(transform, d, from, to, scale[axis]), from) !=
              d / 2) {
            return Refuse(n, "reads source " + std::to_string(d) + " differently from the plan's "
                             "nearest x2 (source dst / 2) with '" + transform + "' and '" +
                             rounding + "'");
          }
        }
      } else if (scale[axis] != 2.0 ||
                 (transform != "half_pixel" && transform != "pytorch_half_pixel")) {
        return Refuse(n, "resizes bilinearly by " + std::to_string(scale[axis]) + " with '" +
                             transform + "'; the plan takes x2 with half-pixel centres");
      }
    }
    pending_upsample_[node.outputs[0]] = {node.inputs[0], nearest};
    return Status::Ok();
  }

  Status Conv(int n) {
    const Node& node = NodeAt(n);
    const Tensor* w = ConstantOf(node.inputs.size() > 1 ? node.inputs[1] : "");
    if (w == nullptr || w->shape.size() != 4) return Refuse(n, "has no constant 4-D kernel");
    const Tensor* bias = ConstantOf(node.inputs.size() > 2 ? node.inputs[2] : "");
    if (node.inputs.size() > 2 && !node.inputs[2].empty() && bias == nullptr) {
      return Refuse(n, "has a bias computed at run time");
    }
    if (w->shape[2] != w->shape[3]) {
      return Refuse(n, "has a " + std::to_string(w->shape[2]) + "x" + std::to_string(w->shape[3]) +
                           " kernel; the plan takes square kernels");
    }
    MOGSERVE_ASSIGN_OR_RETURN(NetworkBuilder::ConvArgs args, Window(n));
    PendingConv p;
    p.name = node.name;
    p.node = n;
    p.args = args;
    const int64_t groups = node.Int("group", 1);
    p.def.name = node.name;
    p.def.out_channels = static_cast<int>(w->shape[0]);
    p.def.in_channels = static_cast<int>(w->shape[1] * groups);
    p.def.kernel = static_cast<int>(w->shape[2]);
    p.def.groups = static_cast<int>(groups);
    const std::string key = node.name + ".weight";
    weights_[key] = {w->shape, w->floats};
    if (options_.bgr_input && node.inputs[0] == g_.input().name) {
      // [O, 3, k, k]: input channel c of the file's B, G, R is the canvas's channel 2 − c.
      std::vector<float>& v = weights_[key].values;
      const int64_t plane = w->shape[2] * w->shape[3];
      for (int64_t o = 0; o < w->shape[0]; ++o) {
        float* row = v.data() + o * w->shape[1] * plane;
        std::swap_ranges(row, row + plane, row + 2 * plane);
      }
    }
    std::string bias_key;
    if (bias != nullptr) {
      bias_key = node.name + ".bias";
      weights_[bias_key] = {bias->shape, bias->floats};
    }
    p.def.parts = {
        {KernelLayout::kOihw, key, bias_key, p.def.out_channels, 0, 1, p.def.out_channels}};
    MOGSERVE_ASSIGN_OR_RETURN(p.x, Resolve(node.inputs[0], "node '" + node.name + "' (Conv)"));
    pending_[node.outputs[0]] = std::move(p);
    return Status::Ok();
  }

  // Strides, dilations and pads of Conv or MaxPool node n.
  StatusOr<NetworkBuilder::ConvArgs> Window(int n) {
    const Node& node = NodeAt(n);
    NetworkBuilder::ConvArgs args;
    const std::vector<int64_t> strides = node.Ints("strides");
    const std::vector<int64_t> dilations = node.Ints("dilations");
    if (!strides.empty() && (strides.size() != 2 || strides[0] != strides[1])) {
      return Refuse(n, "has strides that differ by axis; the plan takes equal ones");
    }
    if (!dilations.empty() && (dilations.size() != 2 || dilations[0] != dilations[1])) {
      return Refuse(n, "has dilations that differ by axis; the plan takes equal ones");
    }
    args.stride = strides.empty() ? 1 : static_cast<int>(strides[0]);
    args.dilation = dilations.empty() ? 1 : static_cast<int>(dilations[0]);
    const std::string auto_pad = node.String("auto_pad", "NOTSET");
    if (auto_pad == "SAME_UPPER") {
      args.padding.tf_same = true;
      if (args.dilation != 1) return Refuse(n, "pads SAME_UPPER with dilation");
    } else if (auto_pad == "SAME_LOWER") {
      return Refuse(n, "pads SAME_LOWER; the plan takes explicit pads, SAME_UPPER and VALID");
    } else if (auto_pad != "VALID") {
      const std::vector<int64_t> pads = node.Ints("pads");
      if (!pads.empty()) {
        if (pads.size() != 4) return Refuse(n, "has pads for other than two axes");
        if (pads[0] == pads[1] && pads[0] == pads[2] && pads[0] == pads[3]) {
          args.padding.pad = static_cast<int>(pads[0]);
        } else {
          args.padding = Padding::Sides(static_cast<int>(pads[0]), static_cast<int>(pads[1]),
                                        static_cast<int>(pads[2]), static_cast<int>(pads[3]));
        }
      }
    }
    return args;
  }

  Status BatchNorm(int n) {
    const Node& node = NodeAt(n);
    PendingConv* p = Fusable(node.inputs[0], [](const PendingConv& c) {
      return !c.def.batch_norm && c.args.residual < 0 && c.args.act == Activation::kNone;
    });
    if (p == nullptr) {
      return Refuse(n,
                    "does not follow a convolution it could be folded into (the plan has no "
                    "BatchNormalization of its own)");
    }
    BatchNormKeys keys;
    const char* names[] = {".gamma", ".beta", ".mean", ".var"};
    std::string* fields[] = {&keys.gamma, &keys.beta, &keys.mean, &keys.var};
    for (int k = 0; k < 4; ++k) {
      const Tensor* t = ConstantOf(node.inputs.size() > size_t(k + 1) ? node.inputs[k + 1] : "");
      if (t == nullptr || t->elements() != p->def.out_channels) {
        return Refuse(n, "has a scale, bias, mean or variance that is not a constant of " +
                             std::to_string(p->def.out_channels) + " values");
      }
      *fields[k] = node.name + names[k];
      weights_[*fields[k]] = {{p->def.out_channels}, t->floats};
    }
    keys.eps = node.Float("epsilon", 1e-5f);
    p->def.batch_norm = keys;
    Rename(node.inputs[0], node.outputs[0], n);
    return Status::Ok();
  }

  Status Add(int n) {
    const Node& node = NodeAt(n);
    if (node.inputs.size() != 2) return Refuse(n, "does not have two inputs");
    for (int k = 0; k < 2; ++k) {
      auto up = pending_upsample_.find(node.inputs[k]);
      if (up == pending_upsample_.end()) continue;
      if (ShapeOf(node.inputs[0]) != ShapeOf(node.inputs[1])) {
        return Refuse(n, "adds maps of different shapes");
      }
      const std::string reader = "node '" + node.name + "' (Add)";
      MOGSERVE_ASSIGN_OR_RETURN(const int top, Resolve(up->second.top, reader));
      MOGSERVE_ASSIGN_OR_RETURN(const int lateral, Resolve(node.inputs[1 - k], reader));
      tensor_[node.outputs[0]] = b_.UpsampleAdd(top, lateral, node.name, up->second.nearest);
      return Status::Ok();
    }
    const auto eligible = [](const PendingConv& c) {
      return c.args.residual < 0 && c.args.act == Activation::kNone;
    };
    // The convolution produced later takes the other input as its residual.
    int pick = -1;
    for (int k = 0; k < 2; ++k) {
      if (Fusable(node.inputs[k], eligible) != nullptr &&
          (pick < 0 || pending_.at(node.inputs[k]).node > pending_.at(node.inputs[pick]).node)) {
        pick = k;
      }
    }
    if (pick < 0 || ShapeOf(node.inputs[0]) != ShapeOf(node.inputs[1])) {
      return Refuse(n,
                    "is not a convolution's residual sum (the plan adds a tensor of the "
                    "same shape to a convolution's output, before its activation)");
    }
    const std::string& other = node.inputs[1 - pick];
    MOGSERVE_ASSIGN_OR_RETURN(const int residual, Resolve(other, "node '" + node.name + "' (Add)"));
    pending_.at(node.inputs[pick]).args.residual = residual;
    Rename(node.inputs[pick], node.outputs[0], n);
    return Status::Ok();
  }

  Status Activate(int n) {
    const Node& node = NodeAt(n);
    Activation act = Activation::kRelu;
    if (node.op_type == "Clip") {
      float lo = node.Float("min", -std::numeric_limits<float>::infinity());
      float hi = node.Float("max", std::numeric_limits<float>::infinity());
      for (int k : {1, 2}) {
        if (node.inputs.size() <= size_t(k) || node.inputs[k].empty()) continue;
        const Tensor* t = ConstantOf(node.inputs[k]);
        if (t == nullptr || t->elements() != 1 || t->kind != ValueKind::kFloat) {
          return Refuse(n, "has a bound that is not a constant scalar");
        }
        (k == 1 ? lo : hi) = t->floats[0];
      }
      if (lo != 0.0f || (hi != 6.0f && !std::isinf(hi))) {
        return Refuse(n, "clips to [" + std::to_string(lo) + ", " + std::to_string(hi) +
                             "]; the plan takes ReLU (0, +inf) and ReLU6 (0, 6)");
      }
      if (hi == 6.0f) act = Activation::kRelu6;
    }
    PendingConv* p = Fusable(node.inputs[0],
                             [](const PendingConv& c) { return c.args.act == Activation::kNone; });
    if (p == nullptr) {
      return Refuse(n,
                    "does not follow a convolution (the plan applies activations in its "
                    "convolutions)");
    }
    p->args.act = act;
    Rename(node.inputs[0], node.outputs[0], n);
    return Status::Ok();
  }

  Status MaxPool(int n) {
    const Node& node = NodeAt(n);
    const std::vector<int64_t> kernel = node.Ints("kernel_shape");
    if (kernel.size() != 2 || kernel[0] != kernel[1]) {
      return Refuse(n, "has a kernel that is not square");
    }
    if (node.Int("ceil_mode", 0) != 0) return Refuse(n, "rounds its output size up (ceil_mode)");
    if (node.outputs.size() > 1 && !node.outputs[1].empty()) {
      return Refuse(n, "has an indices output");
    }
    MOGSERVE_ASSIGN_OR_RETURN(NetworkBuilder::ConvArgs args, Window(n));
    if (args.dilation != 1) return Refuse(n, "is dilated");
    MOGSERVE_ASSIGN_OR_RETURN(const int x, Resolve(node.inputs[0], "node '" + node.name + "'"));
    tensor_[node.outputs[0]] =
        b_.MaxPool(x, static_cast<int>(kernel[0]), args.stride, args.padding, node.name);
    return Status::Ok();
  }

  Status Concat(int n) {
    const Node& node = NodeAt(n);
    const int64_t rank = static_cast<int64_t>(ShapeOf(node.outputs[0]).size());
    int64_t axis = node.Int("axis", 1);
    if (axis < 0) axis += rank;
    if (rank != 4 || axis != 1) {
      return Refuse(n, "concatenates along axis " + std::to_string(axis) + " of a rank-" +
                           std::to_string(rank) + " value; the plan concatenates channels");
    }
    std::vector<int> parts;
    size_t k = 0;
    for (; k < node.inputs.size() && ConstantOf(node.inputs[k]) == nullptr; ++k) {
      MOGSERVE_ASSIGN_OR_RETURN(const int t, Resolve(node.inputs[k], "node '" + node.name + "'"));
      parts.push_back(t);
    }
    // Trailing zeros: TensorFlow's Pad of channels.
    for (size_t z = k; z < node.inputs.size(); ++z) {
      const Tensor* c = ConstantOf(node.inputs[z]);
      if (c == nullptr || parts.empty() ||
          std::any_of(c->floats.begin(), c->floats.end(), [](float v) { return v != 0.0f; }) ||
          std::any_of(c->ints.begin(), c->ints.end(), [](int64_t v) { return v != 0; })) {
        return Refuse(n, "concatenates a load-time constant that is not trailing zeros");
      }
    }
    const int joined = parts.size() == 1 ? parts[0] : b_.Concat(parts);
    const int channels = static_cast<int>(ShapeOf(node.outputs[0])[1]);
    tensor_[node.outputs[0]] =
        k == node.inputs.size() ? joined : b_.PadChannels(joined, channels, node.name);
    return Status::Ok();
  }

  const StaticGraph& g_;
  NetworkBuilder b_;
  const ImportOptions options_;
  HostTensorMap weights_;
  std::map<std::string, int> tensor_;
  std::map<std::string, PendingConv> pending_;
  std::map<std::string, PendingUpsample> pending_upsample_;
  std::map<std::string, int> readers_;   // live nodes and graph outputs reading each value
  std::map<std::string, int> producer_;  // live node making each value
  std::set<int> chain_;                  // nodes of the output chains
};

}  // namespace

StatusOr<ImportedNetwork> ImportNetwork(const StaticGraph& graph, const std::string& name,
                                        const InputNormalization& normalization,
                                        const ImportOptions& options) {
  return Importer(graph, name, options).Run(normalization);
}

std::vector<float> GraphOutput(const OutputSource& source, std::span<const float> raw,
                               std::span<const int64_t> raw_offsets) {
  const int64_t begin = raw_offsets[source.first_raw];
  const int64_t end = raw_offsets[source.first_raw + source.raw_count];
  std::vector<float> out(raw.begin() + begin, raw.begin() + end);
  switch (source.activation) {
    case OutputActivation::kNone:
      break;
    case OutputActivation::kSigmoid:
      for (float& v : out) v = 1.0f / (1.0f + std::exp(-v));
      break;
    case OutputActivation::kSoftmax:
      for (size_t row = 0; row + source.width <= out.size(); row += source.width) {
        float* r = out.data() + row;
        const float top = *std::max_element(r, r + source.width);
        float sum = 0.0f;
        for (int k = 0; k < source.width; ++k) sum += r[k] = std::exp(r[k] - top);
        for (int k = 0; k < source.width; ++k) r[k] /= sum;
      }
      break;
  }
  return out;
}

}  // namespace mogserve::model::onnx
