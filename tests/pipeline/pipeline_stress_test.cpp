// Stress: many threads submitting, cancelling and timing out at once against real time and two
// engine instances. Whatever the interleaving, every request must end exactly once and the
// counters must add up. Run under ThreadSanitizer by scripts/test.sh.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "fake_engine.h"
#include "pipeline/pipeline.h"

namespace mogserve::pipeline::testing {
namespace {

TEST(PipelineStressTest, EveryRequestEndsExactlyOnce) {
  constexpr int kThreads = 64;
  constexpr int kPerThread = 100'000 / kThreads + 1;  // 100 032 requests
  constexpr int kTotal = kThreads * kPerThread;

  FakeEngine engine0(/*open=*/true), engine1(/*open=*/true);
  engine0.FailCall(100);  // one engine failure somewhere in the run
  PipelineOptions options;
  options.buckets = ShapeBuckets::FixedSquare(8);
  options.scheduler.policy = scheduler::Policy::kContinuous;
  options.scheduler.max_batch_size = 16;
  options.scheduler.queue_capacity_requests = 512;  // small: queue-full rejections happen
  options.scheduler.max_delay = std::chrono::microseconds(200);
  options.preprocess_threads = 2;
  options.max_preprocessing = 256;
  options.postprocess_threads = 2;
  auto created = Pipeline::Create({&engine0, &engine1}, &engine0, options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::unique_ptr<Pipeline> pipeline = std::move(created).value();

  // ids are 1..kTotal: one Submit each.
  std::vector<std::atomic<int>> ends(kTotal + 1);
  std::array<std::atomic<int64_t>, scheduler::kNumOutcomes> outcome_counts{};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1234 + t);
      std::vector<uint64_t> mine;
      mine.reserve(kPerThread);
      const image::Image picture = TaggedImage(t, 4, 4);
      for (int i = 0; i < kPerThread; ++i) {
        SubmitRequest r;
        r.image.decoded = picture;
        r.priority = static_cast<Priority>(rng() % scheduler::kNumPriorities);
        r.client = "client-" + std::to_string(t % 8);
        r.latest_only = rng() % 16 == 0;
        if (rng() % 4 == 0) r.timeout = std::chrono::microseconds(rng() % 2000);
        const SubmitMode mode = rng() % 2 == 0 ? SubmitMode::kRefuse : SubmitMode::kBlock;
        const SubmitTicket ticket = pipeline->Submit(
            std::move(r),
            [&](RequestResult result) {
              ends[result.id].fetch_add(1);
              outcome_counts[static_cast<int>(result.outcome)].fetch_add(1);
            },
            mode);
        mine.push_back(ticket.id);
        if (rng() % 8 == 0) pipeline->Cancel(mine[rng() % mine.size()]);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  pipeline->Shutdown(ShutdownMode::kDrain);

  for (int id = 1; id <= kTotal; ++id) {
    ASSERT_EQ(ends[id].load(), 1) << "request " << id;
  }
  const PipelineStats s = pipeline->Stats();
  EXPECT_EQ(s.submitted, kTotal);
  EXPECT_EQ(s.ended(), kTotal);
  int64_t sum = 0;
  for (int o = 0; o < scheduler::kNumOutcomes; ++o) {
    EXPECT_EQ(s.outcomes[o], outcome_counts[o].load())
        << scheduler::OutcomeName(static_cast<Outcome>(o));
    sum += outcome_counts[o].load();
  }
  EXPECT_EQ(sum, kTotal);
  EXPECT_EQ(s.preprocessing + s.queue.total.requests + s.running, 0);
  EXPECT_GT(s.count(Outcome::kDone), 0);
  EXPECT_EQ(s.failed_batches, 1);
  // Whatever happened, the canvases in circulation stayed bounded by the queue and batches.
  EXPECT_LE(s.canvas_allocations, 512 + 256 + 2 * 16);
  std::printf("outcomes:");
  for (int o = 0; o < scheduler::kNumOutcomes; ++o) {
    std::printf(" %s=%lld", scheduler::OutcomeName(static_cast<Outcome>(o)),
                static_cast<long long>(s.outcomes[o]));
  }
  std::printf("\nbatches %lld, mean batch size %.2f\n", static_cast<long long>(s.batches),
              s.mean_batch_size());
}

}  // namespace
}  // namespace mogserve::pipeline::testing
