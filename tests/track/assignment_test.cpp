#include "track/assignment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace mogserve::track {
namespace {

using Pairs = std::vector<std::pair<int, int>>;

// The objective Assign minimizes: Σ (cost - max_cost) over the matched pairs.
double Objective(const Pairs& pairs, const std::vector<float>& cost, int cols, float max_cost) {
  double sum = 0;
  for (const auto& [r, c] : pairs) sum += static_cast<double>(cost[r * cols + c]) - max_cost;
  return sum;
}

// Every partial matching of allowed pairs, row by row: each row unmatched or given a free column.
double BruteForce(const std::vector<float>& cost, int rows, int cols, float max_cost, int row,
                  std::vector<char>& used) {
  if (row == rows) return 0.0;
  double best = BruteForce(cost, rows, cols, max_cost, row + 1, used);
  for (int c = 0; c < cols; ++c) {
    const float x = cost[row * cols + c];
    if (used[c] || !(x <= max_cost)) continue;
    used[c] = 1;
    best = std::min(best, (static_cast<double>(x) - max_cost) +
                              BruteForce(cost, rows, cols, max_cost, row + 1, used));
    used[c] = 0;
  }
  return best;
}

// Each row and column at most once, rows ascending, nothing over the gate.
void ExpectWellFormed(const Pairs& pairs, const std::vector<float>& cost, int rows, int cols,
                      float max_cost) {
  std::set<int> seen_rows, seen_cols;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto [r, c] = pairs[i];
    ASSERT_GE(r, 0);
    ASSERT_LT(r, rows);
    ASSERT_GE(c, 0);
    ASSERT_LT(c, cols);
    EXPECT_TRUE(seen_rows.insert(r).second) << "row " << r << " twice";
    EXPECT_TRUE(seen_cols.insert(c).second) << "column " << c << " twice";
    EXPECT_LE(cost[r * cols + c], max_cost);
    if (i > 0) {
      EXPECT_LT(pairs[i - 1].first, r);
    }
  }
}

TEST(AssignmentTest, FindsTheKnownOptimumWhereGreedyFails) {
  // Greedy takes (0,0) = 1 first and ends at 1 + 3 + 8 = 12; the unique optimum is
  // (0,1) + (1,2) + (2,0) = 2 + 3 + 2 = 7.
  const std::vector<float> cost = {1, 2, 8,  //
                                   2, 9, 3,  //
                                   2, 8, 9};
  const Pairs pairs = Assign(cost, 3, 3, 100.0f);
  EXPECT_EQ(pairs, (Pairs{{0, 1}, {1, 2}, {2, 0}}));
}

TEST(AssignmentTest, MatchesBruteForceOnRandomRectangularMatrices) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    const int rows = std::uniform_int_distribution<int>(1, 7)(rng);
    const int cols = std::uniform_int_distribution<int>(1, 7)(rng);
    std::uniform_real_distribution<float> value(0.0f, 1.0f);
    std::vector<float> cost(rows * cols);
    for (float& x : cost) x = value(rng);
    for (float max_cost : {0.3f, 0.6f, 0.9f, 5.0f}) {
      const Pairs pairs = Assign(cost, rows, cols, max_cost);
      ExpectWellFormed(pairs, cost, rows, cols, max_cost);
      std::vector<char> used(cols, 0);
      EXPECT_NEAR(Objective(pairs, cost, cols, max_cost),
                  BruteForce(cost, rows, cols, max_cost, 0, used), 1e-5)
          << "seed " << seed << " " << rows << "x" << cols << " max_cost " << max_cost;
      // Far above every cost the gate is no constraint: as many pairs as the smaller side.
      if (max_cost == 5.0f) {
        EXPECT_EQ(static_cast<int>(pairs.size()), std::min(rows, cols));
      }
    }
  }
}

TEST(AssignmentTest, FiveBySevenMatchesBruteForce) {
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> value(0.0f, 1.0f);
  for (int round = 0; round < 20; ++round) {
    for (const auto& [rows, cols] : {std::pair{5, 7}, std::pair{7, 5}}) {
      std::vector<float> cost(rows * cols);
      for (float& x : cost) x = value(rng);
      const Pairs pairs = Assign(cost, rows, cols, 0.8f);
      ExpectWellFormed(pairs, cost, rows, cols, 0.8f);
      std::vector<char> used(cols, 0);
      EXPECT_NEAR(Objective(pairs, cost, cols, 0.8f), BruteForce(cost, rows, cols, 0.8f, 0, used),
                  1e-5);
    }
  }
}

TEST(AssignmentTest, PairsOverTheGateAreNeverMatched) {
  // The cheapest complete matching is the diagonal, but both its pairs are over the gate.
  const std::vector<float> cost = {0.6f, 0.1f,  //
                                   0.95f, 0.7f};
  EXPECT_EQ(Assign(cost, 2, 2, 0.5f), (Pairs{{0, 1}}));
  // Everything over the gate: nothing matched.
  EXPECT_TRUE(Assign({0.9f, 0.8f, 0.7f}, 1, 3, 0.5f).empty());
}

TEST(AssignmentTest, PrefersOneGoodPairToTwoMarginalOnes) {
  // lapjv's cost_limit objective: {(0,0)} is 0.4 under the gate, {(0,1), (1,0)} only 0.1 in all.
  const std::vector<float> cost = {0.1f, 0.45f,  //
                                   0.45f, 0.9f};
  EXPECT_EQ(Assign(cost, 2, 2, 0.5f), (Pairs{{0, 0}}));
  // Without a gate as many pairs as possible.
  EXPECT_EQ(Assign(cost, 2, 2, std::numeric_limits<float>::infinity()), (Pairs{{0, 1}, {1, 0}}));
}

TEST(AssignmentTest, NonFiniteCostsAreNeverMatched) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Assign({nan, 0.2f, inf, 0.3f}, 2, 2, 0.5f), (Pairs{{0, 1}}));
  EXPECT_EQ(Assign({inf, 0.2f, inf, 0.3f}, 2, 2, inf), (Pairs{{0, 1}}));
}

TEST(AssignmentTest, EmptyAndMalformedInputsMatchNothing) {
  EXPECT_TRUE(Assign({}, 0, 0, 1.0f).empty());
  EXPECT_TRUE(Assign({}, 0, 4, 1.0f).empty());
  EXPECT_TRUE(Assign({}, 3, 0, 1.0f).empty());
  EXPECT_TRUE(Assign({0.1f, 0.2f, 0.3f}, 2, 2, 1.0f).empty());  // size is not rows * cols
  EXPECT_TRUE(Assign({0.1f}, 1, 1, std::numeric_limits<float>::quiet_NaN()).empty());
  EXPECT_EQ(Assign({0.1f}, 1, 1, 1.0f), (Pairs{{0, 0}}));
}

TEST(AssignmentTest, HandlesAHundredByHundred) {
  // A crowd: the identity is the unique optimum (0 on the diagonal, 1 elsewhere).
  constexpr int n = 100;
  std::vector<float> cost(n * n, 1.0f);
  for (int i = 0; i < n; ++i) cost[i * n + (i * 37) % n] = 0.0f;
  const Pairs pairs = Assign(cost, n, n, 0.5f);
  ASSERT_EQ(pairs.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(pairs[i], std::make_pair(i, (i * 37) % n));
}

}  // namespace
}  // namespace mogserve::track
