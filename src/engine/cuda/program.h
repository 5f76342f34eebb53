// One forward pass of a LayerPlan at one batch size and storage type, lowered to the steps the
// device runs: each step one kernel launch or cuDNN call, with its arena offsets and shapes.
// Plain C++ (no CUDA headers): built and checked on any machine. The CUDA engine enqueues the
// steps in order on one stream (cuda_engine.cpp), eagerly or captured into a CUDA graph; the host
// tests run the very same steps on the host (tests/engine/cuda/host_program.h) against the FP64
// reference executor, which proves the lowering (offsets, in-place rules, padding channels,
// concat offsets, explicit padding, the output stage) without a GPU.
//
// Lowering of the plan's ops (specs/cuda_backend.md §4):
//   - pre-processing: one step, canvases (uint8, at a device address of their own) → input
//     tensor with DeviceChannels(3) channels;
//   - conv: one step (cuDNN: conv + bias [+ residual] + ReLU or identity); ReLU6 adds a clamp
//     step; TF SAME padding that is not symmetric (stride 2 on even sizes: 0 before, 1 after)
//     is made explicit by a pad step into the op's scratch buffer, the conv then pads nothing
//     (cuDNN's legacy API pads symmetrically only);
//   - max-pool, upsample-add: one step each; GroupNorm: a statistics and an apply step;
//   - concat: one copy step per input, the last also zeroing the output's padding channels;
//     pad-channels: one such step (its input, then zeros);
//   - output stage: one step per output level into the FP32 conf/loc outputs, one per raw
//     output into the FP32 raw rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/arena.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/kernel_math.h"
#include "model/layer_plan.h"
#include "mogserve/status.h"

namespace mogserve::engine::cuda {

// The shapes and parameters of one convolution as the device runs it (device channels).
struct ConvGeometry {
  int batch = 0;
  int in_channels = 0, in_h = 0, in_w = 0;
  int out_channels = 0, out_h = 0, out_w = 0;
  int kernel = 1, stride = 1, dilation = 1, groups = 1;
  model::ResolvedPadding padding;
  bool residual = false;
  model::Activation act = model::Activation::kNone;
};
// Conv op `op` of a plan at batch `batch`, with the plan's padding. kInvalidArgument when `op`
// is not a convolution of the plan or batch < 1.
StatusOr<ConvGeometry> ConvGeometryOf(const model::LayerPlan& plan, int op, int batch);

enum class StepKind {
  kPreprocess,
  kPad,  // zero border: in (in_shape) → out (out_shape) at row pad_top, column pad_left
  kConv,
  kClamp,
  kMaxPool,
  kGroupNormStats,
  kGroupNormApply,
  kUpsampleAdd,
  kCopyChannels,
  kOutputLevel,
  kRawOutput,  // in's real channels (channels of in_shape.c) → FP32 rows [n][raw_offset + ...]
};
const char* StepKindName(StepKind kind);

// Offsets are bytes into the arena (−1: unused). Fields not named for a kind are unused.
struct Step {
  StepKind kind = StepKind::kConv;
  int op = -1;  // the plan op it runs; −1 for the pre-processing and the output stage
  int64_t in = -1;
  // kConv: the residual z (shape out_shape); kUpsampleAdd: the lateral (out_shape);
  // kOutputLevel: the box map (in2_shape).
  int64_t in2 = -1;
  int64_t out = -1;  // kOutputLevel: unused (the FP32 outputs are outside the arena)
  NhwcShape in_shape, in2_shape, out_shape;
  ConvGeometry conv;  // kConv, act kNone or kRelu (ReLU6 is ReLU then a kClamp step)
  int def = -1;       // kConv: ConvDef index; kGroupNorm*: NormDef index
  int kernel = 1, stride = 1, pad_top = 0, pad_left = 0;  // kMaxPool; kPad: pad_top, pad_left
  int channels = 0;  // kGroupNorm*: the real channels; kCopyChannels: channels copied
  int groups = 1;
  float eps = 0.0f;
  int act = kActNone;          // kGroupNormApply
  int channel_offset = 0;      // kCopyChannels
  bool last_input = false;     // kCopyChannels
  bool nearest = false;        // kUpsampleAdd: nearest instead of bilinear
  float lo = 0.0f, hi = 0.0f;  // kClamp over out_shape.elements() values at `out`
  // kOutputLevel
  int score_channel = 0, box_channel = 0, anchors_per_cell = 1, level_offset = 0;
  int64_t raw_offset = 0;  // kRawOutput: where this output starts in an image's raw values
};

struct Program {
  int batch = 0;
  int height = 0, width = 0;  // the canvas
  StorageType type = StorageType::kF32;
  ArenaPlan arena;
  std::vector<Step> steps;
  int anchors = 0;                  // output rows per image
  int64_t raw_floats = 0;           // raw output values per image (LayerPlan::raw_floats)
  std::vector<int64_t> raw_bounds;  // LayerPlan::raw_bounds
  // The most groups of any GroupNorm (0: none): the statistics buffer holds 2 · batch · this
  // floats, the workspace GroupNormWorkspaceBytes(batch, this).
  int max_norm_groups = 0;
  PreprocessParams preprocess;

  int64_t canvas_bytes() const { return int64_t{batch} * height * width * 3; }
  int64_t conf_floats() const { return int64_t{batch} * anchors; }
  int64_t loc_floats() const { return conf_floats() * 4; }
  int64_t raw_total_floats() const { return int64_t{batch} * raw_floats; }
};

// "[n,h,w,c]", for errors.
std::string ShapeText(const NhwcShape& s);

PreprocessParams PreprocessParamsOf(const model::InputNormalization& normalization);

// The steps of `plan` at `batch` images stored as `type`. kInvalidArgument for batch < 1 or an
// op the lowering does not know; the arena is planned for one stream in op order.
StatusOr<Program> BuildProgram(const model::LayerPlan& plan, int batch, StorageType type);

}  // namespace mogserve::engine::cuda
