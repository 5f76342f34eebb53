// SSD anchors and box decoding for the face-api SSD-MobileNetV1 (spec: shipped_face_models.md
// §2.4-§2.5). Torch-free: runs in the post-processing pool on plain float arrays.
#pragma once

#include <span>
#include <vector>

#include "image/resize.h"
#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve::model {

// A prior box in coordinates normalised to the square model input (0..1, may exceed the range).
struct AnchorBox {
  float ymin = 0, xmin = 0, ymax = 0, xmax = 0;
};

inline constexpr int kSsdAnchorCount = 5118;

// The TF Object Detection API grid that the weights file's anchors were generated from
// (6 layers, grids 32..1, scales 0.2..0.95, the layer-0 special case); for checking the file.
std::vector<AnchorBox> SsdGridAnchors();

// Anchors from a flat [count, 4] array of (ymin, xmin, ymax, xmax).
StatusOr<std::vector<AnchorBox>> AnchorsFromRows(std::span<const float> rows, int count);

// Turns one image's raw outputs into faces in original-picture pixels:
//   box_encodings: [anchors, 4] (ty, tx, th, tw) with scale factors 10, 10, 5, 5
//   scores:        [anchors] face probabilities (sigmoid already applied)
// Keeps scores > options.score_threshold, runs NMS at options.nms_iou, clamps to the unit square,
// maps through `letterbox` (canvas → original pixels), clips to the picture and drops boxes left
// with no area (they lay in the padding). Every face, best first: max_faces is KeepFaces'.
std::vector<Detection> DecodeSsdDetections(std::span<const float> box_encodings,
                                           std::span<const float> scores,
                                           std::span<const AnchorBox> anchors,
                                           const DetectOptions& options,
                                           const image::Letterbox& letterbox);

}  // namespace mogserve::model
