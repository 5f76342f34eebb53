// The WIDER FACE evaluation, step for step as the official MATLAB eval_tools compute it
// (shared/specs/widerface_eval.md, "Algorithm"): global score normalisation, per subset the
// keep-lists with "don't care" faces, VOC "+1" IoU at 0.5, greedy matching in score order, the
// PR curve over 1000 thresholds and the VOC-2010 AP. Pure functions, no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "eval/wider_ground_truth.h"
#include "eval/wider_predictions.h"

namespace mogserve::eval {

struct WiderEvalOptions {
  double iou_threshold = 0.5;  // a detection matches a face at IoU >= this
  int thresholds = 1000;       // PR points at score 1 - t/thresholds, t = 1..thresholds
};

// The score range used for normalisation, over every detection of every image.
struct ScoreRange {
  double min = 0;
  double max = 0;
  int64_t detections = 0;
};

// s' = (s - min) / (max - min), with min and max over all detections of the whole set (seeded
// as norm_score.m seeds them: max from realmin('single'), min from realmax('single')). One
// normalisation serves all three subsets. When max == min every score becomes NaN, as in
// MATLAB (0/0), and no detection passes any threshold: the caller should warn.
ScoreRange NormalizeScores(WiderPredictionSet& predictions);

// boxoverlap.m: IoU of corners (x1, y1, x2, y2) with "+1" widths; 0 when the intersection has
// no positive width or height. Degenerate boxes (w or h <= 0, as in the ground truth) are
// computed with the same formula MATLAB uses, so they never match.
double WiderIoU(const std::array<double, 4>& gt, const std::array<double, 4>& det);

// image_evaluation in evaluation.m for one image whose detections are sorted by descending
// score: `keep[k]` true when face k counts (false: don't care). pred_recall[h] is the number of
// kept faces matched by detections 0..h; proposal[h] is 1, or -1 when detection h matched a
// don't-care face (it then leaves the precision count).
struct ImageMatch {
  std::vector<int> pred_recall;
  std::vector<int> proposal;
};
ImageMatch MatchImage(const std::vector<WiderDetection>& sorted_detections,
                      const std::vector<WiderBox>& faces, const std::vector<bool>& keep,
                      double iou_threshold);

// VOCap.m: area under the PR curve after making precision monotone from the right, with the
// points (0, 0) before and (1, 0) after. `recall` ascending, same length as `precision`.
// Precision values that are NaN are skipped by the running max, as MATLAB's max does.
double VocAp(const std::vector<double>& recall, const std::vector<double>& precision);

struct WiderSubsetResult {
  WiderSubset subset = WiderSubset::kEasy;
  double ap = 0;
  int64_t faces = 0;  // count_face: kept faces over all images
  // Index t-1 holds the point at threshold 1 - t/thresholds (from 0.999 down to 0).
  std::vector<double> thresholds;
  std::vector<int64_t> true_positives;  // matched kept faces
  std::vector<int64_t> proposals;       // detections at or above the threshold, minus don't-care
  std::vector<double> precision;        // TP / proposals; 0 where proposals = 0 (MATLAB: NaN)
  std::vector<double> recall;           // TP / faces; 0 where faces = 0
};

struct WiderEvalResult {
  std::array<WiderSubsetResult, kWiderSubsets> subsets;
  ScoreRange scores;
  std::vector<std::string> warnings;  // degenerate inputs, in words
};

// The whole protocol. `predictions` must be aligned with `gt` (same events and images; an image
// may have no detections); each image's detections are sorted here (stable, descending score,
// as read_pred.m sorts), so any order is accepted. InvalidArgument when the shapes differ.
StatusOr<WiderEvalResult> EvaluateWider(const WiderGroundTruth& gt, WiderPredictionSet predictions,
                                        const WiderEvalOptions& options = {});

}  // namespace mogserve::eval
