#include "model/onnx/scrfd.h"

#include <algorithm>

namespace mogserve::model::onnx {
namespace {

// insightface's nms: inclusive corners (+1 in widths, heights and areas).
float OverlapPlusOne(const ScrfdDetection& a, const ScrfdDetection& b) {
  const float w = std::max(0.0f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1) + 1);
  const float h = std::max(0.0f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1) + 1);
  const float inter = w * h;
  const float area_a = (a.x2 - a.x1 + 1) * (a.y2 - a.y1 + 1);
  const float area_b = (b.x2 - b.x1 + 1) * (b.y2 - b.y1 + 1);
  return inter / (area_a + area_b - inter);
}

}  // namespace

std::vector<ScrfdDetection> DecodeScrfd(const ScrfdConfig& config,
                                        std::span<const ScrfdLevel> levels, float det_scale,
                                        float score_threshold, float nms_iou) {
  std::vector<ScrfdDetection> faces;
  const int anchors = config.anchors_per_cell;
  for (size_t l = 0; l < levels.size() && l < config.strides.size(); ++l) {
    const int stride = config.strides[l];
    const int width = config.input_width / stride;  // scrfd.py: input_width // stride
    const ScrfdLevel& level = levels[l];
    const bool kps = config.landmarks && !level.landmarks.empty();
    const auto fs = static_cast<float>(stride);
    for (size_t a = 0; a < level.scores.size(); ++a) {
      const float score = level.scores[a];
      if (!(score >= score_threshold)) continue;
      const size_t cell = a / anchors;
      const float cx = static_cast<float>(cell % width) * fs;
      const float cy = static_cast<float>(cell / width) * fs;
      const float* d = level.boxes.data() + a * 4;
      ScrfdDetection f;
      // bbox_preds = net_outs * stride; distance2bbox; then / det_scale.
      f.x1 = (cx - d[0] * fs) / det_scale;
      f.y1 = (cy - d[1] * fs) / det_scale;
      f.x2 = (cx + d[2] * fs) / det_scale;
      f.y2 = (cy + d[3] * fs) / det_scale;
      f.score = score;
      if (kps) {
        f.has_landmarks = true;
        const float* k = level.landmarks.data() + a * 10;
        for (int p = 0; p < 5; ++p) {
          f.landmarks[p] = {(cx + k[2 * p] * fs) / det_scale, (cy + k[2 * p + 1] * fs) / det_scale};
        }
      }
      faces.push_back(f);
    }
  }
  // By score, highest first (ties keep the anchor order), then greedy NMS.
  std::stable_sort(faces.begin(), faces.end(),
                   [](const ScrfdDetection& a, const ScrfdDetection& b) { return a.score > b.score; });
  std::vector<ScrfdDetection> kept;
  std::vector<bool> dropped(faces.size(), false);
  for (size_t i = 0; i < faces.size(); ++i) {
    if (dropped[i]) continue;
    kept.push_back(faces[i]);
    for (size_t j = i + 1; j < faces.size(); ++j) {
      if (!dropped[j] && OverlapPlusOne(faces[i], faces[j]) > nms_iou) dropped[j] = true;
    }
  }
  return kept;
}

}  // namespace mogserve::model::onnx
