// CUDA runtime errors as Status: the one conversion every CUDA call site of the backend uses.
// Includes the CUDA runtime's header, so only src/engine/cuda/ may include it.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "mogserve/status.h"

namespace mogserve::engine {

// "cudaErrorNoDevice (no CUDA-capable device is detected)".
inline std::string CudaErrorText(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
}

// Ok for cudaSuccess, else kInternal naming the call: "cudaMalloc: cudaErrorMemoryAllocation
// (out of memory)". Out-of-memory errors are kResourceExhausted.
inline Status CudaCall(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return Status::Ok();
  const std::string text = std::string(call) + ": " + CudaErrorText(err);
  if (err == cudaErrorMemoryAllocation) return ResourceExhausted(text);
  return Internal(text);
}

}  // namespace mogserve::engine
