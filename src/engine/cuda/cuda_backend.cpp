// The CUDA backend's entry points (engine/cuda_backend.h): the device probe, and the engine
// factory, which stops at kUnimplemented until the executor (cuDNN convolutions, kernels.cu,
// arena, CUDA graphs) is written.
#include "engine/cuda_backend.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/cuda/cuda_status.h"

namespace mogserve::engine {
namespace {

// cuDNN's version number as "9.19.0": major·10000 + minor·100 + patch since 9.0, major·1000 +
// minor·100 + patch before.
std::string CudnnVersionText(size_t v) {
  const size_t major = v >= 90000 ? v / 10000 : v / 1000;
  const size_t minor = v >= 90000 ? v / 100 % 100 : v / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

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

// The oldest cuDNN whose API the backend calls (cudnnGetLastErrorString, the v9 legacy
// convolution API): 9.0.0.
constexpr size_t kOldestCudnn = 90000;

// cuDNN's minor releases are only backward compatible, but the backend calls nothing newer than
// 9.0: a library older than the headers (the pip wheel next to PyTorch may lag behind the
// development headers) is logged as a warning (specs/cuda_backend.md §8.1), and only a library
// older than 9.0 or of another major version is refused.
Status CheckCudnnVersion() {
  const size_t loaded = cudnnGetVersion();
  if (loaded < kOldestCudnn || loaded / 10000 != CUDNN_MAJOR) {
    return Unavailable("cuDNN " + CudnnVersionText(loaded) +
                       " is loaded; the CUDA backend needs cuDNN " + std::to_string(CUDNN_MAJOR) +
                       ".x, at least " + CudnnVersionText(kOldestCudnn) + " (compiled with " +
                       CudnnVersionText(CUDNN_VERSION) + "); put libcudnn.so." +
                       std::to_string(CUDNN_MAJOR) + " on the library path");
  }
  if (loaded < CUDNN_VERSION) {
    spdlog::warn(
        "cuDNN {} is loaded, older than cuDNN {} which mogserve was compiled with: minor releases "
        "are only backward compatible; the backend needs no more than {}, but prefer {} or newer",
        CudnnVersionText(loaded), CudnnVersionText(CUDNN_VERSION), CudnnVersionText(kOldestCudnn),
        CudnnVersionText(CUDNN_VERSION));
  }
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
  const std::string text =
      "cuda:" + std::to_string(index) + " " + prop.name + " (compute capability " +
      std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", " +
      std::to_string(prop.totalGlobalMem >> 20) + " MiB), cuDNN " +
      CudnnVersionText(cudnnGetVersion()) + " (compiled with " + CudnnVersionText(CUDNN_VERSION) +
      "), cuBLASLt " + CublasVersionText(cublasLtGetVersion());
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
  return Unimplemented(
      "the CUDA backend found " + info.device + " and loaded " + info.model +
      (info.variant.empty() ? "" : " " + info.variant) +
      ", but its executor (cuDNN convolutions, kernels, arena, CUDA graphs) is not written yet; "
      "use --device cpu");
}

}  // namespace mogserve::engine
