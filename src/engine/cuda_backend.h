// The CUDA backend's entry points, free of CUDA and LibTorch headers. Defined in src/engine/cuda/
// (cuDNN + own kernels) in builds with MOGSERVE_WITH_CUDA, and in src/engine/no_cuda/ otherwise.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "model/face_model.h"
#include "mogserve/status.h"

namespace mogserve::engine {

// Whether this build has the CUDA backend.
bool CudaBackendBuilt();

// What the CUDA runtime found for device `index`: Ok with one line naming the device and the
// loaded cuDNN and cuBLAS versions (also logged), or the cause it cannot run: kUnavailable for
// no usable NVIDIA driver, no CUDA device, or a loaded cuDNN older than 9.0 or of another major
// version (one older than the headers this build was compiled with is only a logged warning);
// kInvalidArgument for an ordinal beyond the devices present or outside 0..9999; kUnsupported
// without the backend. Thread-safe; cheap after the first call (the runtime caches).
StatusOr<std::string> ProbeCudaDevice(int index);

// An engine running `model`'s network on the CUDA device of options.device; CreateEngine has
// probed the device. Without the backend: kUnsupported.
StatusOr<std::unique_ptr<Engine>> CreateCudaEngine(const EngineOptions& options,
                                                   std::shared_ptr<const model::FaceModel> model,
                                                   EngineInfo info);

}  // namespace mogserve::engine
