// An ONNX graph, made static (static_graph.h), mapped onto the network plan: the nodes that run
// become plan ops (model/network.h), so every backend (the CPU one in FP32/BF16/INT8, CUDA, the
// FP64 reference), batching, buckets, memory planning and calibration run an imported detector as
// they run the built-in ones. Not a second runtime: what the plan cannot express is refused at
// load, naming the node.
//
// Mapping (graph order; a node's value becomes a plan tensor):
//   - the image input, through the Transpose (0, 3, 1, 2) an NHWC file starts with;
//   - Conv (grouped, dilated, explicit or SAME_UPPER/VALID pads; square kernels, equal strides)
//     with what follows it fused where the plan's conv takes it: BatchNormalization (folded in
//     FP64 by the weight preparation), one Add of a same-shaped tensor (the residual), then Relu
//     or Clip(0, 6) / Clip(0, +inf);
//   - MaxPool (square kernel, equal strides, explicit pads, floor mode);
//   - Resize / Upsample by 2 (nearest: source dst / 2 rounded down, as the node's own rule must
//     give at every index; bilinear: exactly x2, half-pixel) read only by an Add with a map of
//     its shape: the plan's upsample-add (an FPN's top-down path);
//   - Concat on the channel axis; a Concat whose trailing inputs are load-time zeros
//     (TensorFlow's Pad of channels, as BlazeFace's files write it: ConstantOfShape) becomes
//     pad-channels;
//   - Identity and Dropout: the same tensor.
// The outputs: each graph output is followed back through [Sigmoid | Softmax(last axis)],
// [Concat on the anchor axis], Reshape, Transpose (0, 2, 3, 1) to the convolutions that make it.
// Those tensors become the network's raw outputs (each image's [H, W, A·K] values, in order), and
// the graph output is exactly the concatenation of its levels' raw values, K per row, with the
// activation applied: OutputSource says which raw outputs and which activation.
// Torch-free.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/host_tensor.h"
#include "model/network.h"
#include "model/onnx/static_graph.h"
#include "mogserve/status.h"

namespace mogserve::model::onnx {

enum class OutputActivation { kNone, kSigmoid, kSoftmax };

// One graph output in terms of the network's raw outputs: raw outputs first_raw ..
// first_raw + raw_count − 1 (its levels, in the output's anchor order), `width` values per
// anchor row, the activation applied to each row.
struct OutputSource {
  std::string name;  // the graph output's name
  int first_raw = 0;
  int raw_count = 0;
  int width = 0;
  OutputActivation activation = OutputActivation::kNone;
};

struct ImportedNetwork {
  std::shared_ptr<const Network> network;
  HostTensorMap weights;              // the keys the network's convolutions read
  std::vector<OutputSource> outputs;  // in the graph's output order
};

// What the family says of its input that the file does not.
struct ImportOptions {
  // The file takes B, G, R planes (OpenCV's families: blobFromImage without swapRB): the input
  // channels of the convolutions that read the image are reversed, so the plan's RGB canvas
  // feeds them. The image must be read by ungrouped convolutions only (refused otherwise).
  bool bgr_input = false;
  // A fixed input runs at other sizes too (OpenCV's FaceDetectorYN sets the input shape to the
  // picture's): the network gets no fixed side.
  bool any_size = false;
};

// Maps `graph` (inferred at any size: the network is the same at every size) onto a network named
// `name`, with the input normalisation `normalization` (the family's; the file does not say).
// A fixed square input becomes the network's fixed side (unless options.any_size). Errors:
// kUnsupported naming the node and what the plan does not take (an operator that is read but not
// mapped, a rectangular kernel, a Clip other than ReLU/ReLU6, an output that is not a chain of
// the form above).
StatusOr<ImportedNetwork> ImportNetwork(const StaticGraph& graph, const std::string& name,
                                        const InputNormalization& normalization,
                                        const ImportOptions& options = {});

// One image's graph output `source` rebuilt from its raw values (BatchOutputs::raw_of, or the
// reference executor's): rows of `width` values, activation applied. raw_offsets: where each raw
// output starts in `raw`, and the end (LayerPlan::raw_bounds()).
std::vector<float> GraphOutput(const OutputSource& source, std::span<const float> raw,
                               std::span<const int64_t> raw_offsets);

}  // namespace mogserve::model::onnx
