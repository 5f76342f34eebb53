// Loading the model an EngineOptions names, for every backend: torch-free.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "model/face_model.h"
#include "mogserve/status.h"

namespace mogserve::engine {

// The model options.model names (model/model_registry.h), loaded by its spec: the SSD from
// options.model_dir, MogFace from options.weights (a checkpoint) or options.synthetic_weights (a
// variant: deterministic random weights). `source` receives what the weights are ("synthetic
// (seed 1)", the file, or the SSD folder). Errors name the file (with scripts/setup.sh for a
// missing SSD) or the bad option.
StatusOr<std::shared_ptr<const model::FaceModel>> LoadFaceModel(const EngineOptions& options,
                                                                std::string* source);

}  // namespace mogserve::engine
