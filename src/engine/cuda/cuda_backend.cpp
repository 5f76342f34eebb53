// The CUDA backend's entry points (engine/cuda_backend.h): the device probe, and the engine
// factory (the engine itself: cuda_engine.h).
#include "engine/cuda_backend.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/cuda/cuda_engine.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/cudnn_version.h"

namespace mogserve::engine {
namespace {

// cuBLAS's version number (major·10000 + minor·100 + patch since 12.x) as "13.1.0".
std::string CublasVersionText(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

// The device count, or why the runtime has none: the runtime reports a missing libcuda.so or
// kernel module, or a driver too old for CUDA 13, as cudaErrorInsufficientDriver, a driver
// without GPUs as cudaErrorNoDevice.
StatusOr<int> CountDevices() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorInsufficientDriver) {
    return Unavailable(
        "no usable NVIDIA driver (missing, or older than 580 which CUDA 13 needs): "
        "cudaGetDeviceCount: " +
        CudaErrorText(err) + "; install NVIDIA driver 580 or newer, or use --device cpu");
  }
  if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
    return Unavailable("no CUDA device: the NVIDIA driver is loaded but reports no GPU (" +
                       CudaErrorText(err) + "); use --device cpu");
  }
  if (err != cudaSuccess) {
    return Unavailable("the CUDA runtime cannot start (cudaGetDeviceCount: " + CudaErrorText(err) +
                       ")");
  }
  return count;
}

// The loaded cuDNN against the headers (cudnn_version.h): a warning is logged, a refusal returned.
Status CheckCudnnVersion() {
  MOGSERVE_ASSIGN_OR_RETURN(const std::string warning,
                            cuda::CheckCudnnVersion(cudnnGetVersion(), CUDNN_VERSION));
  if (!warning.empty()) spdlog::warn("{}", warning);
  return Status::Ok();
}

StatusOr<std::string> Probe(int index) {
  MOGSERVE_ASSIGN_OR_RETURN(const int count, CountDevices());
  if (index >= count) {
    return InvalidArgument("device 'cuda:" + std::to_string(index) + "' does not exist: this " +
                           "machine has " + std::to_string(count) + " CUDA device" +
                           (count == 1 ? "" : "s") +
                           " (cuda:0 to cuda:" + std::to_string(count - 1) + ")");
  }
  MOGSERVE_RETURN_IF_ERROR(CheckCudnnVersion());
  cudaDeviceProp prop{};
  MOGSERVE_RETURN_IF_ERROR(
      CudaCall(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties"));
  const std::string text = "cuda:" + std::to_string(index) + " " + prop.name +
                           " (compute capability " + std::to_string(prop.major) + "." +
                           std::to_string(prop.minor) + ", " +
                           std::to_string(prop.totalGlobalMem >> 20) + " MiB), cuDNN " +
                           cuda::CudnnVersionText(cudnnGetVersion()) + " (compiled with " +
                           cuda::CudnnVersionText(CUDNN_VERSION) + "), cuBLASLt " +
                           CublasVersionText(cublasLtGetVersion());
  spdlog::info("CUDA device: {}", text);
  return text;
}

}  // namespace

bool CudaBackendBuilt() {
  return true;
}

StatusOr<std::string> ProbeCudaDevice(int index) {
  // ParseDevice allows up to 9999; the cap keeps `index + 1` below from overflowing.
  if (index < 0 || index > 9999) return InvalidArgument("a CUDA ordinal must be 0 to 9999");
  // The answer cannot change within a process (the runtime caches its first initialisation),
  // and the log line should appear once, not once per engine instance.
  static std::mutex mutex;
  static std::vector<std::optional<StatusOr<std::string>>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (static_cast<size_t>(index) >= cache.size()) cache.resize(index + 1);
  if (!cache[index].has_value()) cache[index].emplace(Probe(index));
  return *cache[index];
}

StatusOr<std::unique_ptr<Engine>> CreateCudaEngine(const EngineOptions& options,
                                                   std::shared_ptr<const model::FaceModel> model,
                                                   EngineInfo info) {
  MOGSERVE_ASSIGN_OR_RETURN(const DeviceSpec device, ParseDevice(options.device));
  return cuda::NewCudaEngine(options, std::move(model), std::move(info), device.index);
}

}  // namespace mogserve::engine
