#include "model/nms.h"

#include <algorithm>

namespace mogserve::model {

float IoUPlusOne(const Detection& a, const Detection& b) {
  const float iw = std::max(std::min(a.x2, b.x2) - std::max(a.x1, b.x1) + 1.0f, 0.0f);
  const float ih = std::max(std::min(a.y2, b.y2) - std::max(a.y1, b.y1) + 1.0f, 0.0f);
  const float inter = iw * ih;
  const float area_a = (a.x2 - a.x1 + 1.0f) * (a.y2 - a.y1 + 1.0f);
  const float area_b = (b.x2 - b.x1 + 1.0f) * (b.y2 - b.y1 + 1.0f);
  return inter / (area_a + area_b - inter);
}

std::vector<Detection> NonMaxSuppression(std::vector<Detection> candidates, float iou_threshold,
                                         int max_keep, IoUFunction iou) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Detection& a, const Detection& b) { return a.score > b.score; });
  std::vector<Detection> kept;
  for (const Detection& c : candidates) {
    if (max_keep > 0 && static_cast<int>(kept.size()) >= max_keep) break;
    const bool suppressed = std::any_of(
        kept.begin(), kept.end(), [&](const Detection& k) { return iou(c, k) > iou_threshold; });
    if (!suppressed) kept.push_back(c);
  }
  return kept;
}

}  // namespace mogserve::model
