// The adaptive policy: continuous until its latency model is fitted, then a wait chosen from it.
#include <gtest/gtest.h>

#include "scheduler/batch_policy.h"
#include "scheduler_test_util.h"

namespace mogserve::scheduler {
namespace {

using namespace testing;  // NOLINT: test helpers

SchedulerConfig AdaptiveConfig(int latency_target_ms) {
  SchedulerConfig c;
  c.policy = Policy::kAdaptive;
  c.max_batch_size = 4;
  c.max_delay = milliseconds(5);
  c.default_timeout = Duration::zero();
  c.latency_target = milliseconds(latency_target_ms);
  c.adaptive_min_samples = 4;
  return c;
}

// Engine model: latency(n) = 1 ms · n + 10 ms.
void Seed(BatchPolicy& p) {
  for (int n : {1, 2, 3, 4}) p.OnBatchCompleted(0, n, milliseconds(n + 10));
}

// Request 1 arrives at 0 and leaves at once behind a busy engine; request 2 arrives at
// `second_ms`, which sets the arrival gap the policy sees.
void TwoArrivals(BatchPolicy& p, double second_ms) {
  MustAdmit(p, RequestBuilder(1, 0));
  ASSERT_EQ(p.Next(At(0), Idle(1, 1)).kind, Decision::Kind::kDispatch);
  MustAdmit(p, RequestBuilder(2, second_ms));
}

TEST(AdaptivePolicyTest, BehavesLikeContinuousUntilFitted) {
  auto p = MakePolicy(AdaptiveConfig(100));
  TwoArrivals(*p, 1);
  const Decision d = p->Next(At(1), Idle(2));
  ASSERT_EQ(d.kind, Decision::Kind::kWait);
  EXPECT_EQ(d.wake_at, At(1 + 5));  // max_delay
}

TEST(AdaptivePolicyTest, HoldsUpToTheFixedCostWhenArrivalsAreDense) {
  auto p = MakePolicy(AdaptiveConfig(100));
  Seed(*p);
  EXPECT_NEAR(p->latency_model(0).intercept_us(), 10000.0, 1e-3);
  TwoArrivals(*p, 1);  // gap 1 ms: 10 arrivals expected per fixed cost b, 1 queued
  const Decision d = p->Next(At(1), Idle(2));
  ASSERT_EQ(d.kind, Decision::Kind::kWait);
  EXPECT_EQ(d.wake_at, At(1 + 10));  // oldest arrival + b (max_delay does not apply)
}

TEST(AdaptivePolicyTest, LatencyTargetBoundsTheWait) {
  auto p = MakePolicy(AdaptiveConfig(20));
  Seed(*p);
  TwoArrivals(*p, 1);
  const Decision d = p->Next(At(1), Idle(2));
  ASSERT_EQ(d.kind, Decision::Kind::kWait);
  EXPECT_EQ(d.wake_at, At(1 + 20 - 14));  // target batch of 4 takes 14 ms
}

TEST(AdaptivePolicyTest, DispatchesAtOnceWhenArrivalsAreSparse) {
  auto p = MakePolicy(AdaptiveConfig(100));
  Seed(*p);
  TwoArrivals(*p, 30);  // gap 30 ms > b: waiting cannot pay for itself
  EXPECT_EQ(p->Next(At(30), Idle(2)).kind, Decision::Kind::kDispatch);
}

}  // namespace
}  // namespace mogserve::scheduler
