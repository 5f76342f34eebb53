#include "model/mogface/mogface_postprocess.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>

#include "model/nms.h"

namespace mogserve::model::mogface {
namespace {

constexpr int kLevels = 6;

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
  const float max_x = options.content_width > 0 ? options.content_width : FLT_MAX;
  const float max_y = options.content_height > 0 ? options.content_height : FLT_MAX;
  for (size_t i = 0; i < count; ++i) {
    if (conf[i] > options.score_threshold && anchors[4 * i] < max_x && anchors[4 * i + 1] < max_y) {
      candidates.push_back(static_cast<uint32_t>(i));
    }
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
  // Already in stable score order, so NMS's own stable sort keeps it.
  return NonMaxSuppression(std::move(boxes), options.nms_iou, options.max_faces, &IoUPlusOne);
}

}  // namespace mogserve::model::mogface
