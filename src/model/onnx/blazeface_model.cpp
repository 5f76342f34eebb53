#include "model/onnx/blazeface_model.h"

#include <algorithm>
#include <filesystem>

#include "model/onnx/onnx_graph.h"
#include "model/onnx/static_graph.h"

namespace mogserve::model::onnx {
namespace {

// insightface's arcface_dst mouth width over its eye distance, halved: each mouth corner's
// distance from the mouth centre along the eye line, in eye distances.
constexpr float kHalfMouthPerEyeDistance = 0.5f * 29.1806f / 35.2372f;

// The logits and the regressors of each level (graph outputs of width 1 and 16), in the graph's
// output order, which is the anchor order.
Status SplitOutputs(const std::vector<OutputSource>& outputs, std::vector<OutputSource>* logits,
                    std::vector<OutputSource>* regressors) {
  for (const OutputSource& o : outputs) {
    if (o.width == 1) {
      logits->push_back(o);
    } else if (o.width == 4 + 2 * kBlazeFaceKeypoints) {
      regressors->push_back(o);
    } else {
      return InvalidArgument("BlazeFace output '" + o.name + "' has rows of " +
                             std::to_string(o.width) + " values; expected 1 (score) or 16");
    }
  }
  if (logits->empty() || logits->size() != regressors->size()) {
    return InvalidArgument("BlazeFace expects as many score as regressor outputs, at least one");
  }
  return Status::Ok();
}

BlazeFaceConfig ConfigOf(BlazeFaceRange range) {
  return range == BlazeFaceRange::kBack ? BlazeFaceBack() : BlazeFaceFront();
}

std::vector<float> Concatenated(const std::vector<OutputSource>& sources, const OutputRows& rows) {
  std::vector<float> all;
  for (const OutputSource& s : sources) {
    const std::vector<float> part = GraphOutput(s, rows.raw, rows.raw_offsets);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

}  // namespace

const char* BlazeFaceFile(BlazeFaceRange range) {
  return range == BlazeFaceRange::kBack ? "face_detection_back_256x256_barracuda.onnx"
                                        : "face_detection_front_128x128_barracuda.onnx";
}

std::vector<Point> FiveLandmarks(const BlazeFaceDetection& face) {
  // Keypoints 0 and 1 are the subject's right and left eye: the picture's left and right.
  const auto& k = face.keypoints;
  const float ex = k[1][0] - k[0][0], ey = k[1][1] - k[0][1];
  const float mx = k[3][0], my = k[3][1];
  const float h = kHalfMouthPerEyeDistance;
  return {{k[0][0], k[0][1]},
          {k[1][0], k[1][1]},
          {k[2][0], k[2][1]},
          {mx - h * ex, my - h * ey},
          {mx + h * ex, my + h * ey}};
}

StatusOr<std::unique_ptr<BlazeFaceModel>> BlazeFaceModel::Load(const std::string& dir,
                                                               BlazeFaceRange range) {
  const std::string path = (std::filesystem::path(dir) / BlazeFaceFile(range)).string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return NotFound(path + ": no such file (run scripts/setup.sh to fetch the BlazeFace model)");
  }
  MOGSERVE_ASSIGN_OR_RETURN(Graph graph, ReadModel(path));
  const BlazeFaceConfig config = ConfigOf(range);
  auto shared = std::make_shared<const Graph>(std::move(graph));
  MOGSERVE_ASSIGN_OR_RETURN(StaticGraph sg,
                            StaticGraph::Infer(shared, 1, config.input_side, config.input_side));
  // MediaPipe's image-to-tensor range [-1, 1].
  InputNormalization normalization;
  for (int c = 0; c < 3; ++c) normalization.mean[c] = normalization.divisor[c] = 127.5;
  MOGSERVE_ASSIGN_OR_RETURN(ImportedNetwork imported,
                            ImportNetwork(sg, "blazeface", normalization));
  MOGSERVE_ASSIGN_OR_RETURN(PreparedWeights weights,
                            PrepareWeights(*imported.network, imported.weights, path));
  std::vector<OutputSource> logits, regressors;
  MOGSERVE_RETURN_IF_ERROR(SplitOutputs(imported.outputs, &logits, &regressors));
  return std::unique_ptr<BlazeFaceModel>(
      new BlazeFaceModel(std::move(imported.network), std::move(weights), range, config,
                         std::move(logits), std::move(regressors)));
}

BlazeFaceModel::BlazeFaceModel(std::shared_ptr<const Network> network, PreparedWeights weights,
                               BlazeFaceRange range, BlazeFaceConfig config,
                               std::vector<OutputSource> logits,
                               std::vector<OutputSource> regressors)
    : FaceModel(std::move(network), std::move(weights)),
      range_(range),
      config_(std::move(config)),
      logits_(std::move(logits)),
      regressors_(std::move(regressors)) {}

DetectOptions BlazeFaceModel::default_detect_options() const {
  DetectOptions o;
  o.score_threshold = config_.score_threshold;
  o.nms_iou = config_.nms_iou;
  return o;
}

std::vector<Detection> BlazeFaceModel::Decode(const OutputRows& rows,
                                              const DetectOptions& options) const {
  const std::vector<float> logits = Concatenated(logits_, rows);
  const std::vector<float> regressors = Concatenated(regressors_, rows);
  const std::vector<BlazeFaceDetection> faces =
      DecodeBlazeFace(config_, logits, regressors, options.score_threshold, options.nms_iou);
  // Canvas pixels to the picture's, clipped to it (the content, not the padding).
  const image::Letterbox& lb = rows.letterbox;
  const auto sx = static_cast<float>(lb.to_source_x), sy = static_cast<float>(lb.to_source_y);
  std::vector<Detection> out;
  for (const BlazeFaceDetection& f : faces) {
    Detection d;
    d.x1 = f.x1 * sx;
    d.y1 = f.y1 * sy;
    d.x2 = f.x2 * sx;
    d.y2 = f.y2 * sy;
    d.score = f.score;
    for (Point p : FiveLandmarks(f)) d.landmarks.push_back({p.x * sx, p.y * sy});
    out.push_back(std::move(d));
  }
  ClipToPicture(out, lb);
  return out;
}

}  // namespace mogserve::model::onnx
