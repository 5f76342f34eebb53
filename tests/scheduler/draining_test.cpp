// BatchPolicy::SetDraining: once no more admissions can come, no policy holds work back.
#include <gtest/gtest.h>

#include "scheduler_test_util.h"

namespace mogserve::scheduler::testing {
namespace {

TEST(DrainingTest, EveryPolicyDispatchesAtOnceWhenDraining) {
  for (Policy policy : {Policy::kDynamic, Policy::kContinuous, Policy::kAdaptive}) {
    SchedulerConfig config;
    config.policy = policy;
    config.max_batch_size = 8;
    config.max_delay = milliseconds(100);
    auto p = MakePolicy(config);
    MustAdmit(*p, RequestBuilder(1, 0));
    MustAdmit(*p, RequestBuilder(2, 0));
    EXPECT_EQ(p->Next(At(1), Idle(1)).kind, Decision::Kind::kWait) << PolicyName(policy);
    p->SetDraining(true);
    const Decision d = p->Next(At(1), Idle(1));
    ASSERT_EQ(d.kind, Decision::Kind::kDispatch) << PolicyName(policy);
    EXPECT_EQ(d.plan.batch_size, 2);
  }
}

// Continuous: work that queued behind a running batch goes the moment the engine frees up, even
// below the target and before max_delay; work that arrives to an idle engine may still wait.
TEST(ContinuousTest, WorkQueuedBehindABatchIsNotHeldWhenTheEngineFrees) {
  SchedulerConfig config;
  config.policy = Policy::kContinuous;
  config.max_batch_size = 8;
  config.max_delay = milliseconds(10);
  auto p = MakePolicy(config);
  MustAdmit(*p, RequestBuilder(1, 0));
  EXPECT_EQ(p->Next(At(0), Idle(1)).kind, Decision::Kind::kWait);       // idle engine: hold
  EXPECT_EQ(p->Next(At(10), Idle(1)).kind, Decision::Kind::kDispatch);  // max_delay
  MustAdmit(*p, RequestBuilder(2, 11));
  EXPECT_EQ(p->Next(At(11.5), Idle(0, 1)).kind, Decision::Kind::kWait);  // engine busy
  // The batch ends at 12 ms: request 2 waited behind it, it goes now (not at 21 ms).
  const Decision d = p->Next(At(12), Idle(1));
  ASSERT_EQ(d.kind, Decision::Kind::kDispatch);
  EXPECT_EQ(d.plan.ids, std::vector<uint64_t>({2}));
  // A request arriving to the idle engine afterwards is held again.
  MustAdmit(*p, RequestBuilder(3, 40));
  EXPECT_EQ(p->Next(At(40), Idle(1)).kind, Decision::Kind::kWait);
}

}  // namespace
}  // namespace mogserve::scheduler::testing
