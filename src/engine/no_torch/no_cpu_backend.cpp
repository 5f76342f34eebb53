// A build without LibTorch (MOGSERVE_WITH_TORCH=OFF): no CPU backend. CreateEngine reports that
// before loading anything; the allocator, the conv peak and the version report nothing.
#include "engine/caching_cpu_allocator.h"
#include "engine/conv_peak.h"
#include "engine/cpu_backend.h"
#include "engine/torch_version.h"

namespace mogserve::engine {

bool CpuBackendBuilt() {
  return false;
}

StatusOr<std::unique_ptr<Engine>> CreateCpuEngine(const EngineOptions&,
                                                  std::shared_ptr<const model::FaceModel>,
                                                  EngineInfo) {
  return Unsupported("this build has no CPU engine (MOGSERVE_WITH_TORCH=OFF)");
}

Status CollectActivationHistograms(const EngineOptions&, std::shared_ptr<const model::FaceModel>,
                                   const std::vector<CanvasBatch>&,
                                   std::vector<model::ActivationHistogram>*) {
  return Unsupported("this build has no CPU engine (MOGSERVE_WITH_TORCH=OFF) to calibrate with");
}

void InstallCachingCpuAllocator(int64_t) {}
int64_t ReleaseCachedCpuMemory() {
  return 0;
}
bool CachingCpuAllocatorInstalled() {
  return false;
}
AllocatorStats GetAllocatorStats() {
  return {};
}
void ResetPeakAllocatorStats() {}

StatusOr<ConvPeak> MeasureConv3x3Peak(double, Precision) {
  return ConvPeak{};
}

std::string TorchVersion() {
  return "none";
}

}  // namespace mogserve::engine
