// The WIDER FACE validation ground truth, read from the official MAT files
// (wider_face_val.mat and wider_{easy,medium,hard}_val.mat, see
// shared/specs/widerface_eval.md): events, images, face boxes, and per subset the keep-list of the
// faces that count.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "eval/mat_reader.h"
#include "mogserve/status.h"

namespace mogserve::eval {

enum class WiderSubset { kEasy = 0, kMedium = 1, kHard = 2 };
inline constexpr int kWiderSubsets = 3;
// "easy", "medium", "hard"
const char* WiderSubsetName(WiderSubset subset);

// A box as the annotation holds it: top-left corner, width and height in pixels. Values are
// kept as read (w or h may be 0 or negative: the evaluator handles them as MATLAB does).
struct WiderBox {
  double x = 0, y = 0, w = 0, h = 0;
};

struct WiderImage {
  std::string name;  // without ".jpg", e.g. "0_Parade_marchingband_1_465"
  std::vector<WiderBox> faces;
  // Per subset (indexed by WiderSubset): 1-based indices into `faces` of the faces that count
  // there, in file order. The other faces are "don't care" in that subset.
  std::array<std::vector<int>, kWiderSubsets> keep;
};

struct WiderEvent {
  std::string name;  // e.g. "0--Parade"
  std::vector<WiderImage> images;
};

struct WiderGroundTruth {
  std::vector<WiderEvent> events;

  int64_t image_count() const;
  int64_t face_count() const;
  // Faces kept in `subset`, over all images (the evaluator's count_face).
  int64_t kept_count(WiderSubset subset) const;
};

// The file names inside a ground-truth folder.
inline constexpr const char* kWiderValFile = "wider_face_val.mat";
// "wider_easy_val.mat", ...
std::string WiderSubsetFile(WiderSubset subset);

// Builds the ground truth from the parsed files: event_list, file_list and face_bbx_list from
// `val`, gt_list from each subset file (whose event and image counts must match `val`'s). Errors
// name the file, the variable and the cell ({event}{image}, 1-based), and what was wrong.
StatusOr<WiderGroundTruth> WiderGroundTruthFromMat(
    const MatFile& val, const std::array<const MatFile*, kWiderSubsets>& subsets);

// Reads the four files from `dir`.
StatusOr<WiderGroundTruth> LoadWiderGroundTruth(const std::string& dir);

}  // namespace mogserve::eval
