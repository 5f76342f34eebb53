// What every backend's engine answers from the model alone (model::FaceModel), not from its
// device: the description, the detection defaults, the MACs of a canvas size and the
// post-processing of one output row. Backends derive from it and add Forward, memory and
// instances. Torch- and CUDA-free; header-only, so backend libraries built apart from
// mogserve_engine (mogserve_cuda) need no link back to it.
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
  DetectOptions default_detect_options() const override { return model_->default_detect_options(); }
  // The plan's MACs at the model's input size for this canvas (the SSD: its fixed side); 0 for
  // a size the network does not take.
  int64_t MacsPerImage(int width, int height) const override {
    const int fixed = model_->fixed_side();
    auto plan = model::LayerPlan::Create(model_->network(), fixed > 0 ? fixed : height,
                                         fixed > 0 ? fixed : width);
    return plan.ok() ? plan->total_macs() : 0;
  }
  std::vector<Detection> Postprocess(const BatchOutputs& outputs, int row,
                                     const image::Letterbox& letterbox,
                                     const DetectOptions& options) const override {
    return model_->Postprocess(outputs.scores_of(row), outputs.boxes_of(row),
                               outputs.canvas_width, outputs.canvas_height, letterbox, options);
  }

 protected:
  const EngineInfo info_;
  const std::shared_ptr<const model::FaceModel> model_;
};

}  // namespace mogserve::engine
