#include "model/onnx/yunet.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

namespace mogserve::model::onnx {
namespace {

// cv::Rect2i of a face as postProcess builds it: each of x, y, w, h truncated by int().
struct IntRect {
  int x = 0, y = 0, w = 0, h = 0;
  int64_t area() const { return int64_t{w} * h; }
};

IntRect Truncated(const YunetDetection& f) {
  return {static_cast<int>(f.x), static_cast<int>(f.y), static_cast<int>(f.w),
          static_cast<int>(f.h)};
}

// cv::rectOverlap: 1 − jaccardDistance, computed in double and returned as float.
float RectOverlap(const IntRect& a, const IntRect& b) {
  const int64_t area_a = a.area(), area_b = b.area();
  if (area_a + area_b <= 0) return 1.0f;  // jaccardDistance 0 for two empty rects
  const int x1 = std::max(a.x, b.x), y1 = std::max(a.y, b.y);
  const int iw = std::min(a.x + a.w, b.x + b.w) - x1;
  const int ih = std::min(a.y + a.h, b.y + b.h) - y1;
  const double inter = iw > 0 && ih > 0 ? static_cast<double>(iw) * ih : 0.0;
  const double distance = 1.0 - inter / (static_cast<double>(area_a + area_b) - inter);
  return 1.0f - static_cast<float>(distance);
}

// cv::dnn::NMSBoxes (NMSFast_ with eta 1): indices of the kept faces.
std::vector<size_t> NmsBoxes(const std::vector<YunetDetection>& faces, float score_threshold,
                             float nms_iou, int top_k) {
  std::vector<std::pair<float, size_t>> order;  // GetMaxScoreIndex
  for (size_t i = 0; i < faces.size(); ++i) {
    if (faces[i].score > score_threshold) order.emplace_back(faces[i].score, i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (top_k > 0 && static_cast<size_t>(top_k) < order.size()) order.resize(top_k);
  std::vector<IntRect> rects(faces.size());
  for (size_t i = 0; i < faces.size(); ++i) rects[i] = Truncated(faces[i]);
  std::vector<size_t> kept;
  for (const auto& [score, i] : order) {
    bool keep = true;
    for (size_t k = 0; k < kept.size() && keep; ++k) {
      keep = RectOverlap(rects[i], rects[kept[k]]) <= nms_iou;
    }
    if (keep) kept.push_back(i);
  }
  return kept;
}

}  // namespace

std::vector<YunetDetection> DecodeYunet(const YunetConfig& config,
                                        std::span<const YunetLevel> levels, int pad_width,
                                        int pad_height, float score_threshold, float nms_iou) {
  std::vector<YunetDetection> faces;
  for (size_t l = 0; l < levels.size() && l < config.strides.size(); ++l) {
    const int stride = config.strides[l];
    const int cols = pad_width / stride, rows = pad_height / stride;
    const YunetLevel& level = levels[l];
    const size_t cells = static_cast<size_t>(rows) * cols;
    if (level.cls.size() != cells || level.obj.size() != cells || level.bbox.size() != cells * 4 ||
        level.kps.size() != cells * 10) {
      continue;
    }
    const auto fs = static_cast<float>(stride);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        const size_t idx = static_cast<size_t>(r) * cols + c;
        const float cls = std::clamp(level.cls[idx], 0.0f, 1.0f);
        const float obj = std::clamp(level.obj[idx], 0.0f, 1.0f);
        YunetDetection f;
        f.score = std::sqrt(cls * obj);
        if (f.score < score_threshold) continue;
        const float* b = level.bbox.data() + idx * 4;
        const float cx = (static_cast<float>(c) + b[0]) * fs;
        const float cy = (static_cast<float>(r) + b[1]) * fs;
        f.w = std::exp(b[2]) * fs;
        f.h = std::exp(b[3]) * fs;
        f.x = cx - f.w / 2.0f;
        f.y = cy - f.h / 2.0f;
        const float* k = level.kps.data() + idx * 10;
        for (int p = 0; p < 5; ++p) {
          f.landmarks[p] = {(k[2 * p] + static_cast<float>(c)) * fs,
                            (k[2 * p + 1] + static_cast<float>(r)) * fs};
        }
        faces.push_back(f);
      }
    }
  }
  if (faces.size() > 1) {
    std::vector<YunetDetection> kept;
    for (size_t i : NmsBoxes(faces, score_threshold, nms_iou, config.top_k)) {
      kept.push_back(faces[i]);
    }
    return kept;
  }
  return faces;
}

}  // namespace mogserve::model::onnx
