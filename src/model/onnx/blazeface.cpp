#include "model/onnx/blazeface.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "mogserve/result.h"

namespace mogserve::model::onnx {
namespace {

// The project's one IoU (mogserve/result.h) on the two boxes.
float BoxIoU(const BlazeFaceDetection& a, const BlazeFaceDetection& b) {
  return IoU(Detection{.x1 = a.x1, .y1 = a.y1, .x2 = a.x2, .y2 = a.y2},
             Detection{.x1 = b.x1, .y1 = b.y1, .x2 = b.x2, .y2 = b.y2});
}

}  // namespace

BlazeFaceConfig BlazeFaceFront() {
  BlazeFaceConfig c;
  c.input_side = 128;
  c.strides = {8, 16, 16, 16};
  return c;
}

BlazeFaceConfig BlazeFaceBack() {
  BlazeFaceConfig c;
  c.input_side = 256;
  c.strides = {16, 32, 32, 32};
  c.score_threshold = 0.65f;
  return c;
}

std::vector<std::array<float, 2>> BlazeFaceAnchors(const BlazeFaceConfig& config) {
  std::vector<std::array<float, 2>> anchors;
  const int layers = static_cast<int>(config.strides.size());
  for (int layer = 0; layer < layers;) {
    // Layers of the same stride share one grid; each adds an anchor of aspect ratio 1 and one
    // interpolated between its scale and the next. With fixed_anchor_size every anchor is a 1 x 1
    // box, so the layers' scales (min_scale .. max_scale) do not enter: only the count does.
    int last = layer;
    int per_cell = 0;
    while (last < layers && config.strides[last] == config.strides[layer]) {
      per_cell += 2;
      ++last;
    }
    const int side = (config.input_side + config.strides[layer] - 1) / config.strides[layer];
    for (int y = 0; y < side; ++y) {
      for (int x = 0; x < side; ++x) {
        for (int a = 0; a < per_cell; ++a) {
          anchors.push_back({(x + 0.5f) / side, (y + 0.5f) / side});
        }
      }
    }
    layer = last;
  }
  return anchors;
}

std::vector<BlazeFaceDetection> DecodeBlazeFace(const BlazeFaceConfig& config,
                                                std::span<const float> logits,
                                                std::span<const float> regressors,
                                                float score_threshold, float nms_iou,
                                                int max_faces) {
  const std::vector<std::array<float, 2>> anchors = BlazeFaceAnchors(config);
  const size_t count = std::min({anchors.size(), logits.size(), regressors.size() / 16});
  const float side = static_cast<float>(config.input_side);
  std::vector<BlazeFaceDetection> candidates;
  for (size_t i = 0; i < count; ++i) {
    const float logit = std::clamp(logits[i], -100.0f, 100.0f);
    const float score = 1.0f / (1.0f + std::exp(-logit));
    if (score < score_threshold) continue;
    const float* r = regressors.data() + i * 16;
    // Offsets and sizes are in canvas pixels (scale = the input side), the anchors in [0, 1];
    // the result is taken back to pixels.
    const float cx = r[0] / side + anchors[i][0];
    const float cy = r[1] / side + anchors[i][1];
    const float w = r[2] / side, h = r[3] / side;
    if (!(w > 0 && h > 0)) continue;  // negative or NaN sizes, as MediaPipe drops them
    BlazeFaceDetection d;
    d.x1 = (cx - w / 2) * side;
    d.y1 = (cy - h / 2) * side;
    d.x2 = (cx + w / 2) * side;
    d.y2 = (cy + h / 2) * side;
    d.score = score;
    for (int k = 0; k < kBlazeFaceKeypoints; ++k) {
      d.keypoints[k] = {(r[4 + 2 * k] / side + anchors[i][0]) * side,
                        (r[5 + 2 * k] / side + anchors[i][1]) * side};
    }
    candidates.push_back(d);
  }
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const BlazeFaceDetection& a, const BlazeFaceDetection& b) { return a.score > b.score; });
  std::vector<BlazeFaceDetection> faces;
  std::vector<bool> taken(candidates.size(), false);
  for (size_t top = 0; top < candidates.size(); ++top) {
    if (taken[top]) continue;
    if (max_faces > 0 && static_cast<int>(faces.size()) >= max_faces) break;
    // The cluster: the best remaining face and every remaining one overlapping it by more than
    // nms_iou (itself included), averaged by score.
    double total = 0, box[4] = {0, 0, 0, 0};
    double keypoints[kBlazeFaceKeypoints][2] = {};
    for (size_t j = top; j < candidates.size(); ++j) {
      if (taken[j] || BoxIoU(candidates[top], candidates[j]) <= nms_iou) continue;
      taken[j] = true;
      const BlazeFaceDetection& c = candidates[j];
      total += c.score;
      box[0] += c.x1 * c.score;
      box[1] += c.y1 * c.score;
      box[2] += c.x2 * c.score;
      box[3] += c.y2 * c.score;
      for (int k = 0; k < kBlazeFaceKeypoints; ++k) {
        keypoints[k][0] += c.keypoints[k][0] * c.score;
        keypoints[k][1] += c.keypoints[k][1] * c.score;
      }
    }
    BlazeFaceDetection d = candidates[top];
    if (total > 0) {
      d.x1 = static_cast<float>(box[0] / total);
      d.y1 = static_cast<float>(box[1] / total);
      d.x2 = static_cast<float>(box[2] / total);
      d.y2 = static_cast<float>(box[3] / total);
      for (int k = 0; k < kBlazeFaceKeypoints; ++k) {
        d.keypoints[k] = {static_cast<float>(keypoints[k][0] / total),
                          static_cast<float>(keypoints[k][1] / total)};
      }
    }
    taken[top] = true;
    faces.push_back(d);
  }
  return faces;
}

}  // namespace mogserve::model::onnx
