#include "model/onnx/onnx_model.h"

#include <algorithm>
#include <filesystem>

#include "model/onnx/onnx_graph.h"
#include "model/onnx/static_graph.h"

namespace mogserve::model::onnx {
namespace {

// insightface's default det_size for files with a dynamic input (FaceAnalysis.prepare).
constexpr int kInsightFaceSide = 640;

// `sg`: the file made static at its own size (insightface's 640² when dynamic); `match`: its
// outputs' family. `name`: scrfd, or retinaface for insightface's RetinaFace files, whose
// model_zoo/retinaface.py pre-processes, decodes and suppresses exactly as scrfd.py does.
StatusOr<std::unique_ptr<FaceModel>> LoadScrfd(const StaticGraph& sg, const FamilyMatch& match,
                                               const std::string& path, const std::string& name) {
  if (sg.height() != sg.width()) {
    return Unsupported(path + ": a fixed " + std::to_string(sg.width()) + "x" +
                       std::to_string(sg.height()) +
                       " input; mogserve runs SCRFD on a square canvas");
  }
  const int side = static_cast<int>(sg.height());
  if (match.family != Family::kScrfd) {
    return InvalidArgument(path + ": its outputs are not " +
                           (name == "scrfd" ? "SCRFD's" : "insightface RetinaFace's") + " (" +
                           match.reason + ")");
  }
  InputNormalization normalization;  // scrfd.py: blobFromImage(1 / 128, mean 127.5, swapRB)
  for (int c = 0; c < 3; ++c) {
    normalization.mean[c] = 127.5;
    normalization.divisor[c] = 128.0;
  }
  MOGSERVE_ASSIGN_OR_RETURN(ImportedNetwork imported, ImportNetwork(sg, "scrfd", normalization));
  const size_t n = imported.outputs.size();
  ScrfdConfig config;
  config.input_height = config.input_width = side;
  const int levels = n == 6 || n == 9 ? 3 : 5;
  config.strides.clear();
  for (int l = 0; l < levels; ++l) config.strides.push_back(8 << l);
  config.landmarks = n == 9 || n == 15;
  const int64_t cells = int64_t{side / 8} * (side / 8);
  const int64_t rows = sg.value(imported.outputs[0].name).shape.size() > 1
                           ? sg.value(imported.outputs[0].name).shape.end()[-2]
                           : 0;
  config.anchors_per_cell = cells > 0 && rows % cells == 0 ? static_cast<int>(rows / cells) : 0;
  if (config.anchors_per_cell < 1) {
    return InvalidArgument(path + ": output '" + imported.outputs[0].name + "' has " +
                           std::to_string(rows) + " rows for " + std::to_string(cells) +
                           " cells of stride 8");
  }
  MOGSERVE_ASSIGN_OR_RETURN(PreparedWeights weights,
                            PrepareWeights(*imported.network, imported.weights, path));
  return std::unique_ptr<FaceModel>(
      new ScrfdModel(std::move(imported), std::move(weights), std::move(config), name));
}

// OpenCV's YuNet: `sg` made static at the file's size (640² when dynamic); the plan runs it at
// every picture's padded size.
StatusOr<std::unique_ptr<FaceModel>> LoadYunet(const StaticGraph& sg, const FamilyMatch& match,
                                               const std::string& path) {
  if (match.family != Family::kYuNet) {
    return InvalidArgument(path + ": its outputs are not YuNet's (" + match.reason + ")");
  }
  InputNormalization normalization;  // blobFromImage(pad_image): scale 1, no mean, no swapRB
  normalization.zero_padding = true;  // copyMakeBorder's 0
  MOGSERVE_ASSIGN_OR_RETURN(
      ImportedNetwork imported,
      ImportNetwork(sg, "yunet", normalization, {.bgr_input = true, .any_size = true}));
  std::vector<OutputSource> heads;
  for (const char* head : {"cls_", "obj_", "bbox_", "kps_"}) {
    for (const char* stride : {"8", "16", "32"}) {
      const std::string name = std::string(head) + stride;
      const auto it = std::find_if(imported.outputs.begin(), imported.outputs.end(),
                                   [&](const OutputSource& s) { return s.name == name; });
      const int width = head[0] == 'b' ? 4 : head[0] == 'k' ? 10 : 1;
      if (it == imported.outputs.end() || it->width != width) {
        return InvalidArgument(path + ": YuNet's output '" + name + "' must have " +
                               std::to_string(width) + " values per row");
      }
      heads.push_back(*it);
    }
  }
  MOGSERVE_ASSIGN_OR_RETURN(PreparedWeights weights,
                            PrepareWeights(*imported.network, imported.weights, path));
  return std::unique_ptr<FaceModel>(
      new YunetModel(std::move(imported), std::move(weights), std::move(heads)));
}

}  // namespace

std::string FamilyChoices() {
  std::string s = "auto";
  for (Family f : AllFamilies()) s += ", " + FamilyName(f);
  return s;
}

StatusOr<std::unique_ptr<FaceModel>> LoadOnnxDetector(const std::string& path,
                                                      const std::string& family) {
  std::optional<Family> chosen;
  if (family != "auto") {
    chosen = ParseFamily(family);
    if (!chosen) {
      return InvalidArgument("model family '" + family + "' is not known; allowed: " +
                             FamilyChoices());
    }
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return NotFound(path + ": no such file");
  MOGSERVE_ASSIGN_OR_RETURN(Graph graph, ReadModel(path));
  auto shared = std::make_shared<const Graph>(std::move(graph));
  MOGSERVE_ASSIGN_OR_RETURN(const ImageInput input, FindImageInput(*shared));
  const auto not_built = [&](const std::string& what) {
    return Unsupported(path + ": a " + what +
                       " model; its decoder is not built yet (decoders from a file: scrfd, "
                       "yunet, insightface's retinaface; BlazeFace: --model blazeface)");
  };
  const auto built = [](Family f) {
    return f == Family::kScrfd || f == Family::kYuNet || f == Family::kRetinaFace;
  };
  if (chosen && !built(*chosen)) return not_built(FamilyName(*chosen));
  // Made static once, at the size the file says (insightface's 640 when dynamic): the family
  // is read from it and the network imported from it.
  const int64_t h = input.dynamic_size() ? kInsightFaceSide : input.height;
  const int64_t w = input.dynamic_size() ? kInsightFaceSide : input.width;
  MOGSERVE_ASSIGN_OR_RETURN(StaticGraph sg, StaticGraph::Infer(shared, 1, h, w));
  const FamilyMatch match = DetectFamily(sg);
  if (!chosen) {
    if (!match.family) {
      return InvalidArgument(path + ": no known face detector family: " + match.reason +
                             "; name one with --model-family");
    }
    if (!built(*match.family)) return not_built(FamilyName(*match.family));
  }
  switch (chosen.value_or(*match.family)) {
    case Family::kYuNet:
      return LoadYunet(sg, match, path);
    case Family::kRetinaFace:
      // Pytorch_Retinaface's layout (loc, softmax conf, landms against priors) is a decoder of
      // its own; insightface's RetinaFace files have SCRFD's outputs.
      if (match.family == Family::kRetinaFace) {
        return not_built("retinaface (Pytorch_Retinaface's loc, conf, landms layout)");
      }
      return LoadScrfd(sg, match, path, "retinaface");
    default:
      return LoadScrfd(sg, match, path, "scrfd");
  }
}

ScrfdModel::ScrfdModel(ImportedNetwork imported, PreparedWeights weights, ScrfdConfig config,
                       std::string name)
    : FaceModel(std::move(imported.network), std::move(weights)),
      name_(std::move(name)),
      config_(std::move(config)),
      outputs_(std::move(imported.outputs)) {}

DetectOptions ScrfdModel::default_detect_options() const {
  DetectOptions o;
  o.score_threshold = config_.score_threshold;
  o.nms_iou = config_.nms_iou;
  return o;
}

std::vector<Detection> ScrfdModel::Decode(const OutputRows& rows,
                                          const DetectOptions& options) const {
  const size_t levels = config_.strides.size();
  std::vector<std::vector<float>> values;
  for (const OutputSource& s : outputs_) values.push_back(GraphOutput(s, rows.raw, rows.raw_offsets));
  std::vector<ScrfdLevel> level(levels);
  for (size_t l = 0; l < levels; ++l) {
    level[l].scores = values[l];
    level[l].boxes = values[l + levels];
    if (config_.landmarks) level[l].landmarks = values[l + 2 * levels];
  }
  const image::Letterbox& lb = rows.letterbox;
  // insightface's det_scale (new_height / height), in float as numpy divides by it.
  const float det_scale =
      lb.source_height > 0 ? static_cast<float>(static_cast<double>(lb.content_height) /
                                                lb.source_height)
                           : static_cast<float>(1.0 / lb.to_source_y);
  const std::vector<ScrfdDetection> faces =
      DecodeScrfd(config_, level, det_scale, options.score_threshold, options.nms_iou);
  std::vector<Detection> out;
  for (const ScrfdDetection& f : faces) {
    Detection d;
    d.x1 = f.x1;
    d.y1 = f.y1;
    d.x2 = f.x2;
    d.y2 = f.y2;
    d.score = f.score;
    if (f.has_landmarks) {
      for (const auto& p : f.landmarks) d.landmarks.push_back({p[0], p[1]});
    }
    out.push_back(std::move(d));
  }
  ClipToPicture(out, lb);
  return out;
}

YunetModel::YunetModel(ImportedNetwork imported, PreparedWeights weights,
                       std::vector<OutputSource> heads)
    : FaceModel(std::move(imported.network), std::move(weights)), heads_(std::move(heads)) {}

DetectOptions YunetModel::default_detect_options() const {
  DetectOptions o;
  o.score_threshold = config_.score_threshold;
  o.nms_iou = config_.nms_iou;
  return o;
}

std::vector<Detection> YunetModel::Decode(const OutputRows& rows,
                                          const DetectOptions& options) const {
  const size_t levels = config_.strides.size();
  std::vector<std::vector<float>> values;
  for (const OutputSource& s : heads_) values.push_back(GraphOutput(s, rows.raw, rows.raw_offsets));
  std::vector<YunetLevel> level(levels);
  for (size_t l = 0; l < levels; ++l) {
    level[l] = {values[l], values[l + levels], values[l + 2 * levels], values[l + 3 * levels]};
  }
  const image::Letterbox& lb = rows.letterbox;
  const std::vector<YunetDetection> faces = DecodeYunet(
      config_, level, lb.canvas_width, lb.canvas_height, options.score_threshold, options.nms_iou);
  const auto sx = static_cast<float>(lb.to_source_x), sy = static_cast<float>(lb.to_source_y);
  std::vector<Detection> out;
  for (const YunetDetection& f : faces) {
    Detection d;
    d.x1 = f.x * sx;
    d.y1 = f.y * sy;
    d.x2 = (f.x + f.w) * sx;
    d.y2 = (f.y + f.h) * sy;
    d.score = f.score;
    for (const auto& p : f.landmarks) d.landmarks.push_back({p[0] * sx, p[1] * sy});
    out.push_back(std::move(d));
  }
  ClipToPicture(out, lb);
  return out;
}

}  // namespace mogserve::model::onnx
