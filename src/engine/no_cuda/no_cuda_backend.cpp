// A build without the CUDA backend (MOGSERVE_WITH_CUDA=OFF, or AUTO where nvcc or cuDNN is
// missing): CreateEngine reports that for a cuda device before loading anything.
#include "engine/cuda_backend.h"

namespace mogserve::engine {
namespace {

Status NoCudaBackend() {
  return Unsupported(
      "this build has no CUDA backend: mogserve was built with MOGSERVE_WITH_CUDA=OFF (or AUTO "
      "without nvcc and cudnn.h); configure with -DMOGSERVE_WITH_CUDA=ON where the CUDA toolkit "
      "and cuDNN 9 are installed");
}

}  // namespace

bool CudaBackendBuilt() {
  return false;
}

StatusOr<std::string> ProbeCudaDevice(int) {
  return NoCudaBackend();
}

StatusOr<std::unique_ptr<Engine>> CreateCudaEngine(const EngineOptions&,
                                                   std::shared_ptr<const model::FaceModel>,
                                                   EngineInfo) {
  return NoCudaBackend();
}

}  // namespace mogserve::engine
