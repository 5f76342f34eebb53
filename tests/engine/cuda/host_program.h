// Runs a Program (engine/cuda/program.h) on the host, step by step, as the device does: one
// byte arena of program.arena.total_bytes at the planned offsets, values stored in the
// program's storage type (FP16/BF16 rounded to nearest even at every store, as the kernels and
// cuDNN do), FP32 element functions of kernel_math.h, convolutions accumulated in FP64 over
// the KRSC device weights. The arena starts as NaN bytes (arena memory is reused and never
// cleared on the device), so a step that reads what no step wrote — a wrong offset, two live
// tensors sharing bytes, an unwritten padding channel — turns outputs into NaN. Tests only.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/cuda/device_weights.h"
#include "engine/cuda/program.h"
#include "mogserve/status.h"

namespace mogserve::engine::cuda {

struct HostProgramOutputs {
  std::vector<float> conf;  // [batch, anchors]
  std::vector<float> loc;   // [batch, anchors, 4]
  std::vector<float> raw;   // [batch, raw_floats]
};

// canvases: program.batch pictures of height x width x 3 bytes; picture_size: per canvas the
// picture's (width, height). kInvalidArgument when the inputs do not fit the program, or a
// step reads or writes outside the arena.
StatusOr<HostProgramOutputs> RunProgramOnHost(const Program& program, const DeviceWeights& weights,
                                              const std::vector<std::vector<uint8_t>>& canvases,
                                              const std::vector<int>& picture_size);

}  // namespace mogserve::engine::cuda
