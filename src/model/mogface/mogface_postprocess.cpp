#include "model/mogface/mogface_postprocess.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mogserve::model::mogface {
namespace {

constexpr int kLevels = 6;

// IoU of inclusive-corner boxes: widths and heights count both end pixels (+1).
float IoUPlusOne(const Detection& a, const Detection& b) {
  const float iw = std::max(std::min(a.x2, b.x2) - std::max(a.x1, b.x1) + 1.0f, 0.0f);
  const float ih = std::max(std::min(a.y2, b.y2) - std::max(a.y1, b.y1) + 1.0f, 0.0f);
  const float inter = iw * ih;
  const float area_a = (a.x2 - a.x1 + 1.0f) * (a.y2 - a.y1 + 1.0f);
  const float area_b = (b.x2 - b.x1 + 1.0f) * (b.y2 - b.y1 + 1.0f);
  return inter / (area_a + area_b - inter);
}

Detection Decode(const float* delta, const float* anchor, float score) {
  const float cx = anchor[0] + delta[0] * anchor[2];
  const float cy = anchor[1] + delta[1] * anchor[3];
  const float w = anchor[2] * std::exp(delta[2]);
  const float h = anchor[3] * std::exp(delta[3]);
  const float x1 = cx - (w - 1.0f) / 2.0f;
  const float y1 = cy - (h - 1.0f) / 2.0f;
  return {x1, y1, x1 + w - 1.0f, y1 + h - 1.0f, score};
}

}  // namespace

std::vector<float> MogFaceAnchors(int input_h, int input_w, Variant variant) {
  std::vector<float> out;
  const double scale = AnchorScale(variant);
  int h = (input_h + 1) / 2, w = (input_w + 1) / 2;  // stride 2, then P2 at stride 4 below
  for (int level = 0; level < kLevels; ++level) {
    h = (h + 1) / 2;
    w = (w + 1) / 2;
    const float stride = static_cast<float>(4 << level);
    const float side = static_cast<float>(16.0 * (1 << level) * scale);
    for (int i = 0; i < h; ++i) {
      for (int j = 0; j < w; ++j) {
        out.insert(out.end(), {(static_cast<float>(j) + 0.5f) * stride,
                               (static_cast<float>(i) + 0.5f) * stride, side, side});
      }
    }
  }
  return out;
}

std::vector<Detection> PostprocessMogFace(std::span<const float> conf, std::span<const float> loc,
                                          std::span<const float> anchors, float resize_scale,
                                          const MogFacePostOptions& options) {
  const size_t count = std::min({conf.size(), loc.size() / 4, anchors.size() / 4});
  std::vector<uint32_t> candidates;
  for (size_t i = 0; i < count; ++i) {
    if (conf[i] > options.score_threshold) candidates.push_back(static_cast<uint32_t>(i));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](uint32_t a, uint32_t b) { return conf[a] > conf[b]; });
  if (options.top_k > 0 && candidates.size() > static_cast<size_t>(options.top_k)) {
    candidates.resize(static_cast<size_t>(options.top_k));
  }
  std::vector<Detection> boxes;
  boxes.reserve(candidates.size());
  for (uint32_t i : candidates) {
    Detection d = Decode(&loc[4 * i], &anchors[4 * i], conf[i]);
    d.x1 /= resize_scale;
    d.y1 /= resize_scale;
    d.x2 /= resize_scale;
    d.y2 /= resize_scale;
    boxes.push_back(d);
  }
  std::vector<Detection> kept;
  std::vector<bool> removed(boxes.size(), false);
  for (size_t i = 0; i < boxes.size(); ++i) {
    if (removed[i]) continue;
    if (options.max_faces > 0 && static_cast<int>(kept.size()) >= options.max_faces) break;
    kept.push_back(boxes[i]);
    for (size_t j = i + 1; j < boxes.size(); ++j) {
      if (!removed[j] && IoUPlusOne(boxes[i], boxes[j]) > options.nms_iou) removed[j] = true;
    }
  }
  return kept;
}

}  // namespace mogserve::model::mogface
