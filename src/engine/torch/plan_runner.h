// Runs a layer plan through LibTorch/oneDNN: the CPU backend's whole network code. The weights
// come from the model's prepared host weights, converted once to the run's dtype and memory
// format; every op maps to the calls in torch_ops.h, and each activation is released after the
// last op that reads it (the plan's liveness). CPU backend only.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "model/layer_plan.h"
#include "model/prepared_weights.h"
#include "mogserve/status.h"

namespace mogserve::engine::torch_backend {

// Immutable after creation; shared by the engine instances of one model.
struct TorchWeights {
  at::ScalarType dtype = at::kFloat;  // kFloat or kBFloat16 (GroupNorm affine stays FP32)
  bool channels_last = true;
  std::vector<at::Tensor> conv_weight;  // by ConvDef index, OIHW in dtype and memory format
  std::vector<at::Tensor> conv_bias;    // [out] in dtype
  std::vector<at::Tensor> norm_gamma;   // by NormDef index, FP32
  std::vector<at::Tensor> norm_beta;
};

// Copies the prepared (float32) weights into tensors of `dtype`.
TorchWeights MakeTorchWeights(const model::PreparedWeights& prepared, at::ScalarType dtype,
                              bool channels_last);

struct PlanOutputs {
  at::Tensor scores;  // [N, anchors] float32, sigmoid applied
  at::Tensor boxes;   // [N, anchors, 4] float32
};

// input: [N, 3, H, W] normalised, in weights.dtype (channels-last when weights.channels_last),
// H x W the plan's input size. Throws c10::Error like the LibTorch calls it makes.
PlanOutputs RunPlan(const model::LayerPlan& plan, const TorchWeights& weights, at::Tensor input);

}  // namespace mogserve::engine::torch_backend
