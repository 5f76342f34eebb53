#include "track/kalman_box.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace mogserve::track {
namespace {

Detection BoxAt(double cx, double cy, double w, double h) {
  Detection d;
  d.x1 = static_cast<float>(cx - w / 2);
  d.y1 = static_cast<float>(cy - h / 2);
  d.x2 = static_cast<float>(cx + w / 2);
  d.y2 = static_cast<float>(cy + h / 2);
  d.score = 0.9f;
  return d;
}

// A face box moving at constant velocity: centre (200, 300) + (90, -45) px/s · t, size
// 100 x 120 growing 6 px/s each.
Detection Truth(double t_s) {
  return BoxAt(200 + 90 * t_s, 300 - 45 * t_s, 100 + 6 * t_s, 120 + 6 * t_s);
}

void ExpectCornersNear(const Detection& a, const Detection& b, double tolerance_px) {
  EXPECT_NEAR(a.x1, b.x1, tolerance_px);
  EXPECT_NEAR(a.y1, b.y1, tolerance_px);
  EXPECT_NEAR(a.x2, b.x2, tolerance_px);
  EXPECT_NEAR(a.y2, b.y2, tolerance_px);
}

// Feeds Truth sampled at `fps` for `seconds`, each corner jittered by up to ±noise_px; returns
// the time of the last sample.
double Track(KalmanBox& filter, double fps, double seconds, double noise_px, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> jitter(static_cast<float>(-noise_px),
                                               static_cast<float>(noise_px));
  const int samples = static_cast<int>(std::lround(seconds * fps));
  double t = 0;
  for (int i = 1; i <= samples; ++i) {
    t = i / fps;
    filter.Predict(1.0 / fps);
    Detection measured = Truth(t);
    measured.x1 += jitter(rng);
    measured.y1 += jitter(rng);
    measured.x2 += jitter(rng);
    measured.y2 += jitter(rng);
    filter.Update(measured);
  }
  return t;
}

TEST(KalmanBoxTest, StartsAtTheFirstBoxAtRest) {
  const KalmanBox filter(Truth(0));
  ExpectCornersNear(filter.Box(), Truth(0), 1e-4);
  EXPECT_EQ(filter.Velocity().cx_px_s, 0.0);
  EXPECT_EQ(filter.Velocity().h_px_s, 0.0);
  EXPECT_EQ(filter.Box().score, 0.0f);  // corners only
}

TEST(KalmanBoxTest, ConstantVelocityAt30FpsConvergesAndPredicts) {
  KalmanBox filter(Truth(0));
  const double t = Track(filter, 30.0, 3.0, 0.0, 1);
  const BoxVelocity v = filter.Velocity();
  EXPECT_NEAR(v.cx_px_s, 90.0, 0.5);
  EXPECT_NEAR(v.cy_px_s, -45.0, 0.5);
  EXPECT_NEAR(v.w_px_s, 6.0, 0.5);
  EXPECT_NEAR(v.h_px_s, 6.0, 0.5);
  ExpectCornersNear(filter.Box(), Truth(t), 0.5);
  // Where a 5 fps detector's next frame would be.
  ExpectCornersNear(filter.PredictedBox(0.2), Truth(t + 0.2), 0.5);
}

TEST(KalmanBoxTest, NoisyMeasurementsStillPredictWithinAFewPixels) {
  KalmanBox filter(Truth(0));
  const double t = Track(filter, 30.0, 3.0, 3.0, 7);
  EXPECT_NEAR(filter.Velocity().cx_px_s, 90.0, 15.0);
  EXPECT_NEAR(filter.Velocity().cy_px_s, -45.0, 15.0);
  ExpectCornersNear(filter.PredictedBox(0.2), Truth(t + 0.2), 5.0);
}

TEST(KalmanBoxTest, FiveFpsConvergesToo) {
  // One step of 0.2 s carries the process noise of six 1/30 s steps: the filter is neither
  // stuck (too little noise) nor chasing the last sample (too much).
  KalmanBox filter(Truth(0));
  const double t = Track(filter, 5.0, 4.0, 2.0, 3);
  EXPECT_NEAR(filter.Velocity().cx_px_s, 90.0, 10.0);
  ExpectCornersNear(filter.PredictedBox(0.2), Truth(t + 0.2), 5.0);
}

TEST(KalmanBoxTest, SteadyBoxStaysPut) {
  KalmanBox filter(BoxAt(500, 400, 80, 96));
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> jitter(-2.0f, 2.0f);
  for (int i = 0; i < 150; ++i) {
    filter.Predict(1.0 / 30);
    Detection measured = BoxAt(500, 400, 80, 96);
    measured.x1 += jitter(rng);
    measured.x2 += jitter(rng);
    measured.y1 += jitter(rng);
    measured.y2 += jitter(rng);
    filter.Update(measured);
  }
  ExpectCornersNear(filter.Box(), BoxAt(500, 400, 80, 96), 1.5);
  EXPECT_LT(std::abs(filter.Velocity().cx_px_s), 6.0);
  EXPECT_LT(std::abs(filter.Velocity().cy_px_s), 6.0);
  // Predicting a second ahead barely moves it.
  ExpectCornersNear(filter.PredictedBox(1.0), BoxAt(500, 400, 80, 96), 8.0);
}

TEST(KalmanBoxTest, ZeroOrNegativeDtChangesNothing) {
  KalmanBox moved(Truth(0));
  Track(moved, 30.0, 1.0, 0.0, 1);
  KalmanBox twin = moved;
  const Detection before = moved.Box();
  moved.Predict(0.0);
  moved.Predict(-0.5);
  moved.Predict(std::numeric_limits<double>::quiet_NaN());
  ExpectCornersNear(moved.Box(), before, 0.0);
  // The covariance did not change either: the next update moves both filters alike.
  const Detection jump = BoxAt(320, 250, 110, 130);
  moved.Update(jump);
  twin.Update(jump);
  ExpectCornersNear(moved.Box(), twin.Box(), 0.0);
  EXPECT_EQ(moved.Velocity().cx_px_s, twin.Velocity().cx_px_s);
}

TEST(KalmanBoxTest, PredictedBoxDoesNotChangeTheFilter) {
  KalmanBox filter(Truth(0));
  Track(filter, 30.0, 1.0, 0.0, 1);
  const Detection before = filter.Box();
  const Detection ahead = filter.PredictedBox(0.5);
  EXPECT_GT(ahead.x1, before.x1 + 30);  // it did look ahead (90 px/s)
  ExpectCornersNear(filter.Box(), before, 0.0);
  EXPECT_EQ(filter.PredictedBox(0.5).x1, ahead.x1);
}

TEST(KalmanBoxTest, UpdateMovesPartWayTowardsTheMeasurement) {
  KalmanBox filter(BoxAt(100, 100, 50, 50));
  filter.Predict(1.0 / 30);
  filter.Update(BoxAt(110, 100, 50, 50));
  const double cx = (filter.Box().x1 + filter.Box().x2) / 2;
  EXPECT_GT(cx, 100.5);  // trusts the measurement...
  EXPECT_LT(cx, 109.5);  // ...but not entirely
  EXPECT_GT(filter.Velocity().cx_px_s, 0.0);
}

TEST(KalmanBoxTest, DegenerateAndNonFiniteInputsStayFinite) {
  KalmanBox filter(BoxAt(50, 50, 0, 0));  // no area: the noise has a floor
  filter.Predict(0.1);
  filter.Update(BoxAt(52, 50, 0, 0));
  Detection nan_box = BoxAt(60, 60, 10, 10);
  nan_box.x1 = std::numeric_limits<float>::quiet_NaN();
  filter.Update(nan_box);  // ignored
  filter.Predict(1000.0);
  const Detection box = filter.Box();
  EXPECT_TRUE(std::isfinite(box.x1) && std::isfinite(box.y1) && std::isfinite(box.x2) &&
              std::isfinite(box.y2));
  EXPECT_GE(box.width(), 1.0f - 1e-3f);  // at least 1 px, whatever the rates did
  EXPECT_GE(box.height(), 1.0f - 1e-3f);
}

}  // namespace
}  // namespace mogserve::track
