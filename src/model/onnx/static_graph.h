// An ONNX graph made static for one input shape: every value's shape, the values known at load
// time (initializers, Constant nodes, and whatever is computed from them and from shapes alone,
// such as the Shape -> Gather -> Concat -> Resize chains exporters write), and the multiply-
// accumulates of the nodes left to run. What remains is what the network plan must run; an
// operator outside the supported set is refused here, naming the node, the operator and the
// supported list. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/onnx/onnx_graph.h"

namespace mogserve::model::onnx {

struct StaticValue {
  ValueKind kind = ValueKind::kFloat;
  std::vector<int64_t> shape;
  std::optional<Tensor> constant;  // known at load time
};

// The operators the importer reads (sorted), and whether one is among them.
const std::vector<std::string>& SupportedOps();
bool IsSupportedOp(const std::string& op_type);

// The image input: the graph's one input of rank 4, float, [N, 3, H, W] or, as TensorFlow
// converts write it (BlazeFace), [N, H, W, 3]. Its declared dims, fixed (>= 0) or dynamic (-1).
struct ImageInput {
  std::string name;
  bool channels_last = false;  // [N, H, W, 3]
  int64_t batch = -1, channels = -1, height = -1, width = -1;
  std::vector<int64_t> Shape(int64_t n, int64_t h, int64_t w) const {
    return channels_last ? std::vector<int64_t>{n, h, w, 3} : std::vector<int64_t>{n, 3, h, w};
  }
  bool dynamic_size() const { return height < 0 || width < 0; }
};
// kUnsupported when the graph has no such input, or more than one input.
StatusOr<ImageInput> FindImageInput(const Graph& graph);

class StaticGraph {
 public:
  // The graph for a batch x 3 x height x width image (a fixed input's own size must be given).
  // Errors name the node: an unsupported operator (kUnsupported, with the supported list), shapes
  // that do not fit (kInvalidData), an attribute value the operator does not allow or mogserve
  // does not handle (kUnsupported: Resize's cubic mode, Pad's reflect mode on a runtime value...).
  static StatusOr<StaticGraph> Infer(std::shared_ptr<const Graph> graph, int64_t batch,
                                     int64_t height, int64_t width);

  const Graph& graph() const { return *graph_; }
  const ImageInput& input() const { return input_; }
  // The image size it was inferred for.
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  // Every value by name (graph inputs, initializers, node outputs).
  const StaticValue& value(const std::string& name) const { return values_.at(name); }
  bool has_value(const std::string& name) const { return values_.count(name) > 0; }
  // The nodes that must run (inputs not all known at load time), in graph order.
  const std::vector<int>& live_nodes() const { return live_; }
  int64_t macs(int node) const { return macs_[node]; }
  int64_t total_macs() const { return total_macs_; }

 private:
  std::shared_ptr<const Graph> graph_;
  ImageInput input_;
  int64_t height_ = 0, width_ = 0;
  std::map<std::string, StaticValue> values_;
  std::vector<int> live_;
  std::vector<int64_t> macs_;
  int64_t total_macs_ = 0;
};

}  // namespace mogserve::model::onnx
