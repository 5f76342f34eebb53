#include "model/mogface/mogface_postprocess.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>

#include "model/face_model.h"
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

DetectOptions MogFaceDefaultDetectOptions() {
  const MogFacePostOptions post;
  DetectOptions d;
  d.score_threshold = post.score_threshold;
  d.top_k = post.top_k;
  d.nms_iou = post.nms_iou;
  d.max_faces = post.max_faces;
  return d;
}

std::vector<Detection> MogFaceDetections(std::span<const float> conf, std::span<const float> loc,
                                         std::span<const float> anchors,
                                         const image::Letterbox& letterbox,
                                         const DetectOptions& options) {
  MogFacePostOptions post;
  post.score_threshold = options.score_threshold;
  post.top_k = options.top_k > 0 ? options.top_k : static_cast<int>(conf.size());
  post.nms_iou = options.nms_iou;
  post.max_faces = 0;  // KeepFaces cuts, after the boxes left without area are dropped
  // Skip anchors centred in padding only when there is padding: without it, the last cell of
  // a level whose size was rounded up (n -> ceil(n/2)) may be centred just past the picture,
  // and ModelScope keeps it.
  if (letterbox.content_width < letterbox.canvas_width) {
    post.content_width = static_cast<float>(letterbox.content_width);
  }
  if (letterbox.content_height < letterbox.canvas_height) {
    post.content_height = static_cast<float>(letterbox.content_height);
  }
  const double scale_x = 1.0 / letterbox.to_source_x;
  std::vector<Detection> faces =
      PostprocessMogFace(conf, loc, anchors, static_cast<float>(scale_x), post);
  const float fix_y = static_cast<float>(letterbox.to_source_y * scale_x);
  for (Detection& d : faces) {
    d.y1 *= fix_y;
    d.y2 *= fix_y;
  }
  ClipToPicture(faces, letterbox);
  return faces;
}

}  // namespace mogserve::model::mogface
