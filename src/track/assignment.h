// Optimal linear assignment with a gate, as ByteTrack calls lap.lapjv(cost, cost_limit): the
// Hungarian method (Kuhn-Munkres with potentials, O(n³)) on the cost matrix bordered by a
// "no match" row and column for every column and row.
#pragma once

#include <utility>
#include <vector>

namespace mogserve::track {

// Matches rows to columns of the row-major `rows` x `cols` matrix `cost` (cost[r * cols + c]),
// each row and each column at most once. A pair costing more than `max_cost`, or a non-finite
// cost, is never matched. Leaving a row or a column unmatched costs max_cost / 2, so the answer
// minimizes Σ (cost - max_cost) over the matched pairs: a pair is worth matching by how far it
// is under the gate, and a pair exactly at the gate is worth nothing either way (lapjv's
// cost_limit semantics: one pair well under the gate beats two just under it; the number of
// pairs is not maximized). max_cost = +infinity: no gate, as many pairs as possible, then the
// cheapest. Returns (row, column) pairs, rows ascending. Empty when rows or cols is 0, when
// cost.size() != rows * cols, or when max_cost is NaN or -infinity.
std::vector<std::pair<int, int>> Assign(const std::vector<float>& cost, int rows, int cols,
                                        float max_cost);

}  // namespace mogserve::track
