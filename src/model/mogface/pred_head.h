// The interface of MogFace's prediction heads: one level's feature map in, that level's class
// logit and box deltas out.
#pragma once

#include <ATen/ATen.h>

#include "model/mogface/conv2d.h"

namespace mogserve::model::mogface {

struct LevelOutputs {
  at::Tensor cls;  // [N, 1, h, w] logits
  at::Tensor loc;  // [N, 4, h, w] (dx, dy, dw, dh)
};

class PredHead {
 public:
  virtual ~PredHead() = default;
  // level: 0..5 for P2..P7. Immutable; safe to call concurrently.
  virtual LevelOutputs Forward(int level, const at::Tensor& feature) const = 0;
  virtual int64_t Macs(int level, Size2 feature) const = 0;
  virtual void Prepare(at::ScalarType dtype, bool channels_last) = 0;
};

}  // namespace mogserve::model::mogface
