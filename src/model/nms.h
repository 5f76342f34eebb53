// Greedy hard non-maximum suppression over plain boxes.
#pragma once

#include <vector>

#include "mogserve/detector.h"

namespace mogserve::model {

// Sorts `candidates` by score (highest first, stable for ties) and keeps each box whose IoU with
// every box already kept is <= iou_threshold, stopping at max_keep (<= 0: no limit).
std::vector<Detection> NonMaxSuppression(std::vector<Detection> candidates, float iou_threshold,
                                         int max_keep);

}  // namespace mogserve::model
