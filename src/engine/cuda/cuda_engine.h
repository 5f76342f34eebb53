// The CUDA engine (specs/cuda_backend.md §3, §6): runs the Program (program.h) of each (canvas
// shape, padded batch) on one stream per instance — cuDNN convolutions, the kernels of
// kernels.h — eagerly the first time, then as a captured CUDA graph that includes the copies
// from and to pinned host staging. Instances share the device weights and the convolution
// algorithm choices; each owns its stream, cuDNN handle, buffers and graphs. Includes no CUDA
// header itself, but only src/engine/cuda/ may include it (the backend's internals).
#pragma once

#include <memory>

#include "engine/engine.h"
#include "model/face_model.h"
#include "mogserve/status.h"

namespace mogserve::engine::cuda {

// An engine on CUDA device `device_index` (already probed): the weights prepared for
// options.precision and copied to the device once. kResourceExhausted when they do not fit.
StatusOr<std::unique_ptr<Engine>> NewCudaEngine(const EngineOptions& options,
                                                std::shared_ptr<const model::FaceModel> model,
                                                EngineInfo info, int device_index);

}  // namespace mogserve::engine::cuda
