// cuDNN's version numbers and what the CUDA backend accepts at run time. Plain C++ (no cuDNN
// header): the policy is tested on any machine; cuda_backend.cpp feeds it cudnnGetVersion() and
// CUDNN_VERSION.
#pragma once

#include <cstddef>
#include <string>

#include "mogserve/status.h"

namespace mogserve::engine::cuda {

// The oldest cuDNN whose API the backend calls (cudnnGetLastErrorString, the v9 legacy
// convolution API): 9.0.0, as cudnnGetVersion() numbers it.
inline constexpr size_t kOldestCudnnVersion = 90000;

// "9.19.0" from cuDNN's number: major·10000 + minor·100 + patch since 9.0, major·1000 +
// minor·100 + patch before.
std::string CudnnVersionText(size_t version);

// The loaded library against the headers the build was compiled with. cuDNN's minor releases
// are only backward compatible, but the backend calls nothing newer than 9.0, so (spec §8.1):
//   - Ok with "" when `loaded` >= `compiled` in the same major version;
//   - Ok with a warning to log (naming both versions) when older than `compiled` but >= 9.0
//     and of the same major version (e.g. the pip wheel next to PyTorch lags behind the
//     development headers);
//   - kUnavailable naming both versions when older than 9.0 or of another major version.
StatusOr<std::string> CheckCudnnVersion(size_t loaded, size_t compiled);

}  // namespace mogserve::engine::cuda
