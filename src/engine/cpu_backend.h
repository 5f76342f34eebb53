// The CPU backend's entry points, torch-free. Defined in src/engine/torch/ (LibTorch/oneDNN) in
// builds with MOGSERVE_WITH_TORCH=ON, and in src/engine/no_torch/ otherwise (no CPU engine).
#pragma once

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "model/activation_scales.h"
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

// INT8 calibration: runs `model` in FP32 on the CPU (options.cpu's threads) over each batch and
// adds the values of every tensor an INT8 convolution reads or writes
// (model::CalibratedTensors) to `histograms`, one per network tensor (sized here when empty).
// Without the backend: kUnsupported.
Status CollectActivationHistograms(const EngineOptions& options,
                                   std::shared_ptr<const model::FaceModel> model,
                                   const std::vector<CanvasBatch>& batches,
                                   std::vector<model::ActivationHistogram>* histograms);

}  // namespace mogserve::engine
