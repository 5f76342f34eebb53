// The one file that sees the protobuf classes generated from Debian's onnx.proto (libonnx-dev):
// ModelProto -> onnx::Graph.
#include <onnx.pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "model/element_type.h"
#include "model/host_tensor.h"
#include "model/onnx/onnx_graph.h"

namespace mogserve::model::onnx {
namespace {

using ::onnx::AttributeProto;
using ::onnx::TensorProto;

std::optional<ElementType> ElementTypeOf(int data_type) {
  switch (data_type) {
    case TensorProto::FLOAT:
      return ElementType::kF32;
    case TensorProto::UINT8:
      return ElementType::kU8;
    case TensorProto::INT8:
      return ElementType::kI8;
    case TensorProto::INT16:
      return ElementType::kI16;
    case TensorProto::INT32:
      return ElementType::kI32;
    case TensorProto::INT64:
      return ElementType::kI64;
    case TensorProto::BOOL:
      return ElementType::kBool;
    case TensorProto::FLOAT16:
      return ElementType::kF16;
    case TensorProto::DOUBLE:
      return ElementType::kF64;
    case TensorProto::BFLOAT16:
      return ElementType::kBF16;
    default:
      return std::nullopt;
  }
}

// A little-endian integer or boolean element, exactly.
int64_t IntegerAt(ElementType type, const uint8_t* p) {
  switch (type) {
    case ElementType::kI64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case ElementType::kI32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case ElementType::kI16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case ElementType::kI8:
      return static_cast<int8_t>(*p);
    case ElementType::kBool:
      return *p != 0;
    default:
      return *p;  // kU8
  }
}

bool IsFloatType(ElementType t) {
  return t == ElementType::kF32 || t == ElementType::kF16 || t == ElementType::kBF16 ||
         t == ElementType::kF64;
}

// Reads `length` bytes at `offset` of an external-data file, `location` relative to `folder`
// (no absolute paths, no "..": a model must not read files outside its folder).
StatusOr<std::string> ReadExternal(const TensorProto& t, const std::string& folder) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& e : t.external_data()) {
    try {
      if (e.key() == "location") location = e.value();
      if (e.key() == "offset") offset = std::stoll(e.value());
      if (e.key() == "length") length = std::stoll(e.value());
    } catch (const std::exception&) {
      return InvalidData("external data of tensor '" + t.name() + "': " + e.key() + " '" +
                         e.value() + "' is not a number");
    }
  }
  const std::filesystem::path rel(location);
  if (location.empty() || rel.is_absolute() ||
      std::any_of(rel.begin(), rel.end(), [](const auto& part) { return part == ".."; })) {
    return InvalidData("external data of tensor '" + t.name() + "': location '" + location +
                       "' must be a file name relative to the model's folder");
  }
  const std::filesystem::path path = std::filesystem::path(folder) / rel;
  std::error_code ec;
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (ec)
    return NotFound("external data of tensor '" + t.name() + "': " + path.string() + ": " +
                    ec.message());
  if (offset < 0 || offset > size)
    length = -1;
  else if (length < 0)
    length = size - offset;
  if (offset < 0 || length < 0 || offset > size || length > size - offset ||
      length > kMaxModelBytes) {
    return InvalidData("external data of tensor '" + t.name() + "': bytes " +
                       std::to_string(offset) + "+" + std::to_string(length) + " outside " +
                       path.string() + " (" + std::to_string(size) + " bytes)");
  }
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  std::string bytes(static_cast<size_t>(length), '\0');
  if (!in.read(bytes.data(), length)) return InvalidData("cannot read " + path.string());
  return bytes;
}

StatusOr<Tensor> ToTensor(const TensorProto& t, const std::string& folder) {
  const std::string what = "tensor '" + t.name() + "'";
  const std::optional<ElementType> type = ElementTypeOf(t.data_type());
  if (!type) {
    return Unsupported(what + " has element type " + DataTypeName(t.data_type()) +
                       "; supported: FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT64, INT32, INT16, "
                       "INT8, UINT8, BOOL");
  }
  if (t.has_segment()) return Unsupported(what + " is a segment of a tensor");
  Tensor out;
  out.data_type = t.data_type();
  out.kind = IsFloatType(*type) ? ValueKind::kFloat : ValueKind::kInt;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > kMaxModelBytes / d)) {
      return InvalidData(what + " has shape " + ShapeString({t.dims().begin(), t.dims().end()}));
    }
    out.shape.push_back(d);
    n *= d;
  }
  // Sizes are checked against the bytes or values the file holds before anything is allocated,
  // so a file cannot make the reader allocate more than it holds.
  auto resize = [&] {
    (out.kind == ValueKind::kFloat ? out.floats.resize(n) : out.ints.resize(n));
  };
  auto put = [&](int64_t i, double v) {
    if (out.kind == ValueKind::kFloat)
      out.floats[i] = static_cast<float>(v);
    else
      out.ints[i] = static_cast<int64_t>(v);
  };
  const bool external = t.data_location() == TensorProto::EXTERNAL;
  if (external || t.has_raw_data()) {
    std::string external_bytes;
    if (external) {
      MOGSERVE_ASSIGN_OR_RETURN(external_bytes, ReadExternal(t, folder));
    }
    const std::string& raw = external ? external_bytes : t.raw_data();
    const int bytes = ElementBytes(*type);
    if (static_cast<int64_t>(raw.size()) != n * bytes) {
      return InvalidData(what + " holds " + std::to_string(raw.size()) + " bytes; its shape " +
                         ShapeString(out.shape) + " of " + DataTypeName(t.data_type()) + " needs " +
                         std::to_string(n * bytes));
    }
    resize();
    const auto* p = reinterpret_cast<const uint8_t*>(raw.data());
    for (int64_t i = 0; i < n; ++i) {
      if (out.kind == ValueKind::kInt) {
        out.ints[i] = IntegerAt(*type, p + i * bytes);  // exact beyond float's 24 bits
      } else {
        put(i, ElementToFloat(*type, p + i * bytes));
      }
    }
    return out;
  }
  // Typed fields: float_data (FLOAT), double_data (DOUBLE), int64_data (INT64), int32_data (the
  // rest: INT32 and narrower integers, BOOL, and FLOAT16/BFLOAT16 as their 16 bits).
  int64_t stored = 0;
  switch (*type) {
    case ElementType::kF32:
      stored = t.float_data_size();
      break;
    case ElementType::kF64:
      stored = t.double_data_size();
      break;
    case ElementType::kI64:
      stored = t.int64_data_size();
      break;
    default:
      stored = t.int32_data_size();
      break;
  }
  if (stored != n) {
    return InvalidData(what + " holds " + std::to_string(stored) + " values; its shape " +
                       ShapeString(out.shape) + " needs " + std::to_string(n));
  }
  resize();
  for (int64_t i = 0; i < n; ++i) {
    switch (*type) {
      case ElementType::kF32:
        put(i, t.float_data(static_cast<int>(i)));
        break;
      case ElementType::kF64:
        put(i, t.double_data(static_cast<int>(i)));
        break;
      case ElementType::kI64:
        out.ints[i] = t.int64_data(static_cast<int>(i));
        break;
      case ElementType::kF16:
      case ElementType::kBF16: {
        const auto bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
        uint8_t le[2] = {static_cast<uint8_t>(bits & 0xff), static_cast<uint8_t>(bits >> 8)};
        put(i, ElementToFloat(*type, le));
        break;
      }
      default:
        put(i, t.int32_data(static_cast<int>(i)));
        break;
    }
  }
  return out;
}

StatusOr<Attribute> ToAttribute(const AttributeProto& a, const std::string& folder) {
  Attribute out;
  switch (a.type()) {
    case AttributeProto::FLOAT:
      out.type = Attribute::Type::kFloat;
      out.f = a.f();
      break;
    case AttributeProto::INT:
      out.type = Attribute::Type::kInt;
      out.i = a.i();
      break;
    case AttributeProto::STRING:
      out.type = Attribute::Type::kString;
      out.s = a.s();
      break;
    case AttributeProto::TENSOR: {
      out.type = Attribute::Type::kTensor;
      MOGSERVE_ASSIGN_OR_RETURN(Tensor t, ToTensor(a.t(), folder));
      out.t = std::move(t);
      break;
    }
    case AttributeProto::FLOATS:
      out.type = Attribute::Type::kFloats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case AttributeProto::INTS:
      out.type = Attribute::Type::kInts;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case AttributeProto::STRINGS:
      out.type = Attribute::Type::kStrings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    default:
      out.type = Attribute::Type::kOther;
      break;  // graphs, sparse tensors: never read
  }
  return out;
}

ValueInfo ToValueInfo(const ::onnx::ValueInfoProto& v) {
  ValueInfo out;
  out.name = v.name();
  if (!v.type().has_tensor_type()) return out;
  const auto& tt = v.type().tensor_type();
  out.data_type = tt.elem_type();
  out.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim()) {
    Dim dim;
    if (d.has_dim_value() && d.dim_value() >= 0)
      dim.value = d.dim_value();
    else
      dim.symbol = d.has_dim_param() ? d.dim_param() : "?";
    out.dims.push_back(dim);
  }
  return out;
}

// Every node input must be a graph input, an initializer or an earlier node's output.
Status CheckTopologicalOrder(const Graph& g) {
  std::set<std::string> known;
  for (const ValueInfo& v : g.inputs) known.insert(v.name);
  for (const auto& [name, t] : g.initializers) known.insert(name);
  for (const Node& n : g.nodes) {
    for (const std::string& in : n.inputs) {
      if (!in.empty() && !known.count(in)) {
        return InvalidData("node '" + n.name + "' (" + n.op_type + ") reads '" + in +
                           "', which no graph input, initializer or earlier node provides");
      }
    }
    for (const std::string& out : n.outputs) {
      if (!out.empty()) known.insert(out);
    }
  }
  for (const ValueInfo& v : g.outputs) {
    if (!known.count(v.name)) {
      return InvalidData("graph output '" + v.name + "' is produced by no node");
    }
  }
  return Status::Ok();
}

StatusOr<Graph> Convert(const ::onnx::ModelProto& m, const std::string& folder) {
  Graph g;
  g.ir_version = m.ir_version();
  g.producer = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  bool has_default_domain = false;
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      g.opset = o.version();
      has_default_domain = true;
    }
  }
  if (!m.has_graph() || m.graph().node_size() == 0) {
    return InvalidData("not an ONNX model: no graph with nodes (a ModelProto has one)");
  }
  if (!has_default_domain && m.ir_version() >= 3) {
    return InvalidData("the model imports no version of the standard operator set");
  }
  if (!has_default_domain) g.opset = 1;  // IR < 3: no opset_import; the first operator set
  if (g.opset < kMinOpset || g.opset > kMaxOpset) {
    return Unsupported("operator set version " + std::to_string(g.opset) +
                       "; supported: " + std::to_string(kMinOpset) + " to " +
                       std::to_string(kMaxOpset) + " (re-export with opset_version in that range)");
  }
  const ::onnx::GraphProto& gp = m.graph();
  g.name = gp.name();
  if (gp.sparse_initializer_size() > 0) return Unsupported("sparse initializers");
  for (const TensorProto& t : gp.initializer()) {
    MOGSERVE_ASSIGN_OR_RETURN(Tensor tensor, ToTensor(t, folder));
    g.initializers[t.name()] = std::move(tensor);
  }
  for (const auto& v : gp.input()) {
    if (!g.initializers.count(v.name())) g.inputs.push_back(ToValueInfo(v));
  }
  for (const auto& v : gp.output()) g.outputs.push_back(ToValueInfo(v));
  for (int i = 0; i < gp.node_size(); ++i) {
    const ::onnx::NodeProto& np = gp.node(i);
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain();
    n.name = np.name().empty() ? n.op_type + "#" + std::to_string(i) : np.name();
    if (!n.domain.empty() && n.domain != "ai.onnx") {
      return Unsupported("node '" + n.name + "' is " + n.domain + "::" + n.op_type +
                         ", an operator outside the standard domain");
    }
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (const AttributeProto& a : np.attribute()) {
      StatusOr<Attribute> attr = ToAttribute(a, folder);
      if (!attr.ok()) {
        return Status(attr.status().code(), "node '" + n.name + "' attribute " + a.name() + ": " +
                                                attr.status().message());
      }
      n.attributes[a.name()] = std::move(*attr);
    }
    g.nodes.push_back(std::move(n));
  }
  MOGSERVE_RETURN_IF_ERROR(CheckTopologicalOrder(g));
  return g;
}

Status Prefixed(const std::string& file, const Status& s) {
  return Status(s.code(), file + ": " + s.message());
}

}  // namespace

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string DataTypeName(int data_type) {
  if (TensorProto::DataType_IsValid(data_type)) {
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(data_type));
  }
  return "type " + std::to_string(data_type);
}

const Attribute* Node::Find(const std::string& attribute) const {
  const auto it = attributes.find(attribute);
  return it == attributes.end() ? nullptr : &it->second;
}

int64_t Node::Int(const std::string& attribute, int64_t fallback) const {
  const Attribute* a = Find(attribute);
  return a != nullptr && a->type == Attribute::Type::kInt ? a->i : fallback;
}

float Node::Float(const std::string& attribute, float fallback) const {
  const Attribute* a = Find(attribute);
  return a != nullptr && a->type == Attribute::Type::kFloat ? a->f : fallback;
}

std::string Node::String(const std::string& attribute, const std::string& fallback) const {
  const Attribute* a = Find(attribute);
  return a != nullptr && a->type == Attribute::Type::kString ? a->s : fallback;
}

std::vector<int64_t> Node::Ints(const std::string& attribute) const {
  const Attribute* a = Find(attribute);
  return a != nullptr && a->type == Attribute::Type::kInts ? a->ints : std::vector<int64_t>{};
}

StatusOr<Graph> ParseModel(const std::string& bytes, const std::string& display_name,
                           const std::string& folder) {
  ::onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) {
    return InvalidData(display_name +
                       ": not an ONNX model (the bytes are not a protobuf "
                       "ModelProto, or the file is truncated)");
  }
  StatusOr<Graph> g = Convert(m, folder);
  if (!g.ok()) return Prefixed(display_name, g.status());
  g->file = display_name;
  return g;
}

StatusOr<Graph> ReadModel(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return NotFound(path + ": no such ONNX file");
  }
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (ec || size > kMaxModelBytes) {
    return ResourceExhausted(path + ": " + std::to_string(size) + " bytes; ONNX files up to " +
                             std::to_string(kMaxModelBytes >> 20) +
                             " MiB are read (larger models keep weights in external data)");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof()) return InvalidData(path + ": cannot be read");
  const std::string folder = std::filesystem::path(path).parent_path().string();
  return ParseModel(bytes.str(), path, folder.empty() ? "." : folder);
}

}  // namespace mogserve::model::onnx
