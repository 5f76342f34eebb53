// Runs a layer plan through LibTorch/oneDNN: the CPU backend's whole network code. The weights
// come from the model's prepared host weights, converted once to the run's dtype and memory
// format; every op maps to the calls in torch_ops.h, and each activation is released after the
// last op that reads it (the plan's liveness). CPU backend only.
#pragma once

#include <ATen/ATen.h>
#include <ATen/native/quantized/PackedParams.h>

#include <functional>
#include <vector>

#include "engine/torch/onednn_conv.h"
#include "engine/torch/winograd_conv.h"
#include "model/activation_scales.h"
#include "model/layer_plan.h"
#include "model/prepared_weights.h"
#include "mogserve/status.h"

namespace mogserve::engine::torch_backend {

// A per-tensor affine INT8 (quint8) quantisation: real = scale * (q - zero_point).
struct QuantParams {
  double scale = 1;
  int64_t zero_point = 0;
};

// One convolution op run in INT8 through LibTorch's quantized engine (oneDNN): weights
// quantised per output channel (symmetric, scale = max |w| / 127 of the channel), bias in FP32,
// requantisation to the output's scale and the ReLU fused into the one call.
struct Int8Conv {
  // oneDNN directly, when the input and output have a zero point of 0 (non-negative values:
  // every INT8 convolution of the SSD); `packed` runs the rest and any case oneDNN has no
  // kernel for.
  std::shared_ptr<const OneDnnConv> direct;
  c10::intrusive_ptr<ConvPackedParamsBase<2>> packed;
  bool explicit_padding = false;  // prepacked without padding: pad the quantised input first
  QuantParams input, output;
  bool relu = false;  // ReLU or ReLU6 (the output scale's range, <= 6, does the clamp)
};

// Immutable after creation; shared by the engine instances of one model.
struct TorchWeights {
  at::ScalarType dtype = at::kFloat;  // kFloat or kBFloat16 (GroupNorm affine stays FP32)
  bool channels_last = true;
  // By ConvDef index, OIHW in dtype and memory format; undefined for a kernel that only INT8 ops
  // use (AddInt8Convs releases it).
  std::vector<at::Tensor> conv_weight;
  std::vector<at::Tensor> conv_bias;   // [out] in dtype
  std::vector<at::Tensor> norm_gamma;  // by NormDef index, FP32
  std::vector<at::Tensor> norm_beta;
  // Precision int8: by op index, the convolutions run INT8 (null: the op runs in dtype, FP32).
  std::vector<std::shared_ptr<const Int8Conv>> int8;
  // By ConvDef index, the floating-point convolutions oneDNN runs directly (channels-last only;
  // null for a kernel only INT8 ops use). Empty: every conv goes through LibTorch (tests clear
  // it to compare the two).
  std::vector<std::shared_ptr<const OneDnnConv>> onednn;
  // By ConvDef index, the FP32 3x3 convolutions Winograd F(4x4, 3x3) may run (null where not
  // eligible); an op runs there when WinogradConv::Suits it, else as above. Empty: none (FP32
  // with MOGSERVE_WINOGRAD=0, other precisions; tests clear it to compare).
  std::vector<std::shared_ptr<const WinogradConv>> winograd;
};

// Which convolutions stay in floating point under int8.
struct Int8Choice {
  bool first_float = true;  // the convolutions reading the network input
  bool heads_float = true;  // the convolutions writing output tensors (scores, boxes)
};

// Prepares the INT8 convolutions of `w` (FP32 weights): every conv op without a residual whose
// input and output tensors have scales, except those `choice` keeps in floating point. Needs the
// oneDNN quantized engine (set by the caller).
void AddInt8Convs(const model::Network& net, const model::ActivationScales& scales,
                  const Int8Choice& choice, TorchWeights* w);

// Copies the prepared (float32) weights into tensors of `dtype`; channels-last: with the direct
// oneDNN convolutions.
TorchWeights MakeTorchWeights(const model::Network& net, const model::PreparedWeights& prepared,
                              at::ScalarType dtype, bool channels_last);

struct PlanOutputs {
  at::Tensor scores;  // [N, anchors] float32, sigmoid applied
  at::Tensor boxes;   // [N, anchors, 4] float32
  at::Tensor raw;     // [N, plan.raw_floats()] float32; undefined without raw outputs
};

// input: [N, 3, H, W] normalised, in weights.dtype (channels-last when weights.channels_last),
// H x W the plan's input size. Throws c10::Error like the LibTorch calls it makes.
// `observe`, when given, sees every tensor as it is produced (the input first), in FP32 or
// quantised form: calibration reads the FP32 run's tensors through it.
using TensorObserver = std::function<void(int tensor, const at::Tensor& value)>;
PlanOutputs RunPlan(const model::LayerPlan& plan, const TorchWeights& weights, at::Tensor input,
                    const TensorObserver* observe = nullptr);

}  // namespace mogserve::engine::torch_backend
