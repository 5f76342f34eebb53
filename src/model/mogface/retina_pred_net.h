// RetinaPredNet (spec §4c, R50 Baseline / Ali-AMS / SSE): per-level, unshared 3x3 predictors
// applied straight to P_l.
#pragma once

#include <array>
#include <memory>

#include "model/mogface/checkpoint_reader.h"
#include "model/mogface/lfpn.h"
#include "model/mogface/pred_head.h"

namespace mogserve::model::mogface {

class RetinaPredNet : public PredHead {
 public:
  static std::unique_ptr<RetinaPredNet> Load(const CheckpointReader& reader);

  LevelOutputs Forward(int level, const at::Tensor& feature) const override;
  int64_t Macs(int level, Size2 feature) const override;
  void Prepare(at::ScalarType dtype, bool channels_last) override;

 private:
  std::array<Conv2d, kLevels> cls_, loc_;
};

}  // namespace mogserve::model::mogface
