// What every backend's engine answers from the model alone (model::FaceModel), not from its
// device: the description, the model itself and the MACs of a canvas size. Backends derive from it
// and add Forward, memory and instances. Torch- and CUDA-free; header-only, so backend libraries
// built apart from mogserve_engine (mogserve_cuda) need no link back to it.
#pragma once

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "model/face_model.h"
#include "model/layer_plan.h"

namespace mogserve::engine {

class ModelEngine : public Engine {
 public:
  ModelEngine(EngineInfo info, std::shared_ptr<const model::FaceModel> model)
      : info_(std::move(info)), model_(std::move(model)) {}

  const EngineInfo& info() const override { return info_; }
  std::shared_ptr<const model::FaceModel> model() const override { return model_; }
  // The plan's MACs at the model's input size for this canvas (the SSD: its fixed side); 0 for
  // a size the network does not take.
  int64_t MacsPerImage(int width, int height) const override {
    const int fixed = model_->fixed_side();
    auto plan = model::LayerPlan::Create(model_->network(), fixed > 0 ? fixed : height,
                                         fixed > 0 ? fixed : width);
    return plan.ok() ? plan->total_macs() : 0;
  }

 protected:
  const EngineInfo info_;
  const std::shared_ptr<const model::FaceModel> model_;
};

}  // namespace mogserve::engine
