// WIDER FACE prediction files (shared/specs/widerface_eval.md, "Prediction files"): one text file
// per image, pred_dir/<event>/<image>.txt, holding the image name, the count N, then N lines
// "x y w h score" in original-image pixels with (x, y) the top-left corner.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "eval/wider_ground_truth.h"
#include "mogserve/result.h"
#include "mogserve/status.h"

namespace mogserve::eval {

struct WiderDetection {
  double x = 0, y = 0, w = 0, h = 0;  // top-left corner, width, height (pixels)
  double score = 0;
};

// Detections aligned with a WiderGroundTruth: boxes[event][image]. An image with an empty list
// has no detections (as MATLAB treats a missing or invalid file).
struct WiderPredictionSet {
  std::vector<std::vector<std::vector<WiderDetection>>> boxes;

  // One empty list per image of `gt`.
  static WiderPredictionSet EmptyFor(const WiderGroundTruth& gt);
  int64_t detection_count() const;
};

// How a detector's (x1, y1, x2, y2) corners are meant, which decides the width written.
enum class BoxCorners {
  // x2 is the right edge (continuous coordinates, the SSD's boxes): w = x2 - x1.
  kEdges,
  // x2 is the last pixel covered (MogFace's training and test code, ModelScope): w = x2 - x1 + 1,
  // as MogFace's own WIDER writer does (shared/specs/mogface.md §7).
  kInclusive,
};

// x = x1, y = y1, w and h as `corners` says, score unchanged. The evaluator then uses corners
// (x, y, x + w, y + h) with the VOC "+1" convention, for detections and ground truth alike, so a
// box written this way covers the same pixels as the detector's.
WiderDetection ToWiderDetection(const Detection& d, BoxCorners corners);

// The text of one prediction file: `name`, the count, then one "x y w h score" line per
// detection, highest score first (a stable sort: ties keep their order).
std::string FormatPredictionFile(const std::string& name, std::vector<WiderDetection> detections);
// Writes FormatPredictionFile(...) to `path`, creating its folder.
Status WritePredictionFile(const std::string& path, const std::string& name,
                           const std::vector<WiderDetection>& detections);

// Parses one file the way the official read_pred.m does: line 1 (the name) is ignored; line 2 is
// the count N; the next N non-blank lines each give at least 5 numbers (separated by spaces, tabs
// or commas), of which the first four are x y w h and the LAST is the score; lines after those N
// are ignored. Not sorted here (the evaluator sorts). InvalidData says what is wrong and on which
// line; MATLAB then drops the whole file, and so does ReadWiderPredictions.
StatusOr<std::vector<WiderDetection>> ParsePredictionFile(std::string_view text);

struct PredictionReadReport {
  int64_t files_read = 0;
  std::vector<std::string> missing;  // "<event>/<image>.txt" (the image has no detections)
  std::vector<std::string> invalid;  // "<event>/<image>.txt: <why>" (likewise)
};

// Reads dir/<event>/<image>.txt for every image of `gt`. Missing and invalid files are not
// errors (MATLAB warns and treats the image as having no detections); they are listed in
// `report`. Fails only when `dir` is not a folder.
StatusOr<WiderPredictionSet> ReadWiderPredictions(const std::string& dir,
                                                  const WiderGroundTruth& gt,
                                                  PredictionReadReport* report);

}  // namespace mogserve::eval
