// An ONNX model as read from its file, free of protobuf: the graph's inputs and outputs, its
// constant tensors (initializers and Constant nodes' values stay in the nodes), and its nodes with
// their attributes, in file order. onnx_reader.cpp is the only file that sees the generated
// protobuf classes; everything after it (shape inference, constant folding, family detection,
// the import into the network plan) works on this. Torch-free; immutable once read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mogserve/status.h"

namespace mogserve::model::onnx {

// What a tensor's elements are, once read: floating-point types (float, double, float16,
// bfloat16) become float32, integer and boolean types int64.
enum class ValueKind { kFloat, kInt };

// The ONNX element type (TensorProto.DataType) as its name, "FLOAT", "INT64", ... ("type N" for
// numbers the reader does not know).
std::string DataTypeName(int data_type);

// A constant tensor (an initializer, a Constant node's value, a folded result).
struct Tensor {
  ValueKind kind = ValueKind::kFloat;
  int data_type = 1;           // TensorProto.DataType as stored (1 FLOAT, 7 INT64, ...)
  std::vector<int64_t> shape;  // {} for a scalar
  std::vector<float> floats;   // kFloat
  std::vector<int64_t> ints;   // kInt
  int64_t elements() const;
};

// One dimension of a graph input's or output's declared shape.
struct Dim {
  int64_t value = -1;  // >= 0 when fixed; -1 when symbolic or missing
  std::string symbol;  // the dim_param, e.g. "batch" or "?" ("" when fixed or unnamed)
  bool fixed() const { return value >= 0; }
};

struct ValueInfo {
  std::string name;
  int data_type = 0;  // 0: not declared
  bool has_shape = false;
  std::vector<Dim> dims;
};

struct Attribute {
  enum class Type { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings, kOther };
  Type type = Type::kOther;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::optional<Tensor> t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string op_type;
  std::string domain;  // "" or "ai.onnx" for the standard operators
  std::string name;    // may be empty in the file; Graph::Read names such nodes "<op>#<index>"
  std::vector<std::string> inputs;  // "" for an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;

  const Attribute* Find(const std::string& attribute) const;
  int64_t Int(const std::string& attribute, int64_t fallback) const;
  float Float(const std::string& attribute, float fallback) const;
  std::string String(const std::string& attribute, const std::string& fallback) const;
  std::vector<int64_t> Ints(const std::string& attribute) const;  // {} when absent
};

struct Graph {
  std::string file;  // as given to ReadModel, for messages
  int64_t ir_version = 0;
  int64_t opset = 0;     // the default ("" / "ai.onnx") domain's version
  std::string producer;  // "pytorch 1.13.0", ...
  std::string name;
  std::vector<ValueInfo> inputs;  // real inputs only (initializers listed as inputs dropped)
  std::vector<ValueInfo> outputs;
  std::map<std::string, Tensor> initializers;
  std::vector<Node> nodes;  // topologically ordered (the reader checks)
};

// Limits of what a model file may make the reader allocate: a file larger than this is refused
// before it is read, and so is an external-data file.
inline constexpr int64_t kMaxModelBytes = int64_t{2} << 30;

// Reads an ONNX model file: the protobuf, then external data files (location relative to the
// model's folder, offset, length) for tensors stored outside it. Errors name the file and say
// what is wrong: kNotFound (no file), kInvalidData (not a protobuf ModelProto, truncated, a graph
// whose nodes read values nothing produces or are not in topological order, a tensor whose bytes
// do not match its shape), kUnsupported (an opset outside 9-17, an element type other than the
// float and integer ones, a sparse or string initializer, a node of another domain).
StatusOr<Graph> ReadModel(const std::string& path);
// The same from bytes in memory (external data is then resolved against `folder`).
StatusOr<Graph> ParseModel(const std::string& bytes, const std::string& display_name,
                           const std::string& folder);

inline constexpr int64_t kMinOpset = 9;
inline constexpr int64_t kMaxOpset = 17;

}  // namespace mogserve::model::onnx
