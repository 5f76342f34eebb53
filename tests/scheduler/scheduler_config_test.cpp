#include "scheduler/scheduler_config.h"

#include <gtest/gtest.h>

#include "scheduler/outcome.h"
#include "scheduler/request.h"

namespace mogserve::scheduler {
namespace {

// The message must name the field so an operator can fix the flag without reading code.
void ExpectInvalid(const SchedulerConfig& config, const std::string& field) {
  const Status st = config.Validate();
  ASSERT_FALSE(st.ok()) << "expected " << field << " to be rejected";
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find(field), std::string::npos) << st.message();
}

TEST(SchedulerConfigTest, DefaultsAreValid) {
  EXPECT_TRUE(SchedulerConfig{}.Validate().ok());
}

TEST(SchedulerConfigTest, EachBadFieldIsNamed) {
  SchedulerConfig c;
  c.num_buckets = 0;
  ExpectInvalid(c, "num_buckets");
  c = {};
  c.max_batch_size = 0;
  ExpectInvalid(c, "max_batch_size");
  c = {};
  c.num_buckets = 2;
  c.bucket_max_batch_size = {4};
  ExpectInvalid(c, "bucket_max_batch_size");
  c.bucket_max_batch_size = {4, 32};
  ExpectInvalid(c, "bucket_max_batch_size");
  c = {};
  c.max_batch_pixels = -1;
  ExpectInvalid(c, "max_batch_pixels");
  c = {};
  c.max_delay = std::chrono::milliseconds(-1);
  ExpectInvalid(c, "max_delay");
  c = {};
  c.preferred_batch_sizes = {4, 2};
  ExpectInvalid(c, "preferred_batch_sizes");
  c.preferred_batch_sizes = {4, 64};
  ExpectInvalid(c, "preferred_batch_sizes");
  c = {};
  c.planned_batch_sizes = {0, 1};
  ExpectInvalid(c, "planned_batch_sizes");
  c = {};
  c.queue_capacity_requests = 0;
  ExpectInvalid(c, "queue_capacity_requests");
  c = {};
  c.queue_capacity_bytes = -5;
  ExpectInvalid(c, "queue_capacity_bytes");
  c = {};
  c.default_timeout = std::chrono::seconds(-1);
  ExpectInvalid(c, "default_timeout");
  c = {};
  c.aging_step = std::chrono::seconds(-1);
  ExpectInvalid(c, "aging_step");
  c = {};
  c.latency_window = 0;
  ExpectInvalid(c, "latency_window");
  c = {};
  c.policy = Policy::kAdaptive;
  c.latency_target = Duration::zero();
  ExpectInvalid(c, "latency_target");
  c = {};
  c.policy = Policy::kAdaptive;
  c.adaptive_min_samples = 1;
  ExpectInvalid(c, "adaptive_min_samples");
}

TEST(SchedulerConfigTest, BatchSizeCapsAndPadding) {
  SchedulerConfig c;
  c.num_buckets = 2;
  c.max_batch_size = 16;
  c.bucket_max_batch_size = {16, 6};
  c.planned_batch_sizes = {1, 2, 4, 8, 12};
  ASSERT_TRUE(c.Validate().ok());
  EXPECT_EQ(c.MaxBatchSizeFor(0), 12);  // nothing planned beyond 12
  EXPECT_EQ(c.MaxBatchSizeFor(1), 6);
  EXPECT_EQ(c.PaddedBatchSize(1), 1);
  EXPECT_EQ(c.PaddedBatchSize(3), 4);
  EXPECT_EQ(c.PaddedBatchSize(6), 8);
  EXPECT_EQ(c.PaddedBatchSize(12), 12);
  c.planned_batch_sizes.clear();
  EXPECT_EQ(c.PaddedBatchSize(7), 7);
}

TEST(SchedulerConfigTest, NamesRoundTrip) {
  for (Policy p : {Policy::kNaive, Policy::kDynamic, Policy::kContinuous, Policy::kAdaptive}) {
    StatusOr<Policy> parsed = ParsePolicy(PolicyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  StatusOr<Policy> bad = ParsePolicy("greedy");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("greedy"), std::string::npos);
  for (int i = 0; i < kNumPriorities; ++i) {
    EXPECT_EQ(ParsePriority(PriorityName(static_cast<Priority>(i))), static_cast<Priority>(i));
  }
  EXPECT_EQ(ParsePriority("vip"), std::nullopt);
  EXPECT_STREQ(OutcomeName(Outcome::kRejectedQueueFull), "rejected_queue_full");
  EXPECT_STREQ(OutcomeName(Outcome::kRejectedDeadline), "rejected_deadline");
  EXPECT_STREQ(OutcomeName(Outcome::kRejectedBadInput), "rejected_bad_input");
  EXPECT_STREQ(OutcomeName(Outcome::kSuperseded), "superseded");
  EXPECT_STREQ(OutcomeName(Outcome::kCancelled), "cancelled");
  EXPECT_STREQ(OutcomeName(Outcome::kDone), "done");
  EXPECT_STREQ(OutcomeName(Outcome::kFailed), "failed");
}

}  // namespace
}  // namespace mogserve::scheduler
