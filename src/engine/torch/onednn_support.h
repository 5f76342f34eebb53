// What the CPU backend's direct oneDNN primitives share (onednn_conv.h, winograd_conv.h): the
// engine they run on, weights reordered once into a kernel's layout, a call with its own
// scratchpad, and the output buffer of a convolution that adds a residual. CPU backend only.
#pragma once

#include <ATen/ATen.h>

#include <dnnl.hpp>

#include <memory>
#include <unordered_map>

namespace mogserve::engine::torch_backend {

const dnnl::engine& OneDnnCpuEngine();

// Weights in the layout a kernel chose, kept in a LibTorch tensor so the caching allocator
// serves and counts them like every other engine buffer. Shared by the primitives (input
// shapes) that want the same layout.
struct ReorderedWeights {
  at::Tensor storage;
  dnnl::memory memory;
};
std::shared_ptr<const ReorderedWeights> ReorderWeights(dnnl::memory source,
                                                       const dnnl::memory::desc& wanted);

// Runs `primitive` on `args` with a scratchpad of its own (primitives are created with the user
// scratchpad mode, so engine instances run them concurrently) and waits for it.
void ExecuteWithScratchpad(const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
                           std::unordered_map<int, dnnl::memory> args);

// The channels-last output [sizes] of a convolution that adds `residual` (undefined: none): the
// residual's own buffer when `residual_reusable` (no later op reads it) and it already has the
// output's type and layout, else a copy of it; without a residual a fresh tensor.
at::Tensor ResidualOutput(at::IntArrayRef sizes, const at::TensorOptions& options,
                          const at::Tensor& residual, bool residual_reusable);

}  // namespace mogserve::engine::torch_backend
