// A plain FP64 interpreter of a LayerPlan, for tests and tools only (not linked into mogserve):
// naive loops, one image at a time, every op written out from its definition. It proves a
// network's wiring against the independent Python reference without LibTorch, and is the yard
// stick for every backend's execution of the same plan.
#pragma once

#include <span>
#include <vector>

#include "model/layer_plan.h"
#include "model/prepared_weights.h"
#include "mogserve/status.h"

namespace mogserve::model {

// The output stage of one image: scores = sigmoid(score logits) [anchors], boxes [anchors, 4],
// anchors in the plan's order (level-major, rows, columns, anchor).
// raw: the raw outputs, each [H, W, C], side by side (LayerPlan::raw_offset).
struct ReferenceOutputs {
  std::vector<double> scores;
  std::vector<double> boxes;
  std::vector<double> raw;
};

// input_chw: 3 x plan.input_height() x plan.input_width(), already normalised
// (model/input_normalization.h). kInvalidArgument when its size does not match the plan.
StatusOr<ReferenceOutputs> RunReference(const LayerPlan& plan, const PreparedWeights& weights,
                                        std::span<const double> input_chw);

}  // namespace mogserve::model
