#include "eval/wider_evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mogserve::eval {
namespace {

std::array<double, 4> Corners(double x, double y, double w, double h) {
  return {x, y, x + w, y + h};
}

// Per-threshold counts of one image (image_pr_info): the detections at or above each threshold
// are a prefix of the sorted list, so one pointer walks down with the threshold.
void AddImageCounts(const std::vector<WiderDetection>& sorted, const ImageMatch& match,
                    const std::vector<double>& thresholds, std::vector<int64_t>& tp,
                    std::vector<int64_t>& proposals) {
  size_t above = 0;     // detections with score >= threshold
  int64_t counted = 0;  // of those, proposal == 1
  for (size_t t = 0; t < thresholds.size(); ++t) {
    while (above < sorted.size() && sorted[above].score >= thresholds[t]) {
      if (match.proposal[above] == 1) ++counted;
      ++above;
    }
    if (above == 0) continue;  // none above: adds 0 to both
    tp[t] += match.pred_recall[above - 1];
    proposals[t] += counted;
  }
}

WiderSubsetResult EvaluateSubset(const WiderGroundTruth& gt, const WiderPredictionSet& sorted,
                                 WiderSubset subset, const WiderEvalOptions& options) {
  WiderSubsetResult r;
  r.subset = subset;
  const size_t n = static_cast<size_t>(options.thresholds);
  for (size_t t = 1; t <= n; ++t) r.thresholds.push_back(1.0 - static_cast<double>(t) / n);
  r.true_positives.assign(n, 0);
  r.proposals.assign(n, 0);
  for (size_t e = 0; e < gt.events.size(); ++e) {
    for (size_t i = 0; i < gt.events[e].images.size(); ++i) {
      const WiderImage& image = gt.events[e].images[i];
      const std::vector<int>& keep_index = image.keep[static_cast<int>(subset)];
      r.faces += static_cast<int64_t>(keep_index.size());  // counted even when skipped below
      const std::vector<WiderDetection>& dets = sorted.boxes[e][i];
      if (image.faces.empty() || dets.empty()) continue;
      std::vector<bool> keep(image.faces.size(), false);
      for (int k : keep_index) keep[static_cast<size_t>(k - 1)] = true;
      const ImageMatch match = MatchImage(dets, image.faces, keep, options.iou_threshold);
      AddImageCounts(dets, match, r.thresholds, r.true_positives, r.proposals);
    }
  }
  r.precision.resize(n);
  r.recall.resize(n);
  for (size_t t = 0; t < n; ++t) {
    // MATLAB divides 0/0 into NaN here; precision 0 gives the same AP (P = 0 implies TP = 0, so
    // such points sit at recall 0, where the AP sum does not look) and a curve without NaN.
    r.precision[t] =
        r.proposals[t] > 0 ? static_cast<double>(r.true_positives[t]) / r.proposals[t] : 0.0;
    r.recall[t] = r.faces > 0 ? static_cast<double>(r.true_positives[t]) / r.faces : 0.0;
  }
  r.ap = VocAp(r.recall, r.precision);
  return r;
}

}  // namespace

ScoreRange NormalizeScores(WiderPredictionSet& predictions) {
  ScoreRange range;
  range.max = std::numeric_limits<float>::min();  // realmin('single')
  range.min = std::numeric_limits<float>::max();  // realmax('single')
  for (const auto& event : predictions.boxes) {
    for (const auto& image : event) {
      for (const WiderDetection& d : image) {
        range.max = std::max(range.max, d.score);
        range.min = std::min(range.min, d.score);
        ++range.detections;
      }
    }
  }
  const double span = range.max - range.min;
  for (auto& event : predictions.boxes) {
    for (auto& image : event) {
      for (WiderDetection& d : image) d.score = (d.score - range.min) / span;
    }
  }
  return range;
}

double WiderIoU(const std::array<double, 4>& gt, const std::array<double, 4>& det) {
  const double iw = std::min(gt[2], det[2]) - std::max(gt[0], det[0]) + 1;
  const double ih = std::min(gt[3], det[3]) - std::max(gt[1], det[1]) + 1;
  if (iw <= 0 || ih <= 0) return 0.0;
  const double inter = iw * ih;
  const double gt_area = (gt[2] - gt[0] + 1) * (gt[3] - gt[1] + 1);
  const double det_area = (det[2] - det[0] + 1) * (det[3] - det[1] + 1);
  return inter / (gt_area + det_area - inter);
}

ImageMatch MatchImage(const std::vector<WiderDetection>& sorted_detections,
                      const std::vector<WiderBox>& faces, const std::vector<bool>& keep,
                      double iou_threshold) {
  ImageMatch m;
  m.pred_recall.assign(sorted_detections.size(), 0);
  m.proposal.assign(sorted_detections.size(), 1);
  std::vector<std::array<double, 4>> gt;
  for (const WiderBox& f : faces) gt.push_back(Corners(f.x, f.y, f.w, f.h));
  std::vector<int> recall(faces.size(), 0);  // 1 matched, -1 don't care hit, 0 neither
  int matched = 0;
  for (size_t h = 0; h < sorted_detections.size(); ++h) {
    const WiderDetection& d = sorted_detections[h];
    const std::array<double, 4> box = Corners(d.x, d.y, d.w, d.h);
    // [max_overlap, idx] = max(overlap_list): the first face with the highest IoU; a NaN IoU
    // (0/0 on degenerate boxes) is skipped as MATLAB's max skips it.
    double best = -std::numeric_limits<double>::infinity();
    size_t best_k = 0;
    for (size_t k = 0; k < gt.size(); ++k) {
      const double iou = WiderIoU(gt[k], box);
      if (iou > best) {
        best = iou;
        best_k = k;
      }
    }
    if (best >= iou_threshold) {
      if (!keep[best_k]) {
        recall[best_k] = -1;
        m.proposal[h] = -1;
      } else if (recall[best_k] == 0) {
        recall[best_k] = 1;
        ++matched;
      }  // else: a duplicate of a matched face, a false positive
    }
    m.pred_recall[h] = matched;
  }
  return m;
}

double VocAp(const std::vector<double>& recall, const std::vector<double>& precision) {
  std::vector<double> mrec = {0.0}, mpre = {0.0};
  mrec.insert(mrec.end(), recall.begin(), recall.end());
  mpre.insert(mpre.end(), precision.begin(), precision.end());
  mrec.push_back(1.0);
  mpre.push_back(0.0);
  for (size_t i = mpre.size() - 1; i-- > 0;) {
    // MATLAB's max(a, b) returns the other argument when one is NaN.
    if (std::isnan(mpre[i]) || mpre[i + 1] > mpre[i]) mpre[i] = mpre[i + 1];
  }
  double ap = 0;
  for (size_t i = 1; i < mrec.size(); ++i) {
    if (mrec[i] != mrec[i - 1]) ap += (mrec[i] - mrec[i - 1]) * mpre[i];
  }
  return ap;
}

StatusOr<WiderEvalResult> EvaluateWider(const WiderGroundTruth& gt, WiderPredictionSet predictions,
                                        const WiderEvalOptions& options) {
  if (options.thresholds < 1) return InvalidArgument("thresholds must be at least 1");
  if (predictions.boxes.size() != gt.events.size()) {
    return InvalidArgument("predictions have " + std::to_string(predictions.boxes.size()) +
                           " events, the ground truth " + std::to_string(gt.events.size()));
  }
  for (size_t e = 0; e < gt.events.size(); ++e) {
    if (predictions.boxes[e].size() != gt.events[e].images.size()) {
      return InvalidArgument("event " + gt.events[e].name + ": predictions for " +
                             std::to_string(predictions.boxes[e].size()) + " images, the ground " +
                             "truth has " + std::to_string(gt.events[e].images.size()));
    }
  }
  WiderEvalResult result;
  for (auto& event : predictions.boxes) {
    for (auto& image : event) {
      std::stable_sort(
          image.begin(), image.end(),
          [](const WiderDetection& a, const WiderDetection& b) { return a.score > b.score; });
    }
  }
  result.scores = NormalizeScores(predictions);
  if (result.scores.detections == 0) {
    result.warnings.push_back("there are no detections at all: every AP is 0");
  } else if (!(result.scores.max > result.scores.min)) {
    result.warnings.push_back(
        "every detection has the same score; the official normalisation divides by zero "
        "(max - min = 0), so no detection passes any threshold and every AP is 0");
  }
  for (int s = 0; s < kWiderSubsets; ++s) {
    result.subsets[s] = EvaluateSubset(gt, predictions, static_cast<WiderSubset>(s), options);
    if (result.subsets[s].faces == 0) {
      result.warnings.push_back(std::string("subset ") +
                                WiderSubsetName(static_cast<WiderSubset>(s)) +
                                " keeps no faces: its recall and AP are 0");
    }
  }
  return result;
}

}  // namespace mogserve::eval
