// insightface SCRFD's post-processing, as insightface's python-package/insightface/model_zoo/
// scrfd.py does it (SCRFD.forward and SCRFD.detect, insightface 0.7.3): per stride, anchor centres
// on the stride's grid (x, y) · stride, each repeated for the cell's anchors; boxes from the
// distances (left, top, right, bottom) · stride around the centre (distance2bbox), landmarks
// from the offsets · stride (distance2kps); scores >= the threshold kept; then the picture's
// boxes (canvas / det_scale) by score, greedy NMS at IoU > nms_iou with +1 areas (insightface's
// nms). Torch-free.
#pragma once

#include <array>
#include <span>
#include <vector>

namespace mogserve::model::onnx {

struct ScrfdConfig {
  int input_height = 640, input_width = 640;  // the canvas
  std::vector<int> strides = {8, 16, 32};     // 8, 16, 32[, 64, 128]
  int anchors_per_cell = 2;
  bool landmarks = true;
  float score_threshold = 0.5f;  // insightface's det_thresh
  float nms_iou = 0.4f;          // insightface's nms_thresh
};

struct ScrfdDetection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // picture pixels (canvas / det_scale), not clipped
  float score = 0;
  bool has_landmarks = false;
  // Left eye, right eye, nose, left and right mouth corner (the image's left and right).
  std::array<std::array<float, 2>, 5> landmarks{};
};

// One stride's outputs of one image, in anchor order: scores [A] (after the graph's sigmoid),
// boxes [A, 4], landmarks [A, 10] (empty without).
struct ScrfdLevel {
  std::span<const float> scores, boxes, landmarks;
};

// The faces of one image: levels in the config's stride order, det_scale the canvas-per-picture
// factor insightface divides by. Highest score first.
std::vector<ScrfdDetection> DecodeScrfd(const ScrfdConfig& config,
                                        std::span<const ScrfdLevel> levels, float det_scale,
                                        float score_threshold, float nms_iou);

}  // namespace mogserve::model::onnx
