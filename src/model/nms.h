// Greedy hard non-maximum suppression over plain boxes.
#pragma once

#include <vector>

#include "mogserve/result.h"

namespace mogserve::model {

// Intersection over union of inclusive-pixel-corner boxes, widths and heights counting both end
// pixels (+1), as MogFace and the WIDER FACE tools measure them.
float IoUPlusOne(const Detection& a, const Detection& b);

using IoUFunction = float (*)(const Detection&, const Detection&);

// Sorts `candidates` by score (highest first, stable for ties) and keeps each box whose `iou`
// with every box already kept is <= iou_threshold, stopping at max_keep (<= 0: no limit).
std::vector<Detection> NonMaxSuppression(std::vector<Detection> candidates, float iou_threshold,
                                         int max_keep, IoUFunction iou = &IoU);

}  // namespace mogserve::model
