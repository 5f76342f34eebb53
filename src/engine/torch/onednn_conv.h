// The CPU backend's convolutions, run through oneDNN directly (Debian's libdnnl 2.6, the
// library LibTorch itself links) instead of at::mkldnn_convolution and LibTorch's quantized
// convolution. What that buys, per pass (docs/BENCHMARKS.md, "Where the SSD's time goes"):
//   - the weights are reordered once, into the layout the chosen kernel wants, not on every call;
//   - TF SAME's asymmetric padding is the primitive's own (no padded copy of the input);
//   - the residual sum and ReLU / ReLU6 are post-ops of the convolution (no extra pass over the
//     output), and the residual's buffer becomes the output when nothing else reads it.
// Floating point: activations stay LibTorch tensors in channels-last (NHWC) FP32 or BF16, so
// every other op of the plan is unchanged. INT8: activations are LibTorch quint8 tensors with a
// zero point of 0 (non-negative values: the SSD's ReLU6 outputs), NHWC, so the plan's quantise
// and dequantise steps read them as before. CPU backend only.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/layer_plan.h"
#include "model/network.h"

namespace mogserve::engine::torch_backend {

// INT8 quantisation of one convolution: weights symmetric per output channel (scale = max |w| /
// 127 of the channel), the output per tensor with a zero point of 0.
struct Int8ConvScales {
  std::vector<double> weight;  // per output channel
  double output = 1;           // real = output * q
};

// One convolution definition (its weights) and the primitives of the ops that apply it.
// Thread-safe: primitives are created under a lock on first use of a (shape, op) and then only
// read; each call brings its own scratchpad, so instances run them concurrently.
class OneDnnConv {
 public:
  // Floating point. weight: OIHW [out, in/groups, k, k] in FP32 or BF16, any strides; bias
  // [out] in any float type. dtype: the activations' type, kFloat or kBFloat16. `weight` is kept
  // (shared, not copied) as the source of the reorders into each kernel's layout.
  OneDnnConv(const model::ConvDef& def, const at::Tensor& weight, const at::Tensor& bias,
             at::ScalarType dtype);
  // INT8: weight and bias in FP32, quantised here with `scales`.
  OneDnnConv(const model::ConvDef& def, const at::Tensor& weight, const at::Tensor& bias,
             Int8ConvScales scales);
  ~OneDnnConv();

  // act(conv(x) + bias [+ residual]) for one op of `def`. Floating point: x [N, C, H, W]
  // channels-last in the dtype, and so is the result; `residual_reusable`: the residual's
  // buffer may be written (no later op reads it), so the output takes its place. INT8: x a
  // quint8 channels-last tensor with zero point 0 (any scale), no residual; the result is quint8
  // with the output scale and zero point 0, which also clamps at 0 (ReLU) and at the scale's
  // range (ReLU6 when the range is <= 6).
  // Returns an undefined tensor when oneDNN has no kernel for this case (the caller falls back
  // to LibTorch); throws dnnl::error or c10::Error on a failed run.
  at::Tensor Run(const model::Op& op, const model::ResolvedPadding& pad, const at::Tensor& x,
                 const at::Tensor& residual = {}, bool residual_reusable = false) const;

  // Whether the tensor can take the direct path: a floating-point one (FP32, BF16), or with an
  // INT8 convolution a quint8 one with zero point 0; channels-last either way.
  bool Accepts(const at::Tensor& x) const;

  // The oneDNN kernel of each case run so far ("brgconv:avx512_core", "jit:avx2", ...), and
  // "" for each case oneDNN had none for (LibTorch ran it).
  std::vector<std::string> Kernels() const;

 private:
  struct Prepared;
  const Prepared* Find(const model::Op& op, const model::ResolvedPadding& pad,
                       const at::Tensor& x) const;

  int out_channels_, in_channels_, kernel_, groups_;
  bool int8_;
  at::ScalarType dtype_;  // floating point: the activations'
  at::Tensor weight_;     // as given, or INT8: quantised (int8, OIHW contiguous)
  at::Tensor bias_;       // FP32 [out]
  Int8ConvScales scales_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Prepared>> prepared_;  // guarded by mu_; never shrinks
};

}  // namespace mogserve::engine::torch_backend
