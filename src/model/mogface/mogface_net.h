// The MogFace network (spec: specs/mogface.md §2-§4) in LibTorch: backbone, LFPN, head; BN
// folded at load, the training-only DSFD branch never computed. Immutable after creation;
// Forward() is safe to call from several threads at once.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <memory>

#include "model/host_tensor.h"
#include "model/mogface/lfpn.h"
#include "model/mogface/mogface_variant.h"
#include "model/mogface/pred_head.h"
#include "model/mogface/resnet_backbone.h"
#include "mogserve/status.h"

namespace mogserve::model::mogface {

struct MogFaceOptions {
  bool channels_last = true;          // activations and weights channels-last (oneDNN)
  at::ScalarType dtype = at::kFloat;  // kFloat or kBFloat16 (GroupNorm stays FP32)
};

struct MogFaceOutputs {
  at::Tensor conf;  // [N, Σ, 1] float32, sigmoid face probability
  at::Tensor loc;   // [N, Σ, 4] float32 raw deltas (dx, dy, dw, dh)
};

class MogFaceNet {
 public:
  // Detects the variant (module.-prefixed keys are accepted), checks the layout strictly
  // (kInvalidData naming the missing / extra / mis-shaped keys; HCAM → kUnsupported), folds BN
  // in FP32, then converts to options.dtype. The map is only read; the net owns its weights.
  static StatusOr<std::unique_ptr<MogFaceNet>> Create(const HostTensorMap& weights,
                                                      const MogFaceOptions& options);

  // input: [N, 3, H, W] float32, pre-processed (spec §6a), any memory format, CPU. Σ is the sum
  // over P2..P7 of the map sizes, levels concatenated P2 first, each row-major (spec §4e).
  StatusOr<MogFaceOutputs> Forward(const at::Tensor& input_nchw) const;

  // Effective multiply-accumulates of one h x w image (no DSFD, no dead conv2-conv4).
  int64_t MacsPerImage(int64_t h, int64_t w) const;
  // P2..P7 map sizes for an h x w input (n -> ceil(n/2) per stride-2 step).
  static std::array<Size2, kLevels> LevelSizes(int64_t h, int64_t w);

  Variant variant() const { return variant_; }
  const MogFaceOptions& options() const { return options_; }

 private:
  MogFaceNet() = default;

  Variant variant_ = Variant::kR101;
  MogFaceOptions options_;
  ResNetBackbone backbone_;
  Lfpn fpn_;
  std::unique_ptr<PredHead> head_;
};

}  // namespace mogserve::model::mogface
