// Randomized operations against every policy: each request ends exactly once, the outcome
// counts add up, and every plan respects the limits and contains only live, on-time requests.
// Also prints the measured scheduler overhead per request (no timing assertion).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <unordered_map>
#include <vector>

#include "scheduler/batch_policy.h"
#include "scheduler_test_util.h"

namespace mogserve::scheduler {
namespace {

using namespace testing;  // NOLINT: test helpers

constexpr int kEngines = 3;

class Harness {
 public:
  Harness(Policy policy, uint32_t seed) : rng_(seed) {
    config_.policy = policy;
    config_.num_buckets = 3;
    config_.max_batch_size = 8;
    config_.max_batch_pixels = 40;
    config_.planned_batch_sizes = {1, 2, 4, 8};
    config_.preferred_batch_sizes = {4};
    config_.max_delay = milliseconds(2);
    config_.queue_capacity_requests = 16;
    config_.queue_capacity_bytes = 5000;
    config_.default_timeout = milliseconds(400);
    config_.aging_step = milliseconds(5);
    config_.default_batch_latency = milliseconds(1);
    config_.adaptive_min_samples = 4;
    policy_ = MakePolicy(config_);
  }

  void Run(int operations) {
    for (int i = 0; i < operations; ++i) Step();
    for (const Ended& e : policy_->CancelAll()) End(e.id, e.outcome);
    for (auto& engine : engines_) FinishEngine(engine);
  }

  void CheckTotals() const {
    int64_t total = 0;
    for (int64_t c : outcome_counts_) total += c;
    EXPECT_EQ(total, static_cast<int64_t>(submitted_));
    EXPECT_EQ(static_cast<int64_t>(ended_.size()), static_cast<int64_t>(submitted_));
    EXPECT_EQ(policy_->size(), 0);
    EXPECT_EQ(policy_->Stats().total.bytes, 0);
    std::printf("[ outcomes ]");
    for (int o = 0; o < kNumOutcomes; ++o) {
      EXPECT_GT(outcome_counts_[o], 0) << OutcomeName(static_cast<Outcome>(o)) << " never seen";
      std::printf(" %s=%lld", OutcomeName(static_cast<Outcome>(o)),
                  static_cast<long long>(outcome_counts_[o]));
    }
    std::printf(" plans=%lld mean_batch=%.2f\n", static_cast<long long>(plans_),
                plans_ ? static_cast<double>(planned_) / plans_ : 0.0);
  }

 private:
  struct Engine {
    bool busy = false;
    std::vector<uint64_t> ids;
    int bucket = 0;
    int padded = 0;
    TimePoint started{};
  };

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  void Step() {
    const int op = Uniform(0, 99);
    if (op < 45) {
      Admit();
    } else if (op < 52) {
      CancelRandom();
    } else if (op < 67) {
      now_ += std::chrono::microseconds(Uniform(0, 3000));
    } else if (op < 80) {
      FinishEngine(engines_[Uniform(0, kEngines - 1)]);
    } else {
      Decide();
    }
  }

  void CancelRandom() {
    const uint64_t id = static_cast<uint64_t>(Uniform(0, static_cast<int>(next_id_)));
    if (policy_->Cancel(id)) End(id, Outcome::kCancelled);
  }

  void Admit() {
    Request r;
    r.id = next_id_++;
    r.bucket = Uniform(0, config_.num_buckets);  // sometimes an unknown bucket: bad input
    r.priority = static_cast<Priority>(Uniform(0, kNumPriorities - 1));
    r.client = "c" + std::to_string(Uniform(0, 9));
    r.latest_only = r.priority == Priority::kStream && Uniform(0, 1) == 0;
    r.pixel_cost = Uniform(0, 19) == 0 ? 50 : Uniform(1, 8);  // 50 > max_batch_pixels
    r.byte_cost = Uniform(0, 200);
    r.arrival = now_ - std::chrono::microseconds(Uniform(0, 500));
    if (Uniform(0, 2) > 0) r.deadline = now_ + std::chrono::microseconds(Uniform(0, 60000));
    deadline_[r.id] = std::min(r.deadline, r.arrival + config_.default_timeout);
    ++submitted_;
    const AdmitResult result = policy_->Admit(r, now_);
    if (!result.accepted) {
      End(r.id, result.rejection);
      return;
    }
    if (result.superseded) End(*result.superseded, Outcome::kSuperseded);
  }

  void Decide() {
    int free = 0, busy = 0;
    for (const Engine& e : engines_) (e.busy ? busy : free)++;
    const int idle = Uniform(0, free);  // some free engines may not have reported yet
    const int64_t queued_before = policy_->size();
    const Decision d = policy_->Next(now_, EngineState{idle, busy});
    for (const Ended& e : d.ended) {
      EXPECT_EQ(e.outcome, Outcome::kRejectedDeadline);
      End(e.id, e.outcome);
    }
    if (d.kind != Decision::Kind::kDispatch) {
      // Continuous batching: an idle engine never waits while another runs and work is queued.
      const bool work_left = policy_->size() > 0;
      if ((config_.policy == Policy::kContinuous || config_.policy == Policy::kAdaptive ||
           config_.policy == Policy::kNaive) &&
          idle > 0 && (busy > 0 || config_.policy == Policy::kNaive)) {
        EXPECT_FALSE(work_left) << "idle engine left waiting with " << queued_before << " queued";
      }
      if (d.kind == Decision::Kind::kWait) {
        EXPECT_GT(d.wake_at, now_);
      }
      return;
    }
    ASSERT_GT(idle, 0);
    CheckPlan(d.plan);
    ++plans_;
    planned_ += d.plan.batch_size;
    for (Engine& e : engines_) {
      if (e.busy) continue;
      e = Engine{true, d.plan.ids, d.plan.bucket, d.plan.padded_batch_size, now_};
      break;
    }
  }

  void CheckPlan(const BatchPlan& plan) {
    ASSERT_FALSE(plan.ids.empty());
    EXPECT_EQ(plan.batch_size, static_cast<int>(plan.ids.size()));
    EXPECT_LE(plan.batch_size, config_.max_batch_size);
    if (config_.policy == Policy::kNaive) {
      EXPECT_EQ(plan.batch_size, 1);
    }
    if (plan.batch_size > 1) {
      EXPECT_LE(plan.pixels, config_.max_batch_pixels);
    }
    EXPECT_GE(plan.padded_batch_size, plan.batch_size);
    const Duration est1 = policy_->SingleRequestEstimate(plan.bucket);
    for (uint64_t id : plan.ids) {
      EXPECT_EQ(ended_.count(id), 0u) << "request " << id << " planned after it ended";
      EXPECT_FALSE(policy_->IsQueued(id));
      const TimePoint deadline = deadline_.at(id);
      if (deadline != kNoDeadline) {
        EXPECT_LE(now_ + est1, deadline) << "hopeless request ran";
      }
    }
  }

  void FinishEngine(Engine& e) {
    if (!e.busy) return;
    const Outcome outcome = Uniform(0, 19) == 0 ? Outcome::kFailed : Outcome::kDone;
    for (uint64_t id : e.ids) End(id, outcome);
    policy_->OnBatchCompleted(e.bucket, e.padded, std::chrono::microseconds(200 * e.padded + 800));
    e = Engine{};
  }

  void End(uint64_t id, Outcome outcome) {
    const bool first = ended_.emplace(id, outcome).second;
    EXPECT_TRUE(first) << "request " << id << " ended twice (" << OutcomeName(outcome) << ")";
    ++outcome_counts_[static_cast<int>(outcome)];
  }

  std::mt19937 rng_;
  SchedulerConfig config_;
  std::unique_ptr<BatchPolicy> policy_;
  std::vector<Engine> engines_ = std::vector<Engine>(kEngines);
  TimePoint now_ = At(0);
  uint64_t next_id_ = 0;
  uint64_t submitted_ = 0;
  std::unordered_map<uint64_t, Outcome> ended_;
  std::unordered_map<uint64_t, TimePoint> deadline_;
  int64_t outcome_counts_[kNumOutcomes] = {};
  int64_t plans_ = 0;
  int64_t planned_ = 0;
};

class PropertyTest : public ::testing::TestWithParam<Policy> {};

TEST_P(PropertyTest, EveryRequestEndsExactlyOnce) {
  Harness harness(GetParam(), 12345);
  harness.Run(100000);
  harness.CheckTotals();
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, PropertyTest,
                         ::testing::Values(Policy::kNaive, Policy::kDynamic, Policy::kContinuous,
                                           Policy::kAdaptive),
                         [](const auto& info) { return std::string(PolicyName(info.param)); });

// Scheduler cost per request with thousands queued: admit 20 000 requests from 64 clients over 4
// buckets and 4 classes (deadlines on), then drain them with one always-idle engine. Printed only.
TEST(OverheadTest, PrintsPerRequestCost) {
  SchedulerConfig c;
  c.num_buckets = 4;
  c.max_batch_size = 16;
  c.queue_capacity_requests = 100000;
  c.queue_capacity_bytes = 0;
  auto p = MakePolicy(c);
  constexpr int kRequests = 20000;
  std::vector<Request> requests(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    requests[i] = RequestBuilder(i, i * 0.001)
                      .Bucket(i % 4)
                      .Prio(static_cast<Priority>(i % kNumPriorities))
                      .Client("client-" + std::to_string(i % 64))
                      .DeadlineAt(60000);
  }
  const auto start = std::chrono::steady_clock::now();
  for (const Request& r : requests) (void)p->Admit(r, r.arrival);
  int64_t planned = 0;
  const TimePoint now = At(30);
  while (planned < kRequests) {
    const Decision d = p->Next(now, Idle(1, 1));
    if (d.kind != Decision::Kind::kDispatch) break;
    planned += d.plan.batch_size;
  }
  const double total_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(planned, kRequests);
  std::printf("[ overhead ] %d requests admitted + planned: %.2f us per request\n", kRequests,
              total_us / kRequests);
}

}  // namespace
}  // namespace mogserve::scheduler
