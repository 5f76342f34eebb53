#include "model/ssd_box_coder.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/nms.h"

namespace mogserve::model {
namespace {

void AppendCell(std::vector<AnchorBox>& out, float cy, float cx, float scale, float ratio) {
  const float sqrt_ratio = std::sqrt(ratio);
  const float h = scale / sqrt_ratio;
  const float w = scale * sqrt_ratio;
  out.push_back({cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2});
}

struct ScaleRatio {
  float scale, ratio;
};

std::vector<ScaleRatio> LayerAnchorShapes(int layer, const float* scales) {
  if (layer == 0) return {{0.1f, 1.0f}, {scales[0], 2.0f}, {scales[0], 0.5f}};
  const float s = scales[layer];
  return {{s, 1.0f},   {std::sqrt(s * scales[layer + 1]), 1.0f}, {s, 2.0f}, {s, 0.5f}, {s, 3.0f},
          {s, 0.3333f}};
}

}  // namespace

std::vector<AnchorBox> SsdGridAnchors() {
  constexpr int kLayers = 6;
  constexpr int kGrid[kLayers] = {32, 16, 8, 4, 2, 1};
  float scales[kLayers + 1];
  for (int k = 0; k < kLayers; ++k) scales[k] = 0.2f + 0.75f * static_cast<float>(k) / 5.0f;
  scales[kLayers] = 1.0f;
  std::vector<AnchorBox> out;
  out.reserve(kSsdAnchorCount);
  for (int layer = 0; layer < kLayers; ++layer) {
    const int g = kGrid[layer];
    const std::vector<ScaleRatio> shapes = LayerAnchorShapes(layer, scales);
    for (int i = 0; i < g; ++i) {
      for (int j = 0; j < g; ++j) {
        const float cy = (static_cast<float>(i) + 0.5f) / static_cast<float>(g);
        const float cx = (static_cast<float>(j) + 0.5f) / static_cast<float>(g);
        for (const ScaleRatio& sr : shapes) AppendCell(out, cy, cx, sr.scale, sr.ratio);
      }
    }
  }
  return out;
}

StatusOr<std::vector<AnchorBox>> AnchorsFromRows(std::span<const float> rows, int count) {
  if (rows.size() != static_cast<size_t>(count) * 4) {
    return InvalidData("anchor tensor holds " + std::to_string(rows.size()) + " values, expected " +
                       std::to_string(count) + " x 4");
  }
  std::vector<AnchorBox> out(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const float* r = rows.data() + 4 * i;
    out[i] = {r[0], r[1], r[2], r[3]};
  }
  return out;
}

std::vector<Detection> DecodeSsdDetections(std::span<const float> box_encodings,
                                           std::span<const float> scores,
                                           std::span<const AnchorBox> anchors,
                                           const DetectOptions& options,
                                           const image::Letterbox& letterbox) {
  std::vector<Detection> candidates;
  const size_t n = std::min({scores.size(), anchors.size(), box_encodings.size() / 4});
  for (size_t i = 0; i < n; ++i) {
    if (!(scores[i] > options.score_threshold)) continue;
    const AnchorBox& a = anchors[i];
    const float* t = box_encodings.data() + 4 * i;
    const float ha = a.ymax - a.ymin, wa = a.xmax - a.xmin;
    const float yc = t[0] / 10.0f * ha + (a.ymin + a.ymax) / 2;
    const float xc = t[1] / 10.0f * wa + (a.xmin + a.xmax) / 2;
    const float h = std::exp(t[2] / 5.0f) * ha;
    const float w = std::exp(t[3] / 5.0f) * wa;
    candidates.push_back({xc - w / 2, yc - h / 2, xc + w / 2, yc + h / 2, scores[i]});
  }
  // NMS on the unclamped boxes (face-api's order), then clamp to the padded square, map to the
  // original picture and clip to it. A box that lay entirely in the padding has no area left:
  // it is dropped here, before KeepFaces applies max_faces, so it cannot push out a real face.
  const std::vector<Detection> kept =
      NonMaxSuppression(std::move(candidates), options.nms_iou, /*max_keep=*/0);
  const double sx = letterbox.canvas_width * letterbox.to_source_x;
  const double sy = letterbox.canvas_height * letterbox.to_source_y;
  const double max_x = letterbox.content_width * letterbox.to_source_x;
  const double max_y = letterbox.content_height * letterbox.to_source_y;
  auto map = [](float v, double scale, double limit) {
    return static_cast<float>(std::clamp(std::clamp(v, 0.0f, 1.0f) * scale, 0.0, limit));
  };
  std::vector<Detection> faces;
  for (const Detection& k : kept) {
    const Detection d{.x1 = map(k.x1, sx, max_x),
                      .y1 = map(k.y1, sy, max_y),
                      .x2 = map(k.x2, sx, max_x),
                      .y2 = map(k.y2, sy, max_y),
                      .score = k.score};
    if (d.width() > 0 && d.height() > 0) faces.push_back(d);
  }
  return faces;
}

}  // namespace mogserve::model
