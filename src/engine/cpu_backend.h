// The CPU backend's entry points, torch-free. Defined in src/engine/torch/ (LibTorch/oneDNN) in
// builds with MOGSERVE_WITH_TORCH=ON, and in src/engine/no_torch/ otherwise (no CPU engine).
#pragma once

#include <memory>

#include "engine/engine.h"
#include "model/face_model.h"
#include "mogserve/status.h"

namespace mogserve::engine {

// Whether this build has the CPU backend.
bool CpuBackendBuilt();

// An engine running `model`'s network on the CPU. `info` carries the fields CreateEngine filled
// (model, weights, device, precision). The first call of the process initialises the backend's
// process-wide state from options.cpu (intra-op threads, the caching allocator); a later call
// with a different thread count fails with kFailedPrecondition. Without the backend:
// kUnsupported.
StatusOr<std::unique_ptr<Engine>> CreateCpuEngine(const EngineOptions& options,
                                                  std::shared_ptr<const model::FaceModel> model,
                                                  EngineInfo info);

}  // namespace mogserve::engine
