#include "track/assignment.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mogserve::track {

namespace {

// Kuhn-Munkres with row and column potentials on a square matrix (e-maxx's formulation, 1-based
// with a sentinel column 0): adds one row at a time along a shortest augmenting path. Returns,
// for each column, the row it is given (0-based).
std::vector<int> SolveSquare(const std::vector<double>& a, int n) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1, 0.0), v(n + 1, 0.0), min_v(n + 1);
  std::vector<int> row_of(n + 1, 0), way(n + 1, 0);
  std::vector<char> used(n + 1);
  for (int i = 1; i <= n; ++i) {
    row_of[0] = i;
    int j0 = 0;
    std::fill(min_v.begin(), min_v.end(), kInf);
    std::fill(used.begin(), used.end(), 0);
    do {
      used[j0] = 1;
      const int i0 = row_of[j0];
      double delta = kInf;
      int j1 = 0;
      for (int j = 1; j <= n; ++j) {
        if (used[j]) continue;
        const double reduced = a[(i0 - 1) * n + (j - 1)] - u[i0] - v[j];
        if (reduced < min_v[j]) {
          min_v[j] = reduced;
          way[j] = j0;
        }
        if (min_v[j] < delta) {
          delta = min_v[j];
          j1 = j;
        }
      }
      for (int j = 0; j <= n; ++j) {
        if (used[j]) {
          u[row_of[j]] += delta;
          v[j] -= delta;
        } else {
          min_v[j] -= delta;
        }
      }
      j0 = j1;
    } while (row_of[j0] != 0);
    do {
      const int j1 = way[j0];
      row_of[j0] = row_of[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> result(n);
  for (int j = 1; j <= n; ++j) result[j - 1] = row_of[j] - 1;
  return result;
}

}  // namespace

std::vector<std::pair<int, int>> Assign(const std::vector<float>& cost, int rows, int cols,
                                        float max_cost) {
  if (rows <= 0 || cols <= 0) return {};
  if (cost.size() != static_cast<size_t>(rows) * static_cast<size_t>(cols)) return {};
  // Bordered square matrix of side rows + cols, as lapjv's extend_cost:
  //   [ cost (gated)      | max_cost/2 ]   a real row left unmatched takes a dummy column,
  //   [ max_cost/2        | 0          ]   a real column a dummy row; dummies pair for free.
  // A gated pair costs more than leaving both ends unmatched (max_cost), so it is never chosen;
  // it is still finite, so that the potentials stay finite.
  if (std::isnan(max_cost) || max_cost == -std::numeric_limits<float>::infinity()) return {};
  // No gate: a limit above the sum of all costs makes every extra pair worth more than any
  // difference in cost, so as many pairs as possible are matched, then the cheapest.
  double limit = max_cost;
  if (std::isinf(max_cost)) {
    limit = 1.0;
    for (float x : cost) limit += std::isfinite(x) ? 2.0 * std::abs(x) : 0.0;
  }
  const double blocked = 2.0 * std::abs(limit) + 1.0;
  const int n = rows + cols;
  std::vector<double> a(static_cast<size_t>(n) * n, 0.0);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) {
      double value = 0.0;
      if (r < rows && c < cols) {
        const float x = cost[r * cols + c];
        value = std::isfinite(x) && x <= max_cost ? static_cast<double>(x) : blocked;
      } else if (r < rows || c < cols) {
        value = limit / 2.0;
      }
      a[static_cast<size_t>(r) * n + c] = value;
    }
  }
  const std::vector<int> row_of = SolveSquare(a, n);
  std::vector<std::pair<int, int>> pairs;
  for (int c = 0; c < cols; ++c) {
    const int r = row_of[c];
    if (r < rows && std::isfinite(cost[r * cols + c]) && cost[r * cols + c] <= max_cost)
      pairs.emplace_back(r, c);
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

}  // namespace mogserve::track
