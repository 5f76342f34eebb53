#include "model/mogface/mogface_model.h"

#include "model/mogface/mogface_network.h"
#include "model/mogface/mogface_postprocess.h"

namespace mogserve::model::mogface {

StatusOr<std::unique_ptr<MogFaceModel>> MogFaceModel::Create(const HostTensorMap& weights) {
  // Only a prefixed checkpoint pays for the renamed copy.
  HostTensorMap normalized;
  const bool prefixed = HasModulePrefix(weights);
  if (prefixed) normalized = NormalizeCheckpointKeys(weights);
  const HostTensorMap& w = prefixed ? normalized : weights;
  MOGSERVE_ASSIGN_OR_RETURN(const Variant variant, DetectVariant(w));
  std::shared_ptr<const Network> network = BuildMogFaceNetwork(variant);
  MOGSERVE_ASSIGN_OR_RETURN(
      PreparedWeights prepared,
      PrepareWeights(*network, w, std::string("MogFace ") + VariantName(variant) + " checkpoint"));
  return std::unique_ptr<MogFaceModel>(
      new MogFaceModel(std::move(network), std::move(prepared), variant));
}

DetectOptions MogFaceModel::default_detect_options() const {
  return MogFaceDefaultDetectOptions();
}

std::span<const float> MogFaceModel::Anchors(int height, int width) const {
  std::lock_guard<std::mutex> lock(anchors_mutex_);
  auto [it, inserted] = anchors_.try_emplace({height, width});
  if (inserted) it->second = MogFaceAnchors(height, width, variant_);
  return it->second;
}

std::vector<Detection> MogFaceModel::Decode(const OutputRows& rows,
                                            const DetectOptions& options) const {
  return MogFaceDetections(rows.scores, rows.boxes, Anchors(rows.canvas_height, rows.canvas_width),
                           rows.letterbox, options);
}

}  // namespace mogserve::model::mogface
