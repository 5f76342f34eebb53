#include "engine/model_loading.h"

namespace mogserve::engine {

StatusOr<std::shared_ptr<const model::FaceModel>> LoadFaceModel(const EngineOptions& options,
                                                                std::string* source) {
  const model::ModelSpec& spec = *options.model;
  MOGSERVE_ASSIGN_OR_RETURN(
      model::LoadedModel loaded,
      spec.load({options.model_dir, options.weights, options.synthetic_weights,
                 options.synthetic_seed}));
  *source = std::move(loaded.source);
  return std::move(loaded.model);
}

}  // namespace mogserve::engine
