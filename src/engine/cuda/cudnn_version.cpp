#include "engine/cuda/cudnn_version.h"

namespace mogserve::engine::cuda {
namespace {

size_t Major(size_t version) {
  return version >= 90000 ? version / 10000 : version / 1000;
}

}  // namespace

std::string CudnnVersionText(size_t version) {
  const size_t minor = version >= 90000 ? version / 100 % 100 : version / 100 % 10;
  return std::to_string(Major(version)) + "." + std::to_string(minor) + "." +
         std::to_string(version % 100);
}

StatusOr<std::string> CheckCudnnVersion(size_t loaded, size_t compiled) {
  const std::string major = std::to_string(Major(compiled));
  if (loaded < kOldestCudnnVersion || Major(loaded) != Major(compiled)) {
    return Unavailable(
        "cuDNN " + CudnnVersionText(loaded) + " is loaded; the CUDA backend needs cuDNN " + major +
        ".x, at least " + CudnnVersionText(kOldestCudnnVersion) + " (compiled with " +
        CudnnVersionText(compiled) + "); put libcudnn.so." + major + " on the library path");
  }
  if (loaded >= compiled) return std::string();
  return "cuDNN " + CudnnVersionText(loaded) + " is loaded, older than cuDNN " +
         CudnnVersionText(compiled) +
         " which mogserve was compiled with: minor releases are only backward compatible; the "
         "backend needs no more than " +
         CudnnVersionText(kOldestCudnnVersion) + ", but prefer " + CudnnVersionText(compiled) +
         " or newer";
}

}  // namespace mogserve::engine::cuda
