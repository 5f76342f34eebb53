#include "model/onnx/static_graph.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

#include "model/host_tensor.h"

namespace mogserve::model::onnx {
namespace {

using Shape = std::vector<int64_t>;

// A folded constant larger than this stays a runtime value (it would only be a buffer of the
// plan); it bounds what a malformed shape sub-graph can make the loader allocate.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 26;

// Every value's shape must stay within these (a corrupt or hostile file can declare anything):
// the shape arithmetic below then cannot overflow.
constexpr int64_t kMaxValueElements = int64_t{1} << 34;
constexpr size_t kMaxRank = 16;
// Strides, dilations, pads and output paddings of an operator.
constexpr int64_t kMaxWindowAttribute = int64_t{1} << 24;

// a·b, saturated at INT64_MAX (inputs >= 0).
int64_t MulSat(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

// The element count, saturated at INT64_MAX.
int64_t Elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n = MulSat(n, std::max<int64_t>(d, 0));
  return n;
}

Shape Strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

double At(const Tensor& t, int64_t i) {
  return t.kind == ValueKind::kFloat ? t.floats[i] : static_cast<double>(t.ints[i]);
}

Tensor Empty(ValueKind kind, Shape shape) {
  Tensor t;
  t.kind = kind;
  t.data_type = kind == ValueKind::kFloat ? 1 : 7;
  t.shape = std::move(shape);
  const int64_t n = Elements(t.shape);
  if (kind == ValueKind::kFloat)
    t.floats.resize(n);
  else
    t.ints.resize(n);
  return t;
}

void Set(Tensor& t, int64_t i, double v) {
  if (t.kind == ValueKind::kFloat)
    t.floats[i] = static_cast<float>(v);
  else
    t.ints[i] = static_cast<int64_t>(v);
}

// dst[i] = src[j], exact between integer tensors (INT64_MAX "to the end" markers survive).
void CopyElement(Tensor& dst, int64_t i, const Tensor& src, int64_t j) {
  if (dst.kind == ValueKind::kInt && src.kind == ValueKind::kInt)
    dst.ints[i] = src.ints[j];
  else
    Set(dst, i, At(src, j));
}

// out[i] = src[index(i)] for every element of a tensor of `shape` (kind and type of src).
Tensor Take(const Tensor& src, Shape shape, const std::function<int64_t(int64_t)>& index) {
  Tensor out = Empty(src.kind, std::move(shape));
  out.data_type = src.data_type;
  const int64_t n = out.elements();
  for (int64_t i = 0; i < n; ++i) {
    if (src.kind == ValueKind::kFloat)
      out.floats[i] = src.floats[index(i)];
    else
      out.ints[i] = src.ints[index(i)];
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

// Operators only computed at load time: on a value that depends on the image they are refused.
const std::set<std::string>& FoldOnlyOps() {
  static const std::set<std::string> ops = {
      "Shape", "ConstantOfShape", "Range", "Floor", "Ceil", "Sqrt", "Neg"};
  return ops;
}

// Folded when every input is known at load time (the rest always run).
const std::set<std::string>& FoldableOps() {
  static const std::set<std::string> ops = {
      "Add",  "Cast",    "Ceil",    "Concat",    "Constant", "ConstantOfShape",
      "Div",  "Dropout", "Flatten", "Floor",     "Gather",   "Identity",
      "Mul",  "Neg",     "Range",   "Reshape",   "Shape",    "Slice",
      "Sqrt", "Squeeze", "Sub",     "Transpose", "Unsqueeze"};
  return ops;
}

class NodeContext {
 public:
  NodeContext(const Node& node, int64_t opset, std::map<std::string, StaticValue>& values)
      : node_(node), opset_(opset), values_(values) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t inputs() const { return node_.inputs.size(); }
  bool has(size_t i) const { return i < node_.inputs.size() && !node_.inputs[i].empty(); }
  const StaticValue& in(size_t i) const { return values_.at(node_.inputs[i]); }
  const Shape& shape(size_t i) const { return in(i).shape; }
  const Tensor* constant(size_t i) const {
    return has(i) && in(i).constant ? &*in(i).constant : nullptr;
  }

  Status Error(StatusCode code, const std::string& what) const {
    return Status(code, "node '" + node_.name + "' (" + node_.op_type + "): " + what);
  }
  Status Bad(const std::string& what) const { return Error(StatusCode::kInvalidData, what); }
  Status Unhandled(const std::string& what) const { return Error(StatusCode::kUnsupported, what); }
  Status NeedInputs(size_t n) const {
    for (size_t i = 0; i < n; ++i) {
      if (!has(i)) return Bad("input " + std::to_string(i) + " is missing");
    }
    return Status::Ok();
  }
  // Input i as integers known at load time (an axes, shape, pads... input).
  StatusOr<std::vector<int64_t>> Ints(size_t i, const std::string& what) const {
    const Tensor* t = constant(i);
    if (t == nullptr)
      return Unhandled(what + " (input " + std::to_string(i) +
                       ") must be known at load time; it depends on the image");
    if (t->kind == ValueKind::kInt) return t->ints;  // exact (INT64_MAX ends: "to the end")
    std::vector<int64_t> v;
    for (int64_t k = 0; k < t->elements(); ++k) v.push_back(static_cast<int64_t>(At(*t, k)));
    return v;
  }
  StatusOr<int64_t> Axis(int64_t axis, size_t rank) const {
    const auto r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r) {
      return Bad("axis " + std::to_string(axis) + " outside a rank-" + std::to_string(r) +
                 " value");
    }
    return axis < 0 ? axis + r : axis;
  }

 private:
  const Node& node_;
  int64_t opset_;
  std::map<std::string, StaticValue>& values_;
};

struct Result {
  std::vector<StaticValue> outputs;
  int64_t macs = 0;
};

StaticValue Runtime(ValueKind kind, Shape shape) {
  StaticValue v;
  v.kind = kind;
  v.shape = std::move(shape);
  return v;
}

StaticValue Known(Tensor t) {
  StaticValue v;
  v.kind = t.kind;
  v.shape = t.shape;
  v.constant = std::move(t);
  return v;
}

StatusOr<Shape> Broadcast(const NodeContext& c, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return c.Bad("shapes " + ShapeString(a) + " and " + ShapeString(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// The flat index into a tensor of `shape` of output element i of a broadcast to `out`.
int64_t BroadcastIndex(const Shape& shape, const Shape& out, const Shape& out_strides, int64_t i) {
  int64_t index = 0, stride = 1;
  for (int d = static_cast<int>(out.size()) - 1, s = static_cast<int>(shape.size()) - 1; s >= 0;
       --d, --s) {
    const int64_t coord = (i / out_strides[d]) % out[d];
    if (shape[s] != 1) index += coord * stride;
    stride *= shape[s];
  }
  return index;
}

// x op y for int64 shape arithmetic, saturated at the int64 limits (INT64_MAX "to the end"
// markers stay at the end). long double holds every integer below 2^64 exactly.
int64_t SaturatedInt(const std::string& op, int64_t x, int64_t y) {
  const auto a = static_cast<long double>(x), b = static_cast<long double>(y);
  const long double v = op == "Add" ? a + b : op == "Sub" ? a - b : op == "Mul" ? a * b : 0;
  if (op == "Div")
    return y == -1 ? (x == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max()
                                                               : -x)
                   : x / y;
  if (v >= static_cast<long double>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  if (v <= static_cast<long double>(std::numeric_limits<int64_t>::min())) {
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(v);
}

StatusOr<Result> Elementwise(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(2));
  MOGSERVE_ASSIGN_OR_RETURN(Shape out, Broadcast(c, c.shape(0), c.shape(1)));
  const Tensor* a = c.constant(0);
  const Tensor* b = c.constant(1);
  const ValueKind kind = c.in(0).kind;
  if (a == nullptr || b == nullptr || Elements(out) > kMaxFoldedElements) {
    return Result{{Runtime(kind, out)}};
  }
  Tensor t = Empty(kind, out);
  t.data_type = a->data_type;
  const Shape st = Strides(out);
  const std::string& op = c.node().op_type;
  for (int64_t i = 0; i < t.elements(); ++i) {
    const int64_t ia = BroadcastIndex(a->shape, out, st, i);
    const int64_t ib = BroadcastIndex(b->shape, out, st, i);
    if (kind == ValueKind::kInt && a->kind == ValueKind::kInt && b->kind == ValueKind::kInt) {
      const int64_t x = a->ints[ia], y = b->ints[ib];  // exact integer shape arithmetic
      if (op == "Div" && y == 0) return c.Bad("integer division by zero");
      t.ints[i] = SaturatedInt(op, x, y);
      continue;
    }
    const double x = At(*a, ia);
    const double y = At(*b, ib);
    double v = 0;
    if (op == "Add") v = x + y;
    if (op == "Sub") v = x - y;
    if (op == "Mul") v = x * y;
    if (op == "Div") {
      if (kind == ValueKind::kInt && y == 0) return c.Bad("integer division by zero");
      v = kind == ValueKind::kInt ? std::trunc(x / y) : x / y;
    }
    Set(t, i, v);
  }
  return Result{{Known(std::move(t))}};
}

StatusOr<Result> Unary(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  const std::string& op = c.node().op_type;
  const Tensor* x = c.constant(0);
  if (x == nullptr || !FoldableOps().count(op)) {
    return Result{{Runtime(c.in(0).kind, c.shape(0))}};
  }
  Tensor t = *x;
  for (int64_t i = 0; i < t.elements(); ++i) {
    const double v = At(*x, i);
    if (op == "Floor") Set(t, i, std::floor(v));
    if (op == "Ceil") Set(t, i, std::ceil(v));
    if (op == "Sqrt") Set(t, i, std::sqrt(v));
    if (op == "Neg") Set(t, i, -v);
  }
  return Result{{Known(std::move(t))}};
}

// Relu, Sigmoid, ... and BatchNormalization, Softmax: the input's shape.
StatusOr<Result> SameShape(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  if (c.node().op_type == "BatchNormalization" && c.node().outputs.size() > 1) {
    for (size_t i = 1; i < c.node().outputs.size(); ++i) {
      if (!c.node().outputs[i].empty()) return c.Unhandled("training-mode outputs");
    }
  }
  if (c.node().op_type == "PRelu" && c.has(1)) {
    MOGSERVE_RETURN_IF_ERROR(Broadcast(c, c.shape(0), c.shape(1)).status());
  }
  return Result{{Runtime(c.in(0).kind, c.shape(0))}};
}

// Identity, Dropout (its mask output must be unused), Cast, Reshape, Flatten, Squeeze,
// Unsqueeze: the same elements under a new shape (and, for Cast, a new kind).
StatusOr<Result> Relabel(const NodeContext& c, const Shape& shape, ValueKind kind) {
  if (Elements(shape) != Elements(c.shape(0))) {
    return c.Bad("cannot view " + ShapeString(c.shape(0)) + " as " + ShapeString(shape));
  }
  const Tensor* x = c.constant(0);
  if (x == nullptr) return Result{{Runtime(kind, shape)}};
  Tensor t = Empty(kind, shape);
  if (kind == ValueKind::kInt) t.data_type = 7;
  for (int64_t i = 0; i < t.elements(); ++i) CopyElement(t, i, *x, i);
  if (kind == x->kind) t.data_type = x->data_type;
  return Result{{Known(std::move(t))}};
}

StatusOr<Result> Cast(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  const int64_t to = c.node().Int("to", 1);
  const bool to_float = to == 1 || to == 10 || to == 11 || to == 16;
  const bool to_int = to == 2 || to == 3 || to == 5 || to == 6 || to == 7 || to == 9;
  if (!to_float && !to_int) return c.Unhandled("cast to " + DataTypeName(static_cast<int>(to)));
  const Tensor* x = c.constant(0);
  const ValueKind kind = to_float ? ValueKind::kFloat : ValueKind::kInt;
  if (x == nullptr) return Result{{Runtime(kind, c.shape(0))}};
  Tensor t = Empty(kind, c.shape(0));
  t.data_type = static_cast<int>(to);
  for (int64_t i = 0; i < t.elements(); ++i) {
    if (to_float) {
      t.floats[i] = x->kind == ValueKind::kFloat ? x->floats[i] : static_cast<float>(x->ints[i]);
      continue;
    }
    int64_t v = 0;
    if (x->kind == ValueKind::kInt) {
      v = x->ints[i];
    } else if (to == 9) {
      v = x->floats[i] != 0.0f;
    } else {
      const double f = std::trunc(static_cast<double>(x->floats[i]));
      if (!(f >= -9.2e18 && f <= 9.2e18)) {
        return c.Bad("cannot cast " + std::to_string(x->floats[i]) + " to an integer");
      }
      v = static_cast<int64_t>(f);
    }
    // The target's own width: booleans are 0/1, narrower integers wrap as C casts do.
    switch (to) {
      case 9:
        v = v != 0;
        break;
      case 2:
        v = static_cast<uint8_t>(v);
        break;
      case 3:
        v = static_cast<int8_t>(v);
        break;
      case 5:
        v = static_cast<int16_t>(v);
        break;
      case 6:
        v = static_cast<int32_t>(v);
        break;
      default:
        break;
    }
    t.ints[i] = v;
  }
  return Result{{Known(std::move(t))}};
}

StatusOr<Result> Reshape(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(2));
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.Ints(1, "the shape"));
  const Shape& in = c.shape(0);
  const bool allow_zero = c.node().Int("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allow_zero) {
      if (i >= in.size()) return c.Bad("shape copies dim " + std::to_string(i) + " it lacks");
      dims[i] = in[i];
    }
    if (dims[i] == -1) {
      if (infer >= 0) return c.Bad("shape has two -1 dims");
      infer = static_cast<int>(i);
      continue;
    }
    if (dims[i] < 0) return c.Bad("shape has dim " + std::to_string(dims[i]));
    known = MulSat(known, dims[i]);
  }
  if (infer >= 0) {
    if (known == 0 || Elements(in) % known != 0) {
      return c.Bad("cannot reshape " + ShapeString(in) + " to " + ShapeString(dims));
    }
    dims[infer] = Elements(in) / known;
  }
  return Relabel(c, dims, c.in(0).kind);
}

StatusOr<Result> Flatten(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  const Shape& in = c.shape(0);
  const int64_t raw = c.node().Int("axis", 1);
  MOGSERVE_ASSIGN_OR_RETURN(int64_t axis, raw == static_cast<int64_t>(in.size())
                                              ? StatusOr<int64_t>(raw)
                                              : c.Axis(raw, in.size()));
  return Relabel(c,
                 {Elements(Shape(in.begin(), in.begin() + axis)),
                  Elements(Shape(in.begin() + axis, in.end()))},
                 c.in(0).kind);
}

// Squeeze / Unsqueeze axes: an attribute up to opset 12, an input from 13.
StatusOr<std::vector<int64_t>> AxesOf(const NodeContext& c) {
  if (c.opset() >= 13) {
    if (!c.has(1)) {
      if (c.node().op_type == "Unsqueeze") return c.Bad("axes (input 1) is missing");
      return std::vector<int64_t>{};  // Squeeze: every axis of size 1
    }
    return c.Ints(1, "axes");
  }
  return c.node().Ints("axes");
}

StatusOr<Result> Squeeze(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(c));
  const Shape& in = c.shape(0);
  std::vector<bool> drop(in.size(), false);
  for (int64_t a : axes) {
    MOGSERVE_ASSIGN_OR_RETURN(int64_t axis, c.Axis(a, in.size()));
    if (in[axis] != 1)
      return c.Bad("squeezes axis " + std::to_string(a) + " of size " + std::to_string(in[axis]));
    drop[axis] = true;
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!(axes.empty() ? in[i] == 1 : drop[i])) out.push_back(in[i]);
  }
  return Relabel(c, out, c.in(0).kind);
}

StatusOr<Result> Unsqueeze(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(c));
  if (axes.size() > kMaxRank) return c.Bad(std::to_string(axes.size()) + " axes");
  const size_t rank = c.shape(0).size() + axes.size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    MOGSERVE_ASSIGN_OR_RETURN(int64_t axis, c.Axis(a, rank));
    if (inserted[axis]) return c.Bad("axis " + std::to_string(a) + " given twice");
    inserted[axis] = true;
  }
  Shape out;
  size_t next = 0;
  for (size_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? 1 : c.shape(0)[next++]);
  return Relabel(c, out, c.in(0).kind);
}

// Transpose and Slice: output element (i_0, ..., i_n) is input element offset + Σ i_d · steps[d];
// folded when the input is known at load time.
StatusOr<Result> StridedView(const NodeContext& c, const Shape& out, int64_t offset,
                             const Shape& steps) {
  const Tensor* x = c.constant(0);
  if (x == nullptr || Elements(out) > kMaxFoldedElements) {
    return Result{{Runtime(c.in(0).kind, out)}};
  }
  const Shape out_st = Strides(out);
  return Result{{Known(Take(*x, out, [&](int64_t i) {
    int64_t src = offset;
    for (size_t d = 0; d < out.size(); ++d) src += (i / out_st[d]) % out[d] * steps[d];
    return src;
  }))}};
}

StatusOr<Result> Transpose(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  const Shape& in = c.shape(0);
  std::vector<int64_t> perm = c.node().Ints("perm");
  if (perm.empty()) {
    for (size_t i = in.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(in.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity)
    return c.Bad("perm " + ShapeString(perm) + " for rank " + std::to_string(in.size()));
  Shape out, steps;
  const Shape in_st = Strides(in);
  for (int64_t p : perm) {
    out.push_back(in[p]);
    steps.push_back(in_st[p]);
  }
  return StridedView(c, out, 0, steps);
}

StatusOr<Result> Concat(const NodeContext& c) {
  if (c.inputs() == 0) return c.Bad("no inputs");
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(c.inputs()));
  const Shape& first = c.shape(0);
  MOGSERVE_ASSIGN_OR_RETURN(int64_t axis, c.Axis(c.node().Int("axis", 0), first.size()));
  Shape out = first;
  out[axis] = 0;
  bool all_known = true;
  for (size_t i = 0; i < c.inputs(); ++i) {
    const Shape& s = c.shape(i);
    bool fits = s.size() == first.size();
    for (size_t d = 0; fits && d < s.size(); ++d)
      fits = d == static_cast<size_t>(axis) || s[d] == first[d];
    if (!fits)
      return c.Bad("input shapes " + ShapeString(first) + " and " + ShapeString(s) +
                   " differ off axis " + std::to_string(axis));
    out[axis] += s[axis];
    all_known = all_known && c.constant(i) != nullptr;
  }
  if (!all_known || Elements(out) > kMaxFoldedElements) {
    return Result{{Runtime(c.in(0).kind, out)}};
  }
  Tensor t = Empty(c.in(0).kind, out);
  t.data_type = c.constant(0)->data_type;
  const int64_t inner = Elements(Shape(out.begin() + axis + 1, out.end()));
  const int64_t outer = Elements(Shape(out.begin(), out.begin() + axis));
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < c.inputs(); ++i) {
      const Tensor& part = *c.constant(i);
      const int64_t block = part.shape[axis] * inner;
      for (int64_t k = 0; k < block; ++k) CopyElement(t, at++, part, o * block + k);
    }
  }
  return Result{{Known(std::move(t))}};
}

StatusOr<Result> Split(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  const Shape& in = c.shape(0);
  MOGSERVE_ASSIGN_OR_RETURN(int64_t axis, c.Axis(c.node().Int("axis", 0), in.size()));
  std::vector<int64_t> sizes;
  if (c.opset() >= 13 && c.has(1)) {
    MOGSERVE_ASSIGN_OR_RETURN(sizes, c.Ints(1, "split"));
  } else if (c.opset() < 13) {
    sizes = c.node().Ints("split");
  }
  const auto parts = static_cast<int64_t>(c.node().outputs.size());
  if (parts == 0) return c.Bad("no outputs");
  if (sizes.empty()) {
    if (in[axis] % parts != 0)
      return c.Bad("axis of " + std::to_string(in[axis]) + " does not split evenly");
    sizes.assign(parts, in[axis] / parts);
  }
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0 || size > in[axis]) return c.Bad("split sizes " + ShapeString(sizes));
    total += size;
  }
  if (static_cast<int64_t>(sizes.size()) != parts || total != in[axis]) {
    return c.Bad("split sizes " + ShapeString(sizes) + " for axis " + std::to_string(in[axis]));
  }
  Result r;
  for (int64_t s : sizes) {
    Shape out = in;
    out[axis] = s;
    r.outputs.push_back(Runtime(c.in(0).kind, out));
  }
  return r;
}

// Slice: starts/ends/axes/steps are attributes up to opset 9, inputs from 10.
StatusOr<Result> Slice(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  const Shape& in = c.shape(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.node().Ints("starts");
    ends = c.node().Ints("ends");
    axes = c.node().Ints("axes");
  } else {
    MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(3));
    MOGSERVE_ASSIGN_OR_RETURN(starts, c.Ints(1, "starts"));
    MOGSERVE_ASSIGN_OR_RETURN(ends, c.Ints(2, "ends"));
    if (c.has(3)) {
      MOGSERVE_ASSIGN_OR_RETURN(axes, c.Ints(3, "axes"));
    }
    if (c.has(4)) {
      MOGSERVE_ASSIGN_OR_RETURN(steps, c.Ints(4, "steps"));
    }
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return c.Bad("starts, ends, axes and steps differ in length");
  }
  Shape begin(in.size(), 0), step(in.size(), 1), out = in;
  for (size_t i = 0; i < starts.size(); ++i) {
    MOGSERVE_ASSIGN_OR_RETURN(int64_t a, c.Axis(axes[i], in.size()));
    const int64_t dim = in[a], s = steps[i];
    if (s == 0) return c.Bad("step 0");
    if (dim == 0) {
      out[a] = 0;
      continue;
    }
    // Negative positions count from the end; then clamp to [0, dim] (step > 0), or the
    // start to [0, dim − 1] and the end to [−1, dim − 1] (step < 0).
    auto clamp = [&](int64_t v, int64_t lo_bound, int64_t hi_bound) {
      if (v < 0) v += dim;
      return std::clamp<int64_t>(v, lo_bound, hi_bound);
    };
    const int64_t lo = s > 0 ? clamp(starts[i], 0, dim) : clamp(starts[i], 0, dim - 1);
    const int64_t hi = s > 0 ? clamp(ends[i], 0, dim) : clamp(ends[i], -1, dim - 1);
    begin[a] = lo;
    step[a] = s;
    // ceil((hi − lo) / s) elements, written so that no step (even ±INT64_MAX) overflows.
    if (s > 0)
      out[a] = hi <= lo ? 0 : (hi - lo - 1) / s + 1;
    else
      out[a] =
          lo <= hi ? 0 : (s == std::numeric_limits<int64_t>::min() ? 1 : (lo - hi - 1) / -s + 1);
  }
  const Shape in_st = Strides(in);
  int64_t offset = 0;
  Shape element_steps;
  for (size_t d = 0; d < in.size(); ++d) {
    offset += begin[d] * in_st[d];
    element_steps.push_back(step[d] * in_st[d]);
  }
  return StridedView(c, out, offset, element_steps);
}

StatusOr<Result> Gather(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(2));
  const Shape& in = c.shape(0);
  MOGSERVE_ASSIGN_OR_RETURN(int64_t axis, c.Axis(c.node().Int("axis", 0), in.size()));
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<int64_t> indices, c.Ints(1, "the indices"));
  for (int64_t& k : indices) {
    if (k < -in[axis] || k >= in[axis]) {
      return c.Bad("index " + std::to_string(k) + " outside an axis of " +
                   std::to_string(in[axis]));
    }
    if (k < 0) k += in[axis];
  }
  const Shape& index_shape = c.shape(1);
  Shape out(in.begin(), in.begin() + axis);
  out.insert(out.end(), index_shape.begin(), index_shape.end());
  out.insert(out.end(), in.begin() + axis + 1, in.end());
  const Tensor* x = c.constant(0);
  if (x == nullptr || Elements(out) > kMaxFoldedElements) {
    return Result{{Runtime(c.in(0).kind, out)}};
  }
  const int64_t inner = Elements(Shape(in.begin() + axis + 1, in.end()));
  const auto count = static_cast<int64_t>(indices.size());
  return Result{{Known(Take(*x, out, [&](int64_t i) {
    const int64_t o = i / (count * inner), k = (i / inner) % count, r = i % inner;
    return (o * in[axis] + indices[k]) * inner + r;
  }))}};
}

StatusOr<Result> ShapeOp(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  const Shape& in = c.shape(0);
  const auto rank = static_cast<int64_t>(in.size());
  int64_t start = c.node().Int("start", 0), end = c.node().Int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  Tensor t = Empty(ValueKind::kInt, {end - start});
  for (int64_t i = start; i < end; ++i) t.ints[i - start] = in[i];
  return Result{{Known(std::move(t))}};
}

StatusOr<Result> ConstantOp(const NodeContext& c) {
  const Node& n = c.node();
  if (const Attribute* a = n.Find("value"); a != nullptr && a->t) return Result{{Known(*a->t)}};
  if (const Attribute* a = n.Find("value_float")) {
    Tensor t = Empty(ValueKind::kFloat, {});
    t.floats[0] = a->f;
    return Result{{Known(std::move(t))}};
  }
  if (const Attribute* a = n.Find("value_int")) {
    Tensor t = Empty(ValueKind::kInt, {});
    t.ints[0] = a->i;
    return Result{{Known(std::move(t))}};
  }
  if (const Attribute* a = n.Find("value_floats")) {
    Tensor t = Empty(ValueKind::kFloat, {static_cast<int64_t>(a->floats.size())});
    t.floats = a->floats;
    return Result{{Known(std::move(t))}};
  }
  if (const Attribute* a = n.Find("value_ints")) {
    Tensor t = Empty(ValueKind::kInt, {static_cast<int64_t>(a->ints.size())});
    t.ints = a->ints;
    return Result{{Known(std::move(t))}};
  }
  return c.Unhandled("a Constant without a value, value_float(s) or value_int(s) attribute");
}

StatusOr<Result> ConstantOfShape(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.Ints(0, "the shape"));
  for (int64_t d : shape) {
    if (d < 0) return c.Bad("shape " + ShapeString(shape));
  }
  if (Elements(shape) > kMaxFoldedElements)
    return c.Unhandled("a constant of shape " + ShapeString(shape));
  const Attribute* a = c.node().Find("value");
  Tensor t = Empty(a != nullptr && a->t ? a->t->kind : ValueKind::kFloat, shape);
  const double v = a != nullptr && a->t && a->t->elements() > 0 ? At(*a->t, 0) : 0.0;
  for (int64_t i = 0; i < t.elements(); ++i) Set(t, i, v);
  return Result{{Known(std::move(t))}};
}

StatusOr<Result> Range(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(3));
  const Tensor* s = c.constant(0);
  const Tensor* l = c.constant(1);
  const Tensor* d = c.constant(2);
  if (s == nullptr || l == nullptr || d == nullptr) return Result{{Runtime(c.in(0).kind, {})}};
  if (s->elements() != 1 || l->elements() != 1 || d->elements() != 1) {
    return c.Bad("start, limit and delta must be scalars");
  }
  const double start = At(*s, 0), limit = At(*l, 0), delta = At(*d, 0);
  if (delta == 0) return c.Bad("delta 0");
  const double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(count <= static_cast<double>(kMaxFoldedElements))) {
    return c.Unhandled("a range of " + std::to_string(count) + " values");
  }
  const auto n = static_cast<int64_t>(count);
  Tensor t = Empty(s->kind, {n});
  for (int64_t i = 0; i < n; ++i) Set(t, i, start + static_cast<double>(i) * delta);
  return Result{{Known(std::move(t))}};
}

// The spatial attributes of Conv, ConvTranspose and the pools.
struct Window {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
};

StatusOr<Window> WindowOf(const NodeContext& c, int64_t kh, int64_t kw, int64_t h, int64_t w) {
  Window win;
  if (kh < 1 || kw < 1 || kh > kMaxWindowAttribute || kw > kMaxWindowAttribute) {
    return c.Bad("kernel " + std::to_string(kh) + "x" + std::to_string(kw));
  }
  win.kh = kh;
  win.kw = kw;
  const Node& n = c.node();
  const std::vector<int64_t> strides = n.Ints("strides");
  const std::vector<int64_t> dilations = n.Ints("dilations");
  const std::vector<int64_t> pads = n.Ints("pads");
  if (!strides.empty()) {
    if (strides.size() != 2) return c.Unhandled("strides " + ShapeString(strides) + " (2-D only)");
    win.sh = strides[0];
    win.sw = strides[1];
  }
  if (!dilations.empty()) {
    if (dilations.size() != 2) return c.Unhandled("dilations " + ShapeString(dilations));
    win.dh = dilations[0];
    win.dw = dilations[1];
  }
  if (win.sh < 1 || win.sw < 1 || win.dh < 1 || win.dw < 1 || win.sh > kMaxWindowAttribute ||
      win.sw > kMaxWindowAttribute || win.dh > kMaxWindowAttribute ||
      win.dw > kMaxWindowAttribute) {
    return c.Bad("strides and dilations must be in [1, " + std::to_string(kMaxWindowAttribute) +
                 "]");
  }
  const std::string auto_pad = n.String("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    if (!pads.empty()) {
      if (pads.size() != 4) return c.Bad("pads " + ShapeString(pads) + " (4 values for 2-D)");
      win.pt = pads[0];
      win.pl = pads[1];
      win.pb = pads[2];
      win.pr = pads[3];
      for (int64_t p : pads) {
        if (p < 0 || p > kMaxWindowAttribute) return c.Bad("pads " + ShapeString(pads));
      }
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    auto same = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t* lo, int64_t* hi) {
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>((out - 1) * s + (k - 1) * d + 1 - in, 0);
      *lo = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      *hi = total - *lo;
    };
    same(h, win.kh, win.sh, win.dh, &win.pt, &win.pb);
    same(w, win.kw, win.sw, win.dw, &win.pl, &win.pr);
  } else if (auto_pad != "VALID") {
    return c.Bad("auto_pad '" + auto_pad + "' (NOTSET, SAME_UPPER, SAME_LOWER, VALID)");
  }
  return win;
}

// floor((in + pads − dilation·(k − 1) − 1) / stride) + 1 (ceil with ceil_mode).
int64_t OutSize(int64_t in, int64_t lo, int64_t hi, int64_t k, int64_t s, int64_t d, bool ceil) {
  const int64_t span = in + lo + hi - d * (k - 1) - 1;
  if (span < 0) return 0;
  return (ceil ? (span + s - 1) / s : span / s) + 1;
}

Status Need4d(const NodeContext& c, size_t i) {
  if (c.shape(i).size() != 4) {
    return c.Unhandled("input " + std::to_string(i) + " of shape " + ShapeString(c.shape(i)) +
                       "; 2-D operators take [N, C, H, W]");
  }
  return Status::Ok();
}

StatusOr<Result> Conv(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(2));
  MOGSERVE_RETURN_IF_ERROR(Need4d(c, 0));
  const Shape& x = c.shape(0);
  const Shape& w = c.shape(1);
  if (c.constant(1) == nullptr) return c.Unhandled("weights that depend on the image");
  if (w.size() != 4) return c.Unhandled("a kernel of shape " + ShapeString(w) + " (2-D only)");
  const int64_t group = c.node().Int("group", 1);
  const bool transpose = c.node().op_type == "ConvTranspose";
  if (group < 1 || group > x[1] || (transpose && w[0] % group != 0)) {
    return c.Bad("group " + std::to_string(group) + " for " + std::to_string(x[1]) +
                 " input channels and kernel " + ShapeString(w));
  }
  // Conv: W [M, C/group, kh, kw]; ConvTranspose: W [C, M/group, kh, kw].
  const int64_t in_channels = transpose ? w[0] : MulSat(w[1], group);
  const int64_t out_channels = transpose ? MulSat(w[1], group) : w[0];
  if (x[1] != in_channels || out_channels % group != 0) {
    return c.Bad("input " + ShapeString(x) + " and kernel " + ShapeString(w) + " with group " +
                 std::to_string(group) + " do not fit");
  }
  if (c.has(2) && c.shape(2) != Shape{out_channels}) {
    return c.Bad("bias of shape " + ShapeString(c.shape(2)) + " for " +
                 std::to_string(out_channels) + " output channels");
  }
  MOGSERVE_ASSIGN_OR_RETURN(Window win, WindowOf(c, w[2], w[3], x[2], x[3]));
  Shape out = {x[0], out_channels, 0, 0};
  int64_t macs = 0;
  if (!transpose) {
    out[2] = OutSize(x[2], win.pt, win.pb, win.kh, win.sh, win.dh, false);
    out[3] = OutSize(x[3], win.pl, win.pr, win.kw, win.sw, win.dw, false);
    macs = MulSat(Elements(out), Elements({w[1], w[2], w[3]}));
  } else {
    std::vector<int64_t> extra = c.node().Ints("output_padding");
    if (extra.empty()) extra = {0, 0};
    if (extra.size() != 2 || extra[0] < 0 || extra[1] < 0 || extra[0] > kMaxWindowAttribute ||
        extra[1] > kMaxWindowAttribute) {
      return c.Bad("output_padding " + ShapeString(extra));
    }
    const std::vector<int64_t> shape = c.node().Ints("output_shape");
    if (!shape.empty()) return c.Unhandled("the output_shape attribute (give pads instead)");
    const std::string auto_pad = c.node().String("auto_pad", "NOTSET");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[2] = x[2] * win.sh;  // the spec's output for SAME: input · stride
      out[3] = x[3] * win.sw;
    } else {
      out[2] = win.sh * (x[2] - 1) + extra[0] + (win.kh - 1) * win.dh + 1 - win.pt - win.pb;
      out[3] = win.sw * (x[3] - 1) + extra[1] + (win.kw - 1) * win.dw + 1 - win.pl - win.pr;
    }
    macs = MulSat(Elements(x), Elements({w[1], w[2], w[3]}));
  }
  if (out[2] < 1 || out[3] < 1) {
    return c.Bad("the output of " + ShapeString(x) + " would be " + ShapeString(out) +
                 " (the input is too small for this kernel, stride and padding)");
  }
  return Result{{Runtime(ValueKind::kFloat, out)}, macs};
}

StatusOr<Result> Pool(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  MOGSERVE_RETURN_IF_ERROR(Need4d(c, 0));
  const Shape& x = c.shape(0);
  if (c.node().op_type == "GlobalAveragePool") {
    return Result{{Runtime(ValueKind::kFloat, {x[0], x[1], 1, 1})}};
  }
  const std::vector<int64_t> k = c.node().Ints("kernel_shape");
  if (k.size() != 2) return c.Bad("kernel_shape " + ShapeString(k) + " (2 values for 2-D)");
  if (c.node().outputs.size() > 1 && !c.node().outputs[1].empty()) {
    return c.Unhandled("MaxPool's Indices output");
  }
  MOGSERVE_ASSIGN_OR_RETURN(Window win, WindowOf(c, k[0], k[1], x[2], x[3]));
  const bool ceil = c.node().Int("ceil_mode", 0) != 0;
  const Shape out = {x[0], x[1], OutSize(x[2], win.pt, win.pb, win.kh, win.sh, win.dh, ceil),
                     OutSize(x[3], win.pl, win.pr, win.kw, win.sw, win.dw, ceil)};
  if (out[2] < 1 || out[3] < 1) return c.Bad("pooling " + ShapeString(x) + " leaves nothing");
  return Result{{Runtime(ValueKind::kFloat, out)}};
}

// Pad: pads (and mode, value) are attributes up to opset 10, inputs from 11.
StatusOr<Result> Pad(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  const Shape& x = c.shape(0);
  std::vector<int64_t> pads;
  if (c.opset() < 11) {
    pads = c.node().Ints("pads");
  } else {
    MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(2));
    MOGSERVE_ASSIGN_OR_RETURN(pads, c.Ints(1, "pads"));
  }
  if (pads.size() != 2 * x.size()) {
    return c.Bad("pads " + ShapeString(pads) + " for a rank-" + std::to_string(x.size()) +
                 " value");
  }
  const std::string mode = c.node().String("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return c.Unhandled("mode '" + mode + "' (constant, reflect, edge)");
  }
  for (int64_t p : pads) {
    if (p < -kMaxWindowAttribute || p > kMaxWindowAttribute) {
      return c.Bad("pads " + ShapeString(pads));
    }
  }
  Shape out = x;
  for (size_t i = 0; i < x.size(); ++i) {
    out[i] += pads[i] + pads[i + x.size()];
    if (out[i] < 1)
      return c.Bad("pads " + ShapeString(pads) + " leave nothing of " + ShapeString(x));
  }
  return Result{{Runtime(c.in(0).kind, out)}};
}

// floor(dim · scale), refused outside [0, kMaxValueElements].
StatusOr<int64_t> ScaledDim(const NodeContext& c, int64_t dim, double scale) {
  const double v = std::floor(static_cast<double>(dim) * scale);
  if (!(v >= 0 && v <= static_cast<double>(kMaxValueElements))) {
    return c.Bad("scale " + std::to_string(scale) + " of a dim of " + std::to_string(dim));
  }
  return static_cast<int64_t>(v);
}

// Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample (X, scales; opset 9).
StatusOr<Result> Resize(const NodeContext& c) {
  MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
  const Shape& x = c.shape(0);
  const Node& n = c.node();
  const std::string mode = n.String("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear") {
    return c.Unhandled("mode '" + mode + "' (nearest, linear)");
  }
  const std::string transform = n.String("coordinate_transformation_mode", "half_pixel");
  if (n.op_type == "Resize" && c.opset() >= 11 && transform != "half_pixel" &&
      transform != "pytorch_half_pixel" && transform != "asymmetric" &&
      transform != "align_corners") {
    return c.Unhandled("coordinate_transformation_mode '" + transform +
                       "' (half_pixel, pytorch_half_pixel, asymmetric, align_corners)");
  }
  const size_t scales_at = n.op_type == "Resize" && c.opset() >= 11 ? 2 : 1;
  Shape out = x;
  if (c.opset() >= 11 && n.op_type == "Resize" && c.has(3) &&
      !(c.constant(3) != nullptr && c.constant(3)->elements() == 0)) {
    MOGSERVE_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, c.Ints(3, "sizes"));
    if (sizes.size() != x.size()) return c.Bad("sizes " + ShapeString(sizes));
    out = sizes;
  } else if (c.has(scales_at) && c.constant(scales_at) != nullptr &&
             c.constant(scales_at)->elements() > 0) {
    const Tensor& scales = *c.constant(scales_at);
    if (scales.elements() != static_cast<int64_t>(x.size())) {
      return c.Bad("scales of shape " + ShapeString(scales.shape) + " for rank " +
                   std::to_string(x.size()));
    }
    for (size_t i = 0; i < x.size(); ++i) {
      MOGSERVE_ASSIGN_OR_RETURN(out[i], ScaledDim(c, x[i], At(scales, i)));
    }
  } else if (const Attribute* a = n.Find("scales"); a != nullptr && n.op_type == "Upsample") {
    for (size_t i = 0; i < x.size() && i < a->floats.size(); ++i) {
      MOGSERVE_ASSIGN_OR_RETURN(out[i], ScaledDim(c, x[i], a->floats[i]));
    }
  } else {
    return c.Unhandled("scales or sizes that depend on the image");
  }
  if (out.size() != 4 || out[0] != x[0] || out[1] != x[1]) {
    return c.Unhandled("resizing " + ShapeString(x) + " to " + ShapeString(out) +
                       " (only the two spatial axes of [N, C, H, W] are resized)");
  }
  return Result{{Runtime(ValueKind::kFloat, out)}};
}

using OpFunction = std::function<StatusOr<Result>(const NodeContext&)>;

const std::map<std::string, OpFunction>& OpTable() {
  static const std::map<std::string, OpFunction> table = {
      {"Add", Elementwise},
      {"AveragePool", Pool},
      {"BatchNormalization", SameShape},
      {"Cast", Cast},
      {"Ceil", Unary},
      {"Clip", SameShape},
      {"Concat", Concat},
      {"Constant", ConstantOp},
      {"ConstantOfShape", ConstantOfShape},
      {"Conv", Conv},
      {"ConvTranspose", Conv},
      {"Div", Elementwise},
      {"Dropout",
       [](const NodeContext& c) -> StatusOr<Result> {
         MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
         if (c.node().outputs.size() > 1 && !c.node().outputs[1].empty()) {
           return c.Unhandled("Dropout's mask output");
         }
         return Relabel(c, c.shape(0), c.in(0).kind);
       }},
      {"Exp", SameShape},
      {"Flatten", Flatten},
      {"Floor", Unary},
      {"Gather", Gather},
      {"GlobalAveragePool", Pool},
      {"HardSigmoid", SameShape},
      {"HardSwish", SameShape},
      {"Identity",
       [](const NodeContext& c) -> StatusOr<Result> {
         MOGSERVE_RETURN_IF_ERROR(c.NeedInputs(1));
         return Relabel(c, c.shape(0), c.in(0).kind);
       }},
      {"LeakyRelu", SameShape},
      {"MaxPool", Pool},
      {"Mul", Elementwise},
      {"Neg", Unary},
      {"PRelu", SameShape},
      {"Pad", Pad},
      {"Range", Range},
      {"Relu", SameShape},
      {"Reshape", Reshape},
      {"Resize", Resize},
      {"Shape", ShapeOp},
      {"Sigmoid", SameShape},
      {"Slice", Slice},
      {"Softmax", SameShape},
      {"Split", Split},
      {"Sqrt", Unary},
      {"Squeeze", Squeeze},
      {"Sub", Elementwise},
      {"Transpose", Transpose},
      {"Unsqueeze", Unsqueeze},
      {"Upsample", Resize},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& SupportedOps() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> v;
    for (const auto& [name, fn] : OpTable()) v.push_back(name);
    return v;
  }();
  return ops;
}

bool IsSupportedOp(const std::string& op_type) {
  return OpTable().count(op_type) > 0;
}

StatusOr<ImageInput> FindImageInput(const Graph& graph) {
  if (graph.inputs.size() != 1) {
    std::vector<std::string> names;
    for (const ValueInfo& v : graph.inputs) names.push_back(v.name);
    return Unsupported(graph.file + ": a face detector takes one image input; this model has " +
                       std::to_string(graph.inputs.size()) + (names.empty() ? "" : ": ") +
                       Join(names));
  }
  const ValueInfo& v = graph.inputs[0];
  if (!v.has_shape || v.dims.size() != 4 || (v.data_type != 0 && v.data_type != 1)) {
    std::string dims;
    for (const Dim& d : v.dims) {
      dims += (dims.empty() ? "" : ",") + (d.fixed() ? std::to_string(d.value) : d.symbol);
    }
    return Unsupported(graph.file + ": input '" + v.name + "' is " + DataTypeName(v.data_type) +
                       " [" + dims + "]; a face detector's input is FLOAT [N, 3, H, W]");
  }
  ImageInput in;
  in.name = v.name;
  in.channels_last = v.dims[1].value != 3 && v.dims[3].value == 3;
  in.batch = v.dims[0].value;
  in.channels = v.dims[in.channels_last ? 3 : 1].value;
  in.height = v.dims[in.channels_last ? 1 : 2].value;
  in.width = v.dims[in.channels_last ? 2 : 3].value;
  if (in.channels != 3 && in.channels != -1) {
    return Unsupported(graph.file + ": input '" + v.name + "' has " + std::to_string(in.channels) +
                       " channels; an RGB image has 3");
  }
  return in;
}

StatusOr<StaticGraph> StaticGraph::Infer(std::shared_ptr<const Graph> graph, int64_t batch,
                                         int64_t height, int64_t width) {
  MOGSERVE_ASSIGN_OR_RETURN(ImageInput input, FindImageInput(*graph));
  if ((input.height >= 0 && input.height != height) || (input.width >= 0 && input.width != width) ||
      (input.batch >= 0 && input.batch != batch)) {
    return InvalidArgument(graph->file + ": input '" + input.name + "' is fixed at " +
                           ShapeString(input.Shape(input.batch, input.height, input.width)) +
                           "; asked for " + ShapeString(input.Shape(batch, height, width)));
  }
  // What a file declares is bounded like every value the nodes make.
  auto check = [&](const std::string& what, const Shape& shape) -> Status {
    const bool bad = shape.size() > kMaxRank || Elements(shape) > kMaxValueElements ||
                     std::any_of(shape.begin(), shape.end(),
                                 [](int64_t d) { return d < 0 || d > kMaxValueElements; });
    return bad ? InvalidData(graph->file + ": " + what + " has shape " + ShapeString(shape))
               : Status::Ok();
  };
  MOGSERVE_RETURN_IF_ERROR(check("input '" + input.name + "'", input.Shape(batch, height, width)));
  for (const auto& [name, t] : graph->initializers) {
    MOGSERVE_RETURN_IF_ERROR(check("initializer '" + name + "'", t.shape));
  }
  StaticGraph s;
  s.graph_ = graph;
  s.input_ = input;
  s.height_ = height;
  s.width_ = width;
  s.values_[input.name] = Runtime(ValueKind::kFloat, input.Shape(batch, height, width));
  for (const auto& [name, t] : graph->initializers) s.values_[name] = Known(t);
  s.macs_.assign(graph->nodes.size(), 0);
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    const Node& node = graph->nodes[i];
    const auto op = OpTable().find(node.op_type);
    if (op == OpTable().end()) {
      return Unsupported(
          graph->file + ": node '" + node.name + "' is " + node.op_type +
          ", an operator mogserve does not import; supported: " + Join(SupportedOps()));
    }
    NodeContext context(node, graph->opset, s.values_);
    StatusOr<Result> result = op->second(context);
    if (!result.ok()) {
      return Status(result.status().code(), graph->file + ": " + result.status().message());
    }
    for (const StaticValue& v : result->outputs) {
      const bool negative = std::any_of(v.shape.begin(), v.shape.end(),
                                        [](int64_t d) { return d < 0 || d > kMaxValueElements; });
      if (negative || v.shape.size() > kMaxRank || Elements(v.shape) > kMaxValueElements) {
        return InvalidData(graph->file + ": node '" + node.name + "' (" + node.op_type +
                           ") would make a value of shape " + ShapeString(v.shape));
      }
    }
    const bool live = std::any_of(result->outputs.begin(), result->outputs.end(),
                                  [](const StaticValue& v) { return !v.constant; });
    if (live && FoldOnlyOps().count(node.op_type)) {
      return Unsupported(graph->file + ": node '" + node.name + "' (" + node.op_type +
                         ") computes on a value that depends on the image; mogserve computes " +
                         node.op_type + " only at load time");
    }
    if (live) s.live_.push_back(static_cast<int>(i));
    s.macs_[i] = result->macs;
    s.total_macs_ += result->macs;
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      if (node.outputs[k].empty()) continue;
      if (k >= result->outputs.size()) {
        return Unsupported(graph->file + ": node '" + node.name + "' (" + node.op_type +
                           ") output " + std::to_string(k) + " '" + node.outputs[k] +
                           "' is not computed by mogserve");
      }
      s.values_[node.outputs[k]] = std::move(result->outputs[k]);
    }
  }
  for (const ValueInfo& out : graph->outputs) {
    if (!s.values_.count(out.name)) {
      return InvalidData(graph->file + ": graph output '" + out.name + "' is never produced");
    }
  }
  return s;
}

}  // namespace mogserve::model::onnx
