#include "eval/precision_compare.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "eval/wider_evaluator.h"

namespace mogserve::eval {

StatusOr<DetectionDiff> CompareDetections(const DetectionsPerImage& reference,
                                          const DetectionsPerImage& candidate, double match_iou) {
  if (reference.size() != candidate.size()) {
    return InvalidArgument("the runs cover " + std::to_string(reference.size()) + " and " +
                           std::to_string(candidate.size()) + " images");
  }
  DetectionDiff d;
  d.images = static_cast<int64_t>(reference.size());
  double iou_sum = 0, score_diff_sum = 0;
  d.min_iou = 1.0;
  for (size_t i = 0; i < reference.size(); ++i) {
    const std::vector<Detection>& ref = reference[i];
    const std::vector<Detection>& cand = candidate[i];
    d.reference_faces += static_cast<int64_t>(ref.size());
    d.candidate_faces += static_cast<int64_t>(cand.size());
    std::vector<size_t> order(ref.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return ref[a].score > ref[b].score; });
    std::vector<bool> taken(cand.size(), false);
    for (size_t r : order) {
      double best = -1;
      size_t best_c = 0;
      for (size_t c = 0; c < cand.size(); ++c) {
        if (taken[c]) continue;
        const double iou = IoU(ref[r], cand[c]);
        if (iou > best) {
          best = iou;
          best_c = c;
        }
      }
      if (best >= match_iou && best >= 0) {
        taken[best_c] = true;
        ++d.matched;
        iou_sum += best;
        d.min_iou = std::min(d.min_iou, best);
        const double diff = std::fabs(static_cast<double>(ref[r].score) - cand[best_c].score);
        score_diff_sum += diff;
        d.max_abs_score_diff = std::max(d.max_abs_score_diff, diff);
      }
    }
  }
  d.lost = d.reference_faces - d.matched;
  d.gained = d.candidate_faces - d.matched;
  if (d.matched > 0) {
    d.mean_iou = iou_sum / d.matched;
    d.mean_abs_score_diff = score_diff_sum / d.matched;
  } else {
    d.min_iou = 0;
  }
  return d;
}

StatusOr<GroundTruthScore> ScoreAgainstGroundTruth(const DetectionsPerImage& faces,
                                                   const DetectionsPerImage& detections,
                                                   BoxCorners corners) {
  if (faces.size() != detections.size()) {
    return InvalidArgument("ground truth for " + std::to_string(faces.size()) +
                           " images, detections for " + std::to_string(detections.size()));
  }
  WiderGroundTruth gt;
  gt.events.emplace_back();
  gt.events[0].name = "images";
  WiderPredictionSet predictions;
  predictions.boxes.emplace_back(faces.size());
  for (size_t i = 0; i < faces.size(); ++i) {
    WiderImage image;
    image.name = std::to_string(i);
    for (const Detection& f : faces[i]) {
      image.faces.push_back(
          {f.x1, f.y1, static_cast<double>(f.x2) - f.x1, static_cast<double>(f.y2) - f.y1});
    }
    for (auto& keep : image.keep) {
      for (size_t k = 1; k <= image.faces.size(); ++k) keep.push_back(static_cast<int>(k));
    }
    gt.events[0].images.push_back(std::move(image));
    for (const Detection& d : detections[i]) {
      predictions.boxes[0][i].push_back(ToWiderDetection(d, corners));
    }
  }
  MOGSERVE_ASSIGN_OR_RETURN(WiderEvalResult result, EvaluateWider(gt, std::move(predictions)));
  const WiderSubsetResult& all = result.subsets[static_cast<int>(WiderSubset::kHard)];
  GroundTruthScore score;
  score.faces = all.faces;
  score.found = all.true_positives.back();
  score.recall = all.recall.back();
  score.ap = all.ap;
  return score;
}

}  // namespace mogserve::eval
