// One convolution op of a LayerPlan as cuDNN sees it (the legacy API): NHWC activations with
// DeviceChannels() channels, a KRSC filter (device_weights.h), FP32 accumulation, the math type
// of the precision (fp32: CUDNN_FMA_MATH, so TF32 stays off; tf32: CUDNN_DEFAULT_MATH, TF32
// tensor ops; fp16/bf16: tensor ops), and the fused epilogue (bias, optional residual z, ReLU
// or identity; ReLU6 = ReLU + a clamp kernel; NaN not propagated, as the fused call wants).
// Descriptors need no GPU: they are built and checked on any machine with cuDNN installed.
// Includes cuDNN's header: src/engine/cuda/ only.
#pragma once

#include <cudnn.h>

#include <array>
#include <memory>

#include "engine/cuda/device_weights.h"
#include "engine/cuda/program.h"
#include "engine/engine.h"
#include "model/layer_plan.h"
#include "mogserve/status.h"

namespace mogserve::engine::cuda {

// Ok for CUDNN_STATUS_SUCCESS, else kInternal: "<call>: <cuDNN's name> (<last error text>)".
Status CudnnCall(cudnnStatus_t status, const char* call);

class ConvDescriptors {
 public:
  // kUnimplemented for asymmetric padding (TF SAME at stride 2: the legacy API pads
  // symmetrically; program.h makes such padding explicit with a pad step, so the engine never
  // asks); kInternal for a cuDNN refusal, naming the call.
  static StatusOr<std::unique_ptr<ConvDescriptors>> Create(const ConvGeometry& g, StorageType type,
                                                           Precision precision);
  ~ConvDescriptors();
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;

  cudnnTensorDescriptor_t x() const { return x_; }
  cudnnTensorDescriptor_t y() const { return y_; }  // also z, the residual
  cudnnTensorDescriptor_t bias() const { return bias_; }
  cudnnFilterDescriptor_t w() const { return w_; }
  cudnnConvolutionDescriptor_t conv() const { return conv_; }
  cudnnActivationDescriptor_t activation() const { return act_; }
  // ReLU6: the fused call applies ReLU, a clamp kernel the upper bound.
  bool needs_clamp() const { return needs_clamp_; }
  // No activation (towers, laterals): the legacy fused call then takes only
  // CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM (specs/cuda_backend.md §4).
  bool identity_epilogue() const { return identity_epilogue_; }

  // What cuDNN computes from x, w and conv: {n, c, h, w} of the output.
  StatusOr<std::array<int, 4>> OutputDims() const;
  StatusOr<cudnnMathType_t> MathType() const;

 private:
  ConvDescriptors() = default;

  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, bias_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;
  bool needs_clamp_ = false;
  bool identity_epilogue_ = false;
};

}  // namespace mogserve::engine::cuda
