// FP32 3x3 stride-1 convolutions by Winograd's minimal filtering F(4x4, 3x3) (Lavin & Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2016): each 4x4 block of outputs comes from
// a 6x6 block of inputs with 36 multiplications per (input, output) channel pair instead of 144,
// so the multiplications of the layer fall 4-fold. Why: MogFace spends ~90 % of its CPU time in
// 3x3 convolutions (the 512-channel heads at stride 4 alone ~60 %), oneDNN 2.6 has no Winograd
// kernel for NHWC nor any on AVX2, and direct convolutions already run at 82-89 % of the FMA peak
// - fewer multiplications is what is left.
//
// Per call, for chunks of tiles (a tile: one 4x4 output block of one image):
//   1. input transform: V[p][t][c] = (B^T d B)[p] of each tile's 6x6 input patch (zero outside
//      the padded input), vectorised across channels (AVX-512, AVX2+FMA or plain code, following
//      HostCpu(), so MOGSERVE_CPU_ISA=avx2 runs the AVX2 loops);
//   2. 36 independent GEMMs M[p] = V[p] x U[p], one batched oneDNN matmul; U = G g G^T, computed
//      in double once and reordered into the layout the matmul's kernel wants;
//   3. output transform: A^T M A per tile, fused with the bias, the residual sum and
//      ReLU / ReLU6, written straight into the NHWC output (or over the residual in place).
// Accuracy: FP32 rounding of the transforms with F(4,3)'s points (0, +-1, +-2) costs about one
// decimal digit against a direct FP32 convolution (relative error ~1e-5 of the output scale);
// the tests bound it against LibTorch's convolution. CPU backend only.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <mutex>
#include <vector>

#include "model/layer_plan.h"
#include "model/network.h"

namespace mogserve::engine::torch_backend {

class WinogradConv {
 public:
  // Convolutions Winograd can run: 3x3 kernels, one group.
  static bool Eligible(const model::ConvDef& def);

  // weight OIHW [out, in, 3, 3] in any float type and strides; bias [out].
  WinogradConv(const model::ConvDef& def, const at::Tensor& weight, const at::Tensor& bias);
  ~WinogradConv();

  // Whether this op on x should run here: x FP32 channels-last, stride 1, dilation 1, and enough
  // tiles that the GEMMs amortise the transformed weights (4x the direct ones) - below that the
  // direct kernel is faster.
  bool Suits(const model::Op& op, const model::ResolvedPadding& pad, const at::Tensor& x) const;

  // act(conv(x) + bias [+ residual]) for x [N, C, H, W] FP32 channels-last; the result is FP32
  // channels-last. `residual_reusable`: the residual's buffer may be overwritten (no later op
  // reads it), so the output takes its place.
  at::Tensor Run(const model::Op& op, const model::ResolvedPadding& pad, const at::Tensor& x,
                 const at::Tensor& residual = {}, bool residual_reusable = false) const;

 private:
  struct Gemm;
  const Gemm* FindGemm(int64_t rows) const;
  at::Tensor TransformedWeights() const;  // U [36, in, out] FP32

  int out_channels_, in_channels_;
  at::Tensor weight_;  // as given (shared, not copied): the source of U
  at::Tensor bias_;    // FP32 [out]
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Gemm>> gemms_;  // guarded by mu_; never shrinks
};

}  // namespace mogserve::engine::torch_backend
