// Scripted scenarios: for each policy and rule, the exact plans (or waits) it must produce.
#include "scheduler/batch_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "scheduler_test_util.h"

namespace mogserve::scheduler {
namespace {

using namespace testing;  // NOLINT: test helpers
using Ids = std::vector<uint64_t>;
using Kind = Decision::Kind;

SchedulerConfig Config(Policy policy, int max_batch = 4, int delay_ms = 10) {
  SchedulerConfig c;
  c.policy = policy;
  c.max_batch_size = max_batch;
  c.max_delay = milliseconds(delay_ms);
  c.default_timeout = Duration::zero();  // deadline tests set their own
  return c;
}

// Asks for a decision and expects a dispatch; returns its ids.
Ids Dispatch(BatchPolicy& p, double now_ms, EngineState engines = Idle(1)) {
  const Decision d = p.Next(At(now_ms), engines);
  EXPECT_EQ(d.kind, Kind::kDispatch) << "at " << now_ms << " ms";
  return d.plan.ids;
}

void ExpectWaitUntil(BatchPolicy& p, double now_ms, double until_ms,
                     EngineState engines = Idle(1)) {
  const Decision d = p.Next(At(now_ms), engines);
  ASSERT_EQ(d.kind, Kind::kWait) << "at " << now_ms << " ms";
  EXPECT_EQ(d.wake_at, At(until_ms));
}

TEST(NaivePolicyTest, OneAtATimeGlobalFifoIgnoringPriorityAndBuckets) {
  SchedulerConfig c = Config(Policy::kNaive);
  c.num_buckets = 2;
  auto p = MakePolicy(c);
  MustAdmit(*p, RequestBuilder(1, 0).Bucket(1).Prio(Priority::kBulk));
  MustAdmit(*p, RequestBuilder(2, 1).Prio(Priority::kInteractive));
  MustAdmit(*p, RequestBuilder(3, 2).Bucket(1));
  EXPECT_EQ(p->Next(At(2), Idle(0, 1)).kind, Kind::kIdle);  // no engine free, no deadlines
  const Decision d = p->Next(At(2), Idle(1));
  ASSERT_EQ(d.kind, Kind::kDispatch);
  EXPECT_EQ(d.plan.ids, Ids{1});
  EXPECT_EQ(d.plan.bucket, 1);
  EXPECT_EQ(d.plan.batch_size, 1);
  EXPECT_EQ(Dispatch(*p, 2), Ids{2});
  EXPECT_EQ(Dispatch(*p, 2), Ids{3});
  EXPECT_EQ(p->Next(At(2), Idle(1)).kind, Kind::kIdle);
}

TEST(DynamicPolicyTest, WaitsForFullBatchOrMaxDelayFromOldestArrival) {
  auto p = MakePolicy(Config(Policy::kDynamic, 4, 10));
  for (uint64_t id = 1; id <= 3; ++id) MustAdmit(*p, RequestBuilder(id, id - 1));
  ExpectWaitUntil(*p, 2, 10);              // oldest arrived at 0
  ExpectWaitUntil(*p, 3, 10, Idle(1, 1));  // dynamic holds even while another engine runs
  MustAdmit(*p, RequestBuilder(4, 3));
  EXPECT_EQ(Dispatch(*p, 3), (Ids{1, 2, 3, 4}));  // full: at once
  MustAdmit(*p, RequestBuilder(5, 20));
  MustAdmit(*p, RequestBuilder(6, 21));
  ExpectWaitUntil(*p, 25, 30);
  EXPECT_EQ(Dispatch(*p, 30), (Ids{5, 6}));  // max_delay expired: ships what is there
  EXPECT_EQ(p->Next(At(30), Idle(1)).kind, Kind::kIdle);
}

TEST(DynamicPolicyTest, PreferredSizesShipAtOnceLargestThatForms) {
  SchedulerConfig c = Config(Policy::kDynamic, 8, 10);
  c.preferred_batch_sizes = {2, 4};
  auto p = MakePolicy(c);
  MustAdmit(*p, RequestBuilder(1, 0));
  ExpectWaitUntil(*p, 0, 10);
  MustAdmit(*p, RequestBuilder(2, 1));
  EXPECT_EQ(Dispatch(*p, 1), (Ids{1, 2}));
  for (uint64_t id = 3; id <= 7; ++id) MustAdmit(*p, RequestBuilder(id, 5));
  EXPECT_EQ(Dispatch(*p, 5), (Ids{3, 4, 5, 6}));  // 5 queued: largest preferred is 4
  ExpectWaitUntil(*p, 5, 15);                     // the fifth waits alone
  EXPECT_EQ(Dispatch(*p, 15), (Ids{7}));
}

TEST(ContinuousPolicyTest, WaitsOnlyWhileEveryEngineIsIdle) {
  auto p = MakePolicy(Config(Policy::kContinuous, 4, 5));
  MustAdmit(*p, RequestBuilder(1, 0));
  ExpectWaitUntil(*p, 0, 5);  // both engines idle, below target, slack allows
  MustAdmit(*p, RequestBuilder(2, 1));
  EXPECT_EQ(Dispatch(*p, 1, Idle(1, 1)), (Ids{1, 2}));  // one engine busy: never hold back
  MustAdmit(*p, RequestBuilder(3, 2));
  ExpectWaitUntil(*p, 5, 7, Idle(2));  // arrived at 2: never beyond max_delay
  EXPECT_EQ(Dispatch(*p, 7, Idle(2)), Ids{3});
}

TEST(ContinuousPolicyTest, DispatchesAtOnceWhenTargetBatchIsQueued) {
  SchedulerConfig c = Config(Policy::kContinuous, 8, 50);
  c.preferred_batch_sizes = {4};  // the target continuous waits for
  auto p = MakePolicy(c);
  for (uint64_t id = 1; id <= 3; ++id) MustAdmit(*p, RequestBuilder(id, 0));
  ExpectWaitUntil(*p, 0, 50, Idle(2));
  MustAdmit(*p, RequestBuilder(4, 1));
  EXPECT_EQ(Dispatch(*p, 1, Idle(2)), (Ids{1, 2, 3, 4}));
}

TEST(ContinuousPolicyTest, IterationLevelBatchingGrowsBehindBusyEngine) {
  // One engine: while it runs, arrivals pile up and form the next batch the moment it frees up.
  auto p = MakePolicy(Config(Policy::kContinuous, 8, 0));
  MustAdmit(*p, RequestBuilder(1, 0));
  EXPECT_EQ(Dispatch(*p, 0), Ids{1});
  for (uint64_t id = 2; id <= 6; ++id) MustAdmit(*p, RequestBuilder(id, 1));
  EXPECT_EQ(p->Next(At(1), Idle(0, 1)).kind, Kind::kIdle);  // engine busy, nothing to expire
  EXPECT_EQ(Dispatch(*p, 9), (Ids{2, 3, 4, 5, 6}));
}

TEST(BatchLimitsTest, MaxBatchSizeAndPixelBudgetHoldOversizedRunsAlone) {
  SchedulerConfig c = Config(Policy::kContinuous, 3, 0);
  c.max_batch_pixels = 100;
  auto p = MakePolicy(c);
  for (uint64_t id = 1; id <= 5; ++id) MustAdmit(*p, RequestBuilder(id, 0).Pixels(40));
  MustAdmit(*p, RequestBuilder(6, 0).Pixels(250));
  for (uint64_t id = 7; id <= 10; ++id) MustAdmit(*p, RequestBuilder(id, 0).Pixels(10));
  const Decision d = p->Next(At(0), Idle(1));
  EXPECT_EQ(d.plan.ids, (Ids{1, 2}));  // a third 40-px image would make 120 > 100
  EXPECT_EQ(d.plan.pixels, 80);
  EXPECT_EQ(Dispatch(*p, 0), (Ids{3, 4}));
  EXPECT_EQ(Dispatch(*p, 0), Ids{5});  // the 250-px request is next: stop, do not skip ahead
  EXPECT_EQ(Dispatch(*p, 0), Ids{6});  // larger than the budget: runs alone
  EXPECT_EQ(Dispatch(*p, 0), (Ids{7, 8, 9}));  // max_batch_size 3
  EXPECT_EQ(Dispatch(*p, 0), Ids{10});
}

TEST(BatchLimitsTest, PaddedToPlannedSizeAndPerBucketCap) {
  SchedulerConfig c = Config(Policy::kContinuous, 16, 0);
  c.num_buckets = 2;
  c.bucket_max_batch_size = {16, 2};
  c.planned_batch_sizes = {1, 2, 4, 8, 16};
  auto p = MakePolicy(c);
  for (uint64_t id = 1; id <= 3; ++id) MustAdmit(*p, RequestBuilder(id, 0));
  for (uint64_t id = 4; id <= 6; ++id) MustAdmit(*p, RequestBuilder(id, 1).Bucket(1));
  Decision d = p->Next(At(1), Idle(1));
  EXPECT_EQ(d.plan.bucket, 0);  // the oldest work
  EXPECT_EQ(d.plan.batch_size, 3);
  EXPECT_EQ(d.plan.padded_batch_size, 4);
  d = p->Next(At(1), Idle(1));
  EXPECT_EQ(d.plan.ids, (Ids{4, 5}));
  EXPECT_EQ(d.plan.padded_batch_size, 2);
}

TEST(PriorityTest, HigherClassesFirstAcrossBuckets) {
  SchedulerConfig c = Config(Policy::kContinuous, 1, 0);
  c.num_buckets = 2;
  auto p = MakePolicy(c);
  MustAdmit(*p, RequestBuilder(1, 0).Prio(Priority::kStream));
  MustAdmit(*p, RequestBuilder(2, 1).Prio(Priority::kBulk).Bucket(1));
  MustAdmit(*p, RequestBuilder(3, 2).Prio(Priority::kApi));
  MustAdmit(*p, RequestBuilder(4, 3).Prio(Priority::kInteractive).Bucket(1));
  MustAdmit(*p, RequestBuilder(5, 4).Prio(Priority::kInteractive));
  Ids order;
  for (int i = 0; i < 5; ++i) order.push_back(Dispatch(*p, 4).at(0));
  EXPECT_EQ(order, (Ids{4, 5, 3, 2, 1}));  // equal class: the older request first
}

// Runs one engine with batch size 1 for `ms` milliseconds: each millisecond an interactive
// request arrives and one request is served. Returns when the bulk request (id 0) ran, or -1.
double ServeBulkUnderInteractiveFlood(Duration aging_step) {
  SchedulerConfig c = Config(Policy::kContinuous, 1, 0);
  c.aging_step = aging_step;
  auto p = MakePolicy(c);
  MustAdmit(*p, RequestBuilder(0, 0).Prio(Priority::kBulk).Client("batch-job"));
  for (int t = 0; t < 100; ++t) {
    MustAdmit(*p, RequestBuilder(t + 1, t).Prio(Priority::kInteractive).Client("ui"));
    if (Dispatch(*p, t).at(0) == 0) return t;
  }
  return -1;
}

TEST(StarvationGuardTest, AgingLiftsAWaitingBulkRequest) {
  // Strict priority (aging off) starves it; with aging_step 10 ms, bulk (class 2) competes as
  // interactive after 2 steps and then wins by arrival order.
  EXPECT_EQ(ServeBulkUnderInteractiveFlood(Duration::zero()), -1);
  EXPECT_EQ(ServeBulkUnderInteractiveFlood(milliseconds(10)), 20);
}

TEST(FairnessTest, FloodingClientDelaysLightClientByAtMostOnePick) {
  auto p = MakePolicy(Config(Policy::kContinuous, 1, 0));
  for (uint64_t id = 1; id <= 1000; ++id) MustAdmit(*p, RequestBuilder(id, 0).Client("A"));
  MustAdmit(*p, RequestBuilder(5000, 1).Client("B"));
  MustAdmit(*p, RequestBuilder(6000, 2).Client("C"));
  // Stated bound: head of a client's queue is picked within K picks (K = clients queued).
  EXPECT_EQ(Dispatch(*p, 2), Ids{1});
  EXPECT_EQ(Dispatch(*p, 2), Ids{5000});
  EXPECT_EQ(Dispatch(*p, 2), Ids{6000});
  EXPECT_EQ(Dispatch(*p, 2), Ids{2});
}

TEST(FairnessTest, LightClientJoinsTheFirstBatch) {
  auto p = MakePolicy(Config(Policy::kContinuous, 4, 0));
  for (uint64_t id = 1; id <= 1000; ++id) MustAdmit(*p, RequestBuilder(id, 0).Client("A"));
  MustAdmit(*p, RequestBuilder(5000, 1).Client("B"));
  EXPECT_EQ(Dispatch(*p, 1), (Ids{1, 5000, 2, 3}));
}

TEST(DeadlineTest, RejectedAtAdmissionWhenEvenBatchOfOneIsTooLate) {
  SchedulerConfig c = Config(Policy::kContinuous, 4, 0);
  c.default_batch_latency = milliseconds(10);
  auto p = MakePolicy(c);
  AdmitResult r = p->Admit(RequestBuilder(1, 0).DeadlineAt(8), At(0));
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.rejection, Outcome::kRejectedDeadline);
  EXPECT_TRUE(p->Admit(RequestBuilder(2, 0).DeadlineAt(11), At(0)).accepted);
  EXPECT_FALSE(p->IsQueued(1));
}

// An estimate learnt while the machine was contended (here: one 2 s batch) must not refuse a
// bucket's work for ever: after 5 s of refusals with no batch completing, one request runs as a
// probe, whatever the estimate, and its batch corrects the estimate.
TEST(DeadlineTest, AStaleEstimateIsProbedInsteadOfRefusingForEver) {
  SchedulerConfig c = Config(Policy::kContinuous, 4, 0);
  c.default_timeout = milliseconds(1000);
  auto p = MakePolicy(c);
  p->OnBatchCompleted(0, 1, milliseconds(2000));
  EXPECT_EQ(p->Admit(RequestBuilder(1, 0), At(0)).rejection,
            Outcome::kRejectedDeadline);
  EXPECT_EQ(p->Admit(RequestBuilder(2, 4999), At(4999)).rejection,
            Outcome::kRejectedDeadline);
  // 5 s of refusals: the next one is the probe; it neither expires nor lets another probe in.
  ASSERT_TRUE(p->Admit(RequestBuilder(3, 5000), At(5000)).accepted);
  EXPECT_EQ(p->Admit(RequestBuilder(4, 5001), At(5001)).rejection,
            Outcome::kRejectedDeadline);
  Decision d = p->Next(At(5002), Idle(0, 1));  // engine busy: nothing expires, no busy wake-up
  EXPECT_TRUE(d.ended.empty());
  EXPECT_GT(d.wake_at, At(100000));
  EXPECT_EQ(Dispatch(*p, 5003), Ids{3});
  // Its batch took 20 ms: the estimate is right again and requests are admitted at once.
  p->OnBatchCompleted(0, 1, milliseconds(20));
  EXPECT_LT(p->SingleRequestEstimate(0), milliseconds(1000));
  EXPECT_TRUE(p->Admit(RequestBuilder(5, 5100), At(5100)).accepted);
}

TEST(DeadlineTest, ExpiresWhileQueuedAndNeverAppearsInAPlan) {
  SchedulerConfig c = Config(Policy::kContinuous, 4, 0);
  c.default_batch_latency = milliseconds(10);
  c.default_timeout = milliseconds(50);
  auto p = MakePolicy(c);
  MustAdmit(*p, RequestBuilder(1, 0).DeadlineAt(30));
  MustAdmit(*p, RequestBuilder(2, 0).DeadlineAt(10000));  // asks for more: capped at 0 + 50
  MustAdmit(*p, RequestBuilder(3, 0));
  // Engine busy: Next only says when the first request becomes hopeless (just after 30 - 10).
  Decision d = p->Next(At(5), Idle(0, 1));
  EXPECT_EQ(d.kind, Kind::kWait);
  EXPECT_EQ(d.wake_at, At(20) + Duration(1));
  EXPECT_TRUE(p->Next(At(20), Idle(0, 1)).ended.empty());  // exactly on time is still on time
  d = p->Next(At(20) + Duration(1), Idle(0, 1));
  ASSERT_EQ(d.ended.size(), 1u);
  EXPECT_EQ(d.ended[0].id, 1u);
  EXPECT_EQ(d.ended[0].outcome, Outcome::kRejectedDeadline);
  EXPECT_EQ(d.wake_at, At(40) + Duration(1));  // the server timeout of 2 and 3
  d = p->Next(At(41), Idle(1));
  EXPECT_EQ(d.kind, Kind::kIdle);
  ASSERT_EQ(d.ended.size(), 2u);  // expired before any batch could be formed
  EXPECT_EQ(p->size(), 0);
}

TEST(DeadlineTest, HoldingStopsEarlyEnoughForTheEarliestDeadline) {
  SchedulerConfig c = Config(Policy::kDynamic, 8, 100);
  c.default_batch_latency = milliseconds(10);
  auto p = MakePolicy(c);
  MustAdmit(*p, RequestBuilder(1, 0).DeadlineAt(40));
  ExpectWaitUntil(*p, 0, 30);  // max_delay would allow 100
  EXPECT_EQ(Dispatch(*p, 30), Ids{1});
}

TEST(QueueFullTest, CountAndBytesRejectAtOnce) {
  SchedulerConfig c = Config(Policy::kContinuous, 4, 0);
  c.queue_capacity_requests = 3;
  c.queue_capacity_bytes = 100;
  auto p = MakePolicy(c);
  MustAdmit(*p, RequestBuilder(1, 0).Bytes(40));
  MustAdmit(*p, RequestBuilder(2, 0).Bytes(40));
  AdmitResult r = p->Admit(RequestBuilder(3, 0).Bytes(40), At(0));
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.rejection, Outcome::kRejectedQueueFull);  // 120 bytes > 100
  MustAdmit(*p, RequestBuilder(4, 0).Bytes(20));
  r = p->Admit(RequestBuilder(5, 0).Bytes(0), At(0));
  EXPECT_EQ(r.rejection, Outcome::kRejectedQueueFull);  // 4 requests > 3
  EXPECT_EQ(p->Stats().total.bytes, 100);
  Dispatch(*p, 0);
  MustAdmit(*p, RequestBuilder(5, 0).Bytes(100));  // room again after dispatch
}

TEST(CancelTest, OnlyQueuedRequestsCancel) {
  auto p = MakePolicy(Config(Policy::kContinuous, 4, 0));
  MustAdmit(*p, RequestBuilder(1, 0));
  MustAdmit(*p, RequestBuilder(2, 0));
  MustAdmit(*p, RequestBuilder(3, 0));
  EXPECT_TRUE(p->Cancel(2));
  EXPECT_FALSE(p->Cancel(2));
  EXPECT_FALSE(p->Cancel(99));
  EXPECT_EQ(Dispatch(*p, 0), (Ids{1, 3}));
  EXPECT_FALSE(p->Cancel(1));  // dispatched: the pipeline owns it now
  MustAdmit(*p, RequestBuilder(4, 0));
  MustAdmit(*p, RequestBuilder(5, 0).Bucket(0));
  const std::vector<Ended> all = p->CancelAll();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].outcome, Outcome::kCancelled);
  EXPECT_EQ(p->size(), 0);
}

TEST(SupersedeTest, NewFrameReplacesQueuedFrameOfSameStream) {
  SchedulerConfig c = Config(Policy::kContinuous, 4, 0);
  c.queue_capacity_requests = 2;
  c.default_batch_latency = milliseconds(5);
  auto p = MakePolicy(c);
  const auto frame = [](uint64_t id, double t, const char* cam) {
    return RequestBuilder(id, t).Client(cam).Prio(Priority::kStream).LatestOnly();
  };
  MustAdmit(*p, frame(1, 0, "cam1"));
  MustAdmit(*p, frame(2, 0, "cam2"));
  AdmitResult r = p->Admit(frame(3, 1, "cam1"), At(1));  // queue is full, but 1 makes room
  EXPECT_TRUE(r.accepted);
  EXPECT_EQ(r.superseded, std::optional<uint64_t>(1));
  // A newer frame that is itself refused (hopeless deadline) leaves the queued frame alone.
  r = p->Admit(frame(4, 2, "cam1").DeadlineAt(3), At(2));
  EXPECT_EQ(r.rejection, Outcome::kRejectedDeadline);
  EXPECT_TRUE(p->IsQueued(3));
  EXPECT_EQ(Dispatch(*p, 2), (Ids{2, 3}));
  r = p->Admit(frame(5, 3, "cam1"), At(3));  // nothing queued for cam1 any more
  EXPECT_TRUE(r.accepted);
  EXPECT_FALSE(r.superseded.has_value());
}

TEST(AdmissionTest, BadInputIsRefused) {
  auto p = MakePolicy(Config(Policy::kContinuous));
  MustAdmit(*p, RequestBuilder(1, 0));
  EXPECT_EQ(p->Admit(RequestBuilder(1, 0), At(0)).rejection, Outcome::kRejectedBadInput);
  EXPECT_EQ(p->Admit(RequestBuilder(2, 0).Bucket(3), At(0)).rejection, Outcome::kRejectedBadInput);
  EXPECT_EQ(p->Admit(RequestBuilder(3, 0).Pixels(0), At(0)).rejection, Outcome::kRejectedBadInput);
  EXPECT_EQ(p->Admit(RequestBuilder(4, 0).Bytes(-1), At(0)).rejection, Outcome::kRejectedBadInput);
  EXPECT_EQ(p->size(), 1);
}

TEST(StatsTest, DepthPerPriorityAndBucket) {
  SchedulerConfig c = Config(Policy::kContinuous);
  c.num_buckets = 2;
  auto p = MakePolicy(c);
  MustAdmit(*p, RequestBuilder(1, 0).Prio(Priority::kInteractive).Bytes(10));
  MustAdmit(*p, RequestBuilder(2, 0).Prio(Priority::kBulk).Bytes(20).Bucket(1));
  MustAdmit(*p, RequestBuilder(3, 0).Prio(Priority::kBulk).Bytes(30).Bucket(1));
  QueueStats s = p->Stats();
  EXPECT_EQ(s.total.requests, 3);
  EXPECT_EQ(s.total.bytes, 60);
  EXPECT_EQ(s.by_priority[static_cast<int>(Priority::kInteractive)].bytes, 10);
  EXPECT_EQ(s.by_priority[static_cast<int>(Priority::kBulk)].requests, 2);
  EXPECT_EQ(s.by_bucket[1].bytes, 50);
  EXPECT_TRUE(p->Cancel(3));
  s = p->Stats();
  EXPECT_EQ(s.by_bucket[1].requests, 1);
  EXPECT_EQ(s.total.bytes, 30);
}

}  // namespace
}  // namespace mogserve::scheduler
