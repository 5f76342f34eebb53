// What a reduced precision (BF16, FP16) changes in a detector's output, image by image against
// the FP32 run (`mogserve eval compare`), and how both score against hand-made ground truth.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/wider_predictions.h"
#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve::eval {

// Detections of a set of images, in the same image order for every run.
using DetectionsPerImage = std::vector<std::vector<Detection>>;

struct DetectionDiff {
  int64_t images = 0;
  int64_t reference_faces = 0;  // FP32
  int64_t candidate_faces = 0;  // the reduced precision
  int64_t matched = 0;          // pairs of one reference and one candidate face
  int64_t lost = 0;             // reference faces with no candidate partner
  int64_t gained = 0;           // candidate faces with no reference partner
  // Over matched pairs (0 when there are none): box IoU (no +1) and |score difference|.
  double mean_iou = 0;
  double min_iou = 0;
  double mean_abs_score_diff = 0;
  double max_abs_score_diff = 0;

  int64_t changed() const { return lost + gained; }
};

// Pairs faces image by image: each reference face, best score first, takes the unpaired
// candidate face it overlaps most, if that IoU (no +1) is at least `match_iou`. InvalidArgument
// when the two runs cover different numbers of images.
StatusOr<DetectionDiff> CompareDetections(const DetectionsPerImage& reference,
                                          const DetectionsPerImage& candidate,
                                          double match_iou = 0.5);

// Detections scored against ground truth with the WIDER protocol (global score normalisation,
// +1 IoU >= 0.5, greedy matching, 1000 thresholds, VOC AP), every face kept. Images without
// faces are skipped, as the protocol skips them: their detections count for nothing.
struct GroundTruthScore {
  int64_t faces = 0;
  int64_t found = 0;  // faces matched at the lowest threshold (every detection)
  double recall = 0;  // found / faces
  double ap = 0;
};
// `faces` holds the true faces of each image as (x1, y1, x2, y2) edges (score unused);
// `detections` are converted with `corners` (see ToWiderDetection).
StatusOr<GroundTruthScore> ScoreAgainstGroundTruth(const DetectionsPerImage& faces,
                                                   const DetectionsPerImage& detections,
                                                   BoxCorners corners);

}  // namespace mogserve::eval
