#include "model/ssd_model.h"

#include "model/ssd_mobilenet_v1.h"

namespace mogserve::model {

StatusOr<std::unique_ptr<SsdModel>> SsdModel::Create(const TfjsWeights& weights) {
  std::shared_ptr<const Network> network = BuildSsdMobilenetV1Network();
  MOGSERVE_ASSIGN_OR_RETURN(PreparedWeights prepared,
                            PrepareWeights(*network, weights, "SSD-MobileNetV1 weights"));
  const HostTensor& rows = prepared.others.at(kSsdAnchorsKey);
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<AnchorBox> anchors,
                            AnchorsFromRows(rows.values, kSsdAnchorCount));
  return std::unique_ptr<SsdModel>(
      new SsdModel(std::move(network), std::move(prepared), std::move(anchors)));
}

StatusOr<std::unique_ptr<SsdModel>> SsdModel::Load(const std::string& dir) {
  auto weights = LoadTfjsWeights(dir, kSsdWeightsName);
  if (!weights.ok()) {
    return Status(weights.status().code(),
                  weights.status().message() + " (run scripts/setup.sh to fetch the model)");
  }
  return Create(*weights);
}

int SsdModel::fixed_side() const {
  return kSsdInputSize;
}

std::vector<Detection> SsdModel::Decode(const OutputRows& rows, const DetectOptions& options) const {
  return DecodeSsdDetections(rows.boxes, rows.scores, anchors_, options, rows.letterbox);
}

}  // namespace mogserve::model
