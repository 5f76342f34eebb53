// A Network instantiated for one input size: every tensor's shape, every op's resolved padding
// and multiply-accumulates, and tensor liveness (the last op that reads each tensor), which is
// what a backend needs to run the graph and to plan its buffers. Per image: the batch size is
// the backend's. Torch-free; immutable; cheap to build (one pass over the ops).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/network.h"
#include "mogserve/status.h"

namespace mogserve::model {

struct TensorShape {
  int channels = 0;
  int height = 0;
  int width = 0;
  int64_t elements() const { return int64_t{channels} * height * width; }
};

// Padding of one op after resolution (TF SAME depends on the input size).
struct ResolvedPadding {
  int top = 0, bottom = 0, left = 0, right = 0;
  bool symmetric() const { return top == bottom && left == right; }
};

class LayerPlan {
 public:
  // Shapes for an input_height x input_width input. kInvalidArgument when the network does not
  // accept that size (a fixed-size network at another size, a side < 1, a map shrunk to 0).
  static StatusOr<LayerPlan> Create(std::shared_ptr<const Network> network, int input_height,
                                    int input_width);

  const Network& network() const { return *network_; }
  const std::shared_ptr<const Network>& shared_network() const { return network_; }
  int input_height() const { return input_height_; }
  int input_width() const { return input_width_; }

  const TensorShape& shape(int tensor) const { return shapes_[tensor]; }
  const ResolvedPadding& padding(int op) const { return padding_[op]; }
  // Multiply-accumulates of op `op` for one image (convolutions; 0 for the rest).
  int64_t macs(int op) const { return macs_[op]; }
  int64_t total_macs() const { return total_macs_; }
  // The last op that reads `tensor`; ops().size() for tensors the output stage reads (levels
  // and raw outputs), -1 for tensors nothing reads.
  int last_use(int tensor) const { return last_use_[tensor]; }
  // Anchors (rows of the output stage) per image, and each output level's first anchor.
  int anchors() const { return anchors_; }
  int level_offset(int level) const { return level_offsets_[level]; }
  // Values of the raw outputs per image (network().raw_outputs(), each [H, W, C], in order), and
  // where raw output r starts.
  int64_t raw_floats() const { return raw_floats_; }
  int64_t raw_offset(int r) const { return raw_offsets_[r]; }
  // Every raw output's offset, then raw_floats(): what decoders are given (OutputRows).
  std::vector<int64_t> raw_bounds() const;

  // One line per op: "12 conv backbone.layer1.0.conv2 [64,160,160] <- 11 macs 943718400".
  std::string Dump() const;

 private:
  LayerPlan() = default;
  Status Resolve();
  Status ResolveOp(int index);

  std::shared_ptr<const Network> network_;
  int input_height_ = 0, input_width_ = 0;
  std::vector<TensorShape> shapes_;
  std::vector<ResolvedPadding> padding_;
  std::vector<int64_t> macs_;
  std::vector<int> last_use_;
  std::vector<int> level_offsets_;
  std::vector<int64_t> raw_offsets_;
  int64_t raw_floats_ = 0;
  int64_t total_macs_ = 0;
  int anchors_ = 0;
};

// TF SAME padding of one axis: (before, after) = (floor(total / 2), rest) with total =
// max((ceil(in / stride) − 1)·stride + kernel − in, 0).
void TfSamePadding(int in, int kernel, int stride, int* before, int* after);

}  // namespace mogserve::model
