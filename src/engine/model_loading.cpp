#include "engine/model_loading.h"

#include "model/checkpoint_loader.h"
#include "model/mogface/mogface_model.h"
#include "model/mogface/synthetic_weights.h"
#include "model/ssd_model.h"

namespace mogserve::engine {
namespace {

StatusOr<std::shared_ptr<const model::FaceModel>> LoadMogFace(const EngineOptions& options,
                                                              std::string* source) {
  namespace mf = model::mogface;
  const bool synthetic = !options.synthetic_weights.empty();
  if (synthetic == !options.weights.empty()) {
    return InvalidArgument(
        "MogFace needs exactly one of --weights FILE (a .pt/.pth/.safetensors checkpoint) or "
        "--synthetic-weights VARIANT (r101, e, r50)");
  }
  model::HostTensorMap weights;
  if (synthetic) {
    MOGSERVE_ASSIGN_OR_RETURN(const mf::Variant variant,
                              mf::ParseVariant(options.synthetic_weights));
    weights = mf::SyntheticWeights(variant, options.synthetic_seed, /*with_dsfd_heads=*/false);
    *source = "synthetic (seed " + std::to_string(options.synthetic_seed) + ")";
  } else {
    MOGSERVE_ASSIGN_OR_RETURN(weights, model::LoadCheckpoint(options.weights));
    *source = options.weights;
  }
  auto loaded = mf::MogFaceModel::Create(weights);
  if (!loaded.ok()) {
    if (synthetic) return loaded.status();
    return Status(loaded.status().code(), options.weights + ": " + loaded.status().message());
  }
  return std::shared_ptr<const model::FaceModel>(std::move(*loaded));
}

}  // namespace

StatusOr<std::shared_ptr<const model::FaceModel>> LoadFaceModel(const EngineOptions& options,
                                                                std::string* source) {
  if (options.model == ModelKind::kMogFace) return LoadMogFace(options, source);
  MOGSERVE_ASSIGN_OR_RETURN(std::unique_ptr<model::SsdModel> ssd,
                            model::SsdModel::Load(options.model_dir));
  *source = options.model_dir;
  return std::shared_ptr<const model::FaceModel>(std::move(ssd));
}

}  // namespace mogserve::engine
