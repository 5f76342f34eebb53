#include "pipeline/buffer_plan.h"

#include <gtest/gtest.h>

#include "fake_engine.h"

namespace mogserve::pipeline::testing {
namespace {

constexpr int64_t kBytesPerPixel = 1000;  // 16x16 canvas: 256 000 bytes per image

struct PlanFixture : ::testing::Test {
  ManualTimeSource time;
  FakeEngine engine{/*open=*/true, &time};
  void SetUp() override { engine.SetLatency(milliseconds(10), milliseconds(5)); }
};

TEST_F(PlanFixture, LargestBatchFitsTheExplicitBudget) {
  engine.SetMemory(0, 0, kBytesPerPixel);
  BufferPlanOptions options;
  options.budget_bytes = 1'100'000;  // 4 images fit (1 024 000), 8 do not
  auto plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), options, &time);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->max_batch_size(0), 4);
  ASSERT_EQ(plan->rows().size(), 4u);  // 1, 2, 4 measured; 8 predicted and skipped
  EXPECT_TRUE(plan->rows()[2].measured);
  EXPECT_EQ(plan->rows()[2].peak_bytes, 1'024'000);
  EXPECT_DOUBLE_EQ(plan->rows()[2].latency_ms, 30.0);  // 10 + 5·4
  EXPECT_FALSE(plan->rows()[3].measured);
  EXPECT_FALSE(plan->rows()[3].fits);
  // The skipped batch was never run: no forward pass of 8 rows.
  for (const FakeEngine::Call& c : engine.calls()) EXPECT_LE(c.rows, 4);
  // 1 warm-up + 3 timed passes per measured size.
  EXPECT_EQ(engine.calls().size(), 12u);
  EXPECT_EQ(plan->planned_batch_sizes(), std::vector<int>({1, 2, 4}));
  const std::string table = plan->Describe();
  EXPECT_NE(table.find("16x16"), std::string::npos) << table;
  EXPECT_NE(table.find("no (predicted)"), std::string::npos) << table;
}

TEST_F(PlanFixture, BudgetIsAFractionOfCapacityMinusWhatIsInUse) {
  engine.SetMemory(10'000'000, 6'000'000, kBytesPerPixel);
  BufferPlanOptions options;
  options.memory_fraction = 0.8;  // 8 000 000 - 6 000 000 in use = 2 000 000
  auto plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), options, &time);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->budget_bytes(), 2'000'000);
  EXPECT_EQ(plan->max_batch_size(0), 4);  // 8 images: 2 048 000
}

TEST_F(PlanFixture, NoCapacityMeansNoMemoryLimit) {
  engine.SetMemory(0, 0, kBytesPerPixel);
  auto plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), {}, &time);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->budget_bytes(), 0);
  EXPECT_EQ(plan->max_batch_size(0), 16);
}

TEST_F(PlanFixture, FeedsTheSchedulerAndSeedsItsLatencyModel) {
  engine.SetMemory(0, 0, kBytesPerPixel);
  BufferPlanOptions options;
  options.budget_bytes = 1'100'000;
  auto plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), options, &time);
  ASSERT_TRUE(plan.ok());
  scheduler::SchedulerConfig config;
  config.max_batch_size = 16;
  plan->ApplyTo(&config, /*pad_to_planned=*/true);
  EXPECT_EQ(config.bucket_max_batch_size, std::vector<int>({4}));
  EXPECT_EQ(config.planned_batch_sizes, std::vector<int>({1, 2, 4}));
  config.num_buckets = 1;
  EXPECT_TRUE(config.Validate().ok());
  EXPECT_EQ(config.PaddedBatchSize(3), 4);

  const std::vector<LatencySample> seed = plan->latency_samples();
  ASSERT_EQ(seed.size(), 3u);
  EXPECT_EQ(seed[0].latency, milliseconds(15));
  // A pipeline seeded with it refuses a request whose deadline a batch of one cannot meet.
  PipelineOptions p;
  p.buckets = ShapeBuckets::FixedSquare(16);
  p.scheduler = config;
  p.latency_seed = seed;
  p.preprocess_threads = 0;
  p.time = &time;
  FakeEngine serving(/*open=*/true);
  auto pipeline = Pipeline::Create({&serving}, &serving, p);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().ToString();
  RequestResult result;
  SubmitRequest r;
  r.image.decoded = TaggedImage(1);
  r.timeout = milliseconds(12);
  (*pipeline)->Submit(std::move(r), [&](RequestResult rr) { result = std::move(rr); });
  EXPECT_EQ(result.outcome, Outcome::kRejectedDeadline);
}

TEST_F(PlanFixture, CapsAreClampedToMaxBatchSizeAndPaddingCoversIt) {
  engine.SetMemory(0, 0, kBytesPerPixel);
  auto plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), {}, &time);
  ASSERT_TRUE(plan.ok());
  scheduler::SchedulerConfig config;
  config.max_batch_size = 12;
  plan->ApplyTo(&config, true);
  EXPECT_EQ(config.bucket_max_batch_size, std::vector<int>({12}));
  EXPECT_EQ(config.planned_batch_sizes, std::vector<int>({1, 2, 4, 8, 12}));
  config.num_buckets = 1;
  EXPECT_TRUE(config.Validate().ok());
}

TEST_F(PlanFixture, UnmeasuredBucketsAreExtrapolatedByPixels) {
  engine.SetMemory(0, 0, kBytesPerPixel);
  auto buckets = ShapeBuckets::Target(64, 32);  // 64x64 only
  ASSERT_TRUE(buckets.ok());
  const ShapeBuckets modelscope = ShapeBuckets::ModelScope(32);
  // Exact-shape buckets get their shape when first placed: these before the plan.
  for (auto [w, h] : {std::pair{64, 64}, {128, 64}, {32, 32}, {1500, 1500}}) modelscope.Place(w, h);
  BufferPlanOptions options;
  options.budget_bytes = 64 * 64 * kBytesPerPixel * 4;  // four 64x64 images
  options.buckets = {modelscope.Place(64, 64).bucket};
  auto plan = BufferPlan::Measure(engine, modelscope, options, &time);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->max_batch_size(modelscope.Place(64, 64).bucket), 4);
  EXPECT_EQ(plan->max_batch_size(modelscope.Place(128, 64).bucket), 2);     // twice the pixels
  EXPECT_EQ(plan->max_batch_size(modelscope.Place(32, 32).bucket), 16);     // a quarter
  EXPECT_EQ(plan->max_batch_size(modelscope.Place(1500, 1500).bucket), 1);  // never below 1
  // A shape first seen after the plan takes a slot planned as the largest shape: 1.
  EXPECT_EQ(plan->max_batch_size(modelscope.Place(16, 16).bucket), 1);
  for (const FakeEngine::Call& c : engine.calls()) EXPECT_EQ(c.width, 64);  // only one measured
}

TEST_F(PlanFixture, BatchesAreCappedAtTheThroughputKnee) {
  // 10 + 5n ms: images/s 67, 100, 133, 160, 178 for n = 1, 2, 4, 8, 16.
  BufferPlanOptions options;
  options.throughput_knee = 0.8;  // >= 142 images/s: batch 8 is the smallest
  auto plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), options, &time);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->max_batch_size(0), 16);  // memory does not limit it
  EXPECT_EQ(plan->knee_batch_size(0), 8);
  scheduler::SchedulerConfig config;
  plan->ApplyTo(&config, /*pad_to_planned=*/true);
  EXPECT_EQ(config.bucket_max_batch_size, std::vector<int>({8}));
  EXPECT_EQ(config.planned_batch_sizes, std::vector<int>({1, 2, 4, 8}));
  EXPECT_NE(plan->Describe().find("0:16/8"), std::string::npos) << plan->Describe();

  options.throughput_knee = 0.95;  // >= 169 images/s: only batch 16
  plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), options, &time);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->knee_batch_size(0), 16);
}

TEST_F(PlanFixture, WithoutBatchEconomyBatchesStayAtOne) {
  // 10 ms per image at every batch size (a CPU with no batch economy): a larger batch only
  // delays its first answers.
  engine.SetLatency(milliseconds(0), milliseconds(10));
  auto plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), {}, &time);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->knee_batch_size(0), 1);
  scheduler::SchedulerConfig config;
  plan->ApplyTo(&config, false);
  EXPECT_EQ(config.bucket_max_batch_size, std::vector<int>({1}));

  BufferPlanOptions memory_only;
  memory_only.throughput_knee = 0;
  plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), memory_only, &time);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->knee_batch_size(0), 16);
}

TEST_F(PlanFixture, UnmeasuredBucketsTakeTheNearestKneeWithinTheirMemoryCap) {
  engine.SetMemory(0, 0, kBytesPerPixel);
  const ShapeBuckets modelscope = ShapeBuckets::ModelScope(32);
  for (auto [w, h] : {std::pair{64, 64}, {64, 96}, {128, 128}}) modelscope.Place(w, h);
  BufferPlanOptions options;
  options.budget_bytes = 64 * 64 * kBytesPerPixel * 8;  // eight 64x64 images
  options.throughput_knee = 0.8;                        // measured bucket: knee 4 of 1, 2, 4, 8
  options.buckets = {modelscope.Place(64, 64).bucket};
  auto plan = BufferPlan::Measure(engine, modelscope, options, &time);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // 10 + 5n over 1, 2, 4, 8: 67, 100, 133, 160 images/s; 0.8 x 160 = 128 -> batch 4.
  EXPECT_EQ(plan->knee_batch_size(modelscope.Place(64, 64).bucket), 4);
  EXPECT_EQ(plan->knee_batch_size(modelscope.Place(64, 96).bucket), 4);
  EXPECT_EQ(plan->knee_batch_size(modelscope.Place(128, 128).bucket), 2);  // memory: 2 fit
}

// The manual clock, with one extra jump at the n-th reading: a pass descheduled by another
// process on a shared machine.
class HiccupClock final : public TimeSource {
 public:
  HiccupClock(ManualTimeSource& base, int hiccup_at, Duration jump)
      : base_(base), hiccup_at_(hiccup_at), jump_(jump) {}
  TimePoint Now() const override {
    if (++readings_ == hiccup_at_) base_.Advance(jump_);
    return base_.Now();
  }
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 TimePoint deadline) const override {
    base_.WaitUntil(cv, lock, deadline);
  }
  uint64_t Subscribe(std::function<void()> f) override { return base_.Subscribe(std::move(f)); }
  void Unsubscribe(uint64_t token) override { base_.Unsubscribe(token); }

 private:
  ManualTimeSource& base_;
  const int hiccup_at_;
  const Duration jump_;
  mutable int readings_ = 0;
};

TEST_F(PlanFixture, OneSlowPassDoesNotMoveTheLatencyOrTheCap) {
  // Two clock readings per pass, four passes (one warm-up, three timed) per batch size: readings
  // 33-40 are batch 16's, and its first timed pass (35-36) is 200 ms slower. With the mean,
  // batch 16 would look slower than batch 8 and the knee would drop from 8 to 4.
  HiccupClock clock(time, /*hiccup_at=*/36, milliseconds(200));
  BufferPlanOptions options;
  options.throughput_knee = 0.8;
  auto plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), options, &clock);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->rows().size(), 5u);
  EXPECT_EQ(plan->rows()[4].batch_size, 16);
  EXPECT_DOUBLE_EQ(plan->rows()[4].latency_ms, 90.0);  // 10 + 5·16
  EXPECT_EQ(plan->knee_batch_size(0), 8);
}

TEST_F(PlanFixture, ForwardErrorsNameTheBucketAndBatch) {
  engine.FailCall(0);
  auto plan = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), {}, &time);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("16x16, batch 1"), std::string::npos)
      << plan.status().message();
}

TEST_F(PlanFixture, RejectsBadOptions) {
  BufferPlanOptions options;
  options.batch_sizes = {2, 1};
  EXPECT_FALSE(BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), options, &time).ok());
  options = {};
  options.memory_fraction = 1.5;
  EXPECT_FALSE(BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), options, &time).ok());
  options = {};
  options.buckets = {3};
  EXPECT_FALSE(BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), options, &time).ok());
  options = {};
  options.throughput_knee = 1.5;
  auto bad = BufferPlan::Measure(engine, ShapeBuckets::FixedSquare(16), options, &time);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("throughput knee"), std::string::npos);
}

}  // namespace
}  // namespace mogserve::pipeline::testing
