#include "scheduler/latency_model.h"

#include <gtest/gtest.h>

#include <random>

namespace mogserve::scheduler {
namespace {

using std::chrono::microseconds;

TEST(LatencyModelTest, DefaultBeforeSamplesThenMeanOfOneSize) {
  LatencyModel m(16, microseconds(700));
  EXPECT_EQ(m.Estimate(1), microseconds(700));
  EXPECT_EQ(m.Estimate(8), microseconds(700));
  EXPECT_FALSE(m.Fitted(2));
  m.Add(4, microseconds(1000));
  m.Add(4, microseconds(3000));
  EXPECT_EQ(m.Estimate(4), microseconds(2000));
  EXPECT_FALSE(m.Fitted(2));  // one size only: the slope is unknown
}

TEST(LatencyModelTest, RecoversSlopeAndInterceptFromNoisySamples) {
  // Synthetic engine: 1.5 ms per image + 4 ms per batch, ±5% noise.
  LatencyModel m(64, microseconds(0));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> size(1, 16);
  std::uniform_real_distribution<double> noise(0.95, 1.05);
  for (int i = 0; i < 200; ++i) {
    const int n = size(rng);
    m.Add(n, microseconds(static_cast<int64_t>((1500.0 * n + 4000.0) * noise(rng))));
  }
  EXPECT_TRUE(m.Fitted(8));
  EXPECT_EQ(m.sample_count(), 64);  // the window slides
  EXPECT_NEAR(m.slope_us(), 1500.0, 100.0);
  EXPECT_NEAR(m.intercept_us(), 4000.0, 600.0);
  const double estimate_us = std::chrono::duration<double, std::micro>(m.Estimate(10)).count();
  EXPECT_NEAR(estimate_us, 19000.0, 800.0);
}

TEST(LatencyModelTest, ExactFitAndWindowForgetsOldRegime) {
  LatencyModel m(4, microseconds(0));
  for (int n : {1, 2, 3, 4}) m.Add(n, microseconds(100 * n + 50));
  EXPECT_NEAR(m.slope_us(), 100.0, 1e-6);
  EXPECT_NEAR(m.intercept_us(), 50.0, 1e-6);
  for (int n : {1, 2, 3, 4}) m.Add(n, microseconds(200 * n + 10));  // the engine got slower
  EXPECT_NEAR(m.slope_us(), 200.0, 1e-6);
  EXPECT_NEAR(m.intercept_us(), 10.0, 1e-6);
}

TEST(LatencyModelTest, ClampsNonPhysicalFits) {
  LatencyModel falling(8, microseconds(0));
  falling.Add(1, microseconds(900));
  falling.Add(8, microseconds(500));  // noise: bigger batch faster
  EXPECT_EQ(falling.slope_us(), 0.0);
  EXPECT_NEAR(falling.intercept_us(), 700.0, 1e-6);
  LatencyModel origin(8, microseconds(0));
  origin.Add(1, microseconds(10));
  origin.Add(2, microseconds(100));  // fitted intercept would be -80
  EXPECT_EQ(origin.intercept_us(), 0.0);
  EXPECT_GT(origin.slope_us(), 0.0);
  EXPECT_GE(origin.Estimate(1), Duration::zero());
  origin.Add(0, microseconds(5));   // ignored
  origin.Add(3, microseconds(-5));  // ignored
  EXPECT_EQ(origin.sample_count(), 2);
}

}  // namespace
}  // namespace mogserve::scheduler
