// The CPU backend's floating-point convolutions, run through oneDNN directly (Debian's
// libdnnl 2.6, the library LibTorch itself links) instead of at::mkldnn_convolution. What that
// buys, per pass (measured in docs/BENCHMARKS.md, "Where the SSD's FP32 time goes"):
//   - the weights are reordered once, into the layout the chosen kernel wants, not on every call;
//   - TF SAME's asymmetric padding is the primitive's own (no padded copy of the input);
//   - the residual sum and ReLU / ReLU6 are post-ops of the convolution (no extra pass over the
//     output), and the residual's buffer becomes the output when nothing else reads it.
// Activations stay LibTorch tensors in channels-last (NHWC) FP32 or BF16, so every other op of
// the plan is unchanged. CPU backend only.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/layer_plan.h"
#include "model/network.h"

namespace mogserve::engine::torch_backend {

// One convolution definition (its weights) and the primitives of the ops that apply it.
// Thread-safe: primitives are created under a lock on first use of a (shape, op) and then only
// read; each call brings its own scratchpad, so instances run them concurrently.
class OneDnnConv {
 public:
  // weight: OIHW [out, in/groups, k, k] in FP32 or BF16, any strides; bias [out] in any float
  // type. dtype: the activations' type, kFloat or kBFloat16. `weight` is kept (shared, not
  // copied) as the source of the reorders into each kernel's layout.
  OneDnnConv(const model::ConvDef& def, const at::Tensor& weight, const at::Tensor& bias,
             at::ScalarType dtype);
  ~OneDnnConv();

  // act(conv(x) + bias [+ residual]) for one op of `def`. x: [N, C, H, W] channels-last in the
  // dtype; the result is channels-last in the dtype. `residual_reusable`: the residual's
  // buffer may be written (no later op reads it), so the output takes its place.
  // Returns an undefined tensor when oneDNN has no kernel for this case (the caller falls back
  // to LibTorch); throws dnnl::error or c10::Error on a failed run.
  at::Tensor Run(const model::Op& op, const model::ResolvedPadding& pad, const at::Tensor& x,
                 const at::Tensor& residual, bool residual_reusable) const;

  // Whether the tensor can take the direct path at all.
  static bool Accepts(const at::Tensor& x);

  // The oneDNN kernel of each case run so far ("brgconv:avx512_core", "jit:avx2", ...), and
  // "" for each case oneDNN had none for (LibTorch ran it).
  std::vector<std::string> Kernels() const;

 private:
  struct Prepared;
  const Prepared* Find(const model::Op& op, const model::ResolvedPadding& pad,
                       const at::Tensor& x) const;

  int out_channels_, in_channels_, kernel_, groups_;
  at::ScalarType dtype_;
  at::Tensor weight_;  // as given: the source of every reorder
  at::Tensor bias_;    // FP32 [out]
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Prepared>> prepared_;  // guarded by mu_; never shrinks
};

}  // namespace mogserve::engine::torch_backend
