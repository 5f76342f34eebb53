// The pipeline executes the scheduler's decisions with real threads; these tests drive it with a
// gated fake engine and manual time, so every batch and every outcome is determined by the test.
#include "pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "fake_engine.h"
#include "pipeline/detect_call.h"

namespace mogserve::pipeline::testing {
namespace {

using scheduler::Policy;
using scheduler::SchedulerConfig;

SchedulerConfig Config(Policy policy, int max_batch = 4) {
  SchedulerConfig c;
  c.policy = policy;
  c.max_batch_size = max_batch;
  c.max_delay = milliseconds(5);
  c.default_timeout = Duration::zero();
  c.aging_step = milliseconds(1000);
  return c;
}

// One pipeline over gated fake engines, manual time, decoding on the submitting thread (so a
// Submit has been admitted and every resulting decision taken when it returns).
struct Harness {
  ManualTimeSource time;
  std::vector<std::unique_ptr<FakeEngine>> engines;
  Recorder recorder;
  std::unique_ptr<Pipeline> pipeline;

  explicit Harness(const SchedulerConfig& config, int instances = 1,
                   std::vector<LatencySample> seed = {}, const FaceStage* face_stage = nullptr) {
    PipelineOptions options;
    options.face_stage = face_stage;
    options.buckets = ShapeBuckets::FixedSquare(16);
    options.scheduler = config;
    options.latency_seed = std::move(seed);
    options.preprocess_threads = 0;
    options.postprocess_threads = 1;
    options.time = &time;
    options.observer = &recorder;
    std::vector<engine::Engine*> raw;
    for (int i = 0; i < instances; ++i) {
      engines.push_back(std::make_unique<FakeEngine>());
      raw.push_back(engines.back().get());
    }
    auto created = Pipeline::Create(raw, engines.front().get(), std::move(options));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    pipeline = std::move(created).value();
  }
  ~Harness() {
    for (auto& e : engines) e->Open();
    pipeline.reset();
  }

  FakeEngine& engine(int i = 0) { return *engines[i]; }

  uint64_t Submit(int tag, Priority priority = Priority::kApi, const std::string& client = "c",
                  Duration timeout = Duration::zero(), bool latest_only = false) {
    SubmitRequest r;
    r.image.decoded = TaggedImage(tag);
    r.priority = priority;
    r.client = client;
    r.timeout = timeout;
    r.latest_only = latest_only;
    return pipeline->Submit(std::move(r), nullptr).id;
  }
  int64_t queued() const { return pipeline->Stats().queue.total.requests; }
  int64_t running() const { return pipeline->Stats().running; }
  // Runs the engine's next batch: advances time by `latency`, then releases it.
  void Finish(FakeEngine& e, Duration latency = milliseconds(10)) {
    time.Advance(latency);
    e.Release();
  }
};

std::vector<uint64_t> Ids(std::initializer_list<uint64_t> ids) {
  return ids;
}

TEST(PipelineTest, NaiveRunsOneRequestAtATimeInArrivalOrder) {
  Harness h(Config(Policy::kNaive));
  const uint64_t a = h.Submit(1), b = h.Submit(2, Priority::kInteractive), c = h.Submit(3);
  h.engine().WaitForCalls(1);
  for (int i = 0; i < 3; ++i) {
    h.Finish(h.engine());
    h.engine().WaitForCalls(std::min(3, i + 2));
  }
  h.recorder.WaitForResults(3);
  const auto batches = h.recorder.batches();
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0], Ids({a}));
  EXPECT_EQ(batches[1], Ids({b}));  // FIFO: priority does not matter to the baseline
  EXPECT_EQ(batches[2], Ids({c}));
  for (uint64_t id : {a, b, c}) {
    EXPECT_EQ(h.recorder.WaitFor(id).outcome, Outcome::kDone);
    EXPECT_EQ(h.recorder.WaitFor(id).result.timing.batch_size, 1);
  }
}

TEST(PipelineTest, DynamicWaitsForMaxDelayThenSendsWhatIsQueued) {
  Harness h(Config(Policy::kDynamic, 4));
  h.Submit(1);
  h.time.Advance(milliseconds(1));
  h.Submit(2);
  h.Submit(3);
  h.time.Advance(milliseconds(3));  // 4 ms after the first arrival: still holding
  EXPECT_EQ(h.queued(), 3);
  EXPECT_EQ(h.running(), 0);
  h.time.Advance(milliseconds(1));  // max_delay from the oldest arrival
  EXPECT_EQ(h.queued(), 0);
  h.engine().WaitForCalls(1);
  EXPECT_EQ(h.recorder.batches()[0].size(), 3u);
  EXPECT_EQ(h.engine().calls()[0].rows, 3);
}

TEST(PipelineTest, DynamicSendsAFullBatchAtOnceAndKeepsMaxBatchSize) {
  Harness h(Config(Policy::kDynamic, 4));
  for (int i = 0; i < 6; ++i) h.Submit(i);
  h.engine().WaitForCalls(1);  // no time passed: the full batch went at once
  EXPECT_EQ(h.engine().calls()[0].rows, 4);
  EXPECT_EQ(h.queued(), 2);
  h.Finish(h.engine(), milliseconds(1));
  // Two left, below a full batch: dynamic holds them for max_delay even with the engine idle.
  EXPECT_EQ(h.queued(), 2);
  h.time.Advance(milliseconds(4));
  h.engine().WaitForCalls(2);
  EXPECT_EQ(h.engine().calls()[1].rows, 2);
}

TEST(PipelineTest, ContinuousDispatchesTheMomentTheEngineFrees) {
  Harness h(Config(Policy::kContinuous, 8));
  const uint64_t first = h.Submit(1);
  // Every engine idle and one request queued: continuous may hold it up to max_delay...
  EXPECT_EQ(h.queued(), 1);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  EXPECT_EQ(h.recorder.batches()[0], Ids({first}));
  // ...but never while an engine is busy: what arrives meanwhile goes out the moment it frees
  // (having waited through the running batch, it is past max_delay), with no time passing.
  std::vector<uint64_t> waiting;
  for (int i = 0; i < 5; ++i) waiting.push_back(h.Submit(10 + i));
  EXPECT_EQ(h.queued(), 5);
  h.time.Advance(milliseconds(30));  // the running batch takes 30 ms
  EXPECT_EQ(h.queued(), 5);          // engine busy: they wait for it, nothing else to do
  const TimePoint freed_at = h.time.Now();
  h.engine().Release();
  h.engine().WaitForCalls(2);
  EXPECT_EQ(h.time.Now(), freed_at);
  EXPECT_EQ(h.recorder.batches()[1], waiting);
}

TEST(PipelineTest, ContinuousGivesWorkToAnIdleInstanceWhileAnotherIsBusy) {
  Harness h(Config(Policy::kContinuous, 8), /*instances=*/2);
  h.Submit(1);
  h.time.Advance(milliseconds(5));  // the first batch, after max_delay with both idle
  EXPECT_EQ(h.running(), 1);
  const uint64_t second = h.Submit(2);  // one instance busy: no waiting at all
  EXPECT_EQ(h.queued(), 0);
  EXPECT_EQ(h.running(), 2);
  h.engine(1).WaitForCalls(1);
  EXPECT_EQ(h.engine(1).calls()[0].tags, std::vector<int>({2}));
  h.engine(1).Release();
  h.engine(1).WaitForCalls(1);
  EXPECT_EQ(h.recorder.WaitFor(second).outcome, Outcome::kDone);
}

TEST(PipelineTest, ContinuousSendsAFullTargetBatchWithoutWaiting) {
  Harness h(Config(Policy::kContinuous, 3));
  for (int i = 0; i < 3; ++i) h.Submit(i);
  h.engine().WaitForCalls(1);
  EXPECT_EQ(h.engine().calls()[0].rows, 3);
}

TEST(PipelineTest, AdaptiveBehavesLikeContinuousUntilItsModelIsFitted) {
  Harness h(Config(Policy::kAdaptive, 8));
  h.Submit(1);
  h.time.Advance(milliseconds(5));  // max_delay, as continuous
  h.engine().WaitForCalls(1);
  h.Submit(2);
  h.Submit(3);
  h.Finish(h.engine());
  h.engine().WaitForCalls(2);
  EXPECT_EQ(h.engine().calls()[1].rows, 2);
}

// Fitted model a = 1 ms/image, b = 20 ms: with requests arriving every millisecond, waiting
// raises throughput while the queue is below r·b = 20, so adaptive holds a small queue up to b
// (20 ms) from the oldest arrival, where continuous would have sent it after max_delay (5 ms).
TEST(PipelineTest, AdaptiveHoldsWhileWaitingRaisesThroughput) {
  SchedulerConfig c = Config(Policy::kAdaptive, 8);
  c.adaptive_min_samples = 2;
  Harness h(c, 1, {{0, 1, milliseconds(21)}, {0, 8, milliseconds(28)}});
  // The first request goes at once (no arrival rate yet). Its batch fails, so it adds no
  // latency sample: the model stays exactly a = 1 ms, b = 20 ms.
  h.engine().FailCall(0);
  const uint64_t first = h.Submit(0);
  h.engine().WaitForCalls(1);
  for (int i = 1; i <= 4; ++i) {  // t = 1, 2, 3, 4 ms: one arrival per millisecond
    h.time.Advance(milliseconds(1));
    h.Submit(i);
  }
  h.engine().Release();
  EXPECT_EQ(h.recorder.WaitFor(first).outcome, Outcome::kFailed);
  h.time.Advance(milliseconds(6));  // t = 10: continuous would have sent them at t = 6
  EXPECT_EQ(h.queued(), 4);
  h.time.Advance(milliseconds(10));  // t = 20
  EXPECT_EQ(h.queued(), 4);
  h.time.Advance(milliseconds(1));  // t = 21 = oldest arrival + b
  EXPECT_EQ(h.queued(), 0);
  h.engine().WaitForCalls(2);
  EXPECT_EQ(h.engine().calls()[1].rows, 4);
}

TEST(PipelineTest, MaxBatchPixelsLimitsTheBatch) {
  SchedulerConfig c = Config(Policy::kContinuous, 8);
  c.max_batch_pixels = 16 * 16 * 2 + 100;  // two 16x16 canvases fit, three do not
  Harness h(c);
  h.Submit(0);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  for (int i = 1; i <= 5; ++i) h.Submit(i);
  h.engine().Release();
  h.engine().WaitForCalls(2);
  h.engine().Release();
  h.engine().WaitForCalls(3);
  h.Finish(h.engine());  // the last one waits for max_delay: under the budget, below target
  h.engine().WaitForCalls(4);
  for (const FakeEngine::Call& call : h.engine().calls()) EXPECT_LE(call.rows, 2);
  EXPECT_EQ(h.engine().calls()[1].rows, 2);
}

TEST(PipelineTest, PlannedBatchSizesPadTheBatch) {
  SchedulerConfig c = Config(Policy::kDynamic, 8);
  c.planned_batch_sizes = {1, 2, 4, 8};
  Harness h(c);
  for (int i = 0; i < 3; ++i) h.Submit(i);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  EXPECT_EQ(h.engine().calls()[0].rows, 3);
  EXPECT_EQ(h.engine().calls()[0].padded, 4);
  h.engine().Release();
  h.recorder.WaitForResults(3);
  EXPECT_EQ(h.pipeline->Stats().padded_rows, 1);
}

TEST(PipelineTest, HigherPriorityClassesRunFirst) {
  Harness h(Config(Policy::kContinuous, 1));
  h.Submit(0);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);  // busy, so the next three queue up
  const uint64_t stream = h.Submit(1, Priority::kStream);
  const uint64_t bulk = h.Submit(2, Priority::kBulk);
  const uint64_t api = h.Submit(3, Priority::kApi);
  const uint64_t interactive = h.Submit(4, Priority::kInteractive);
  for (int i = 2; i <= 5; ++i) {
    h.Finish(h.engine());
    h.engine().WaitForCalls(std::min(i, 5));
  }
  const auto batches = h.recorder.batches();
  ASSERT_EQ(batches.size(), 5u);
  EXPECT_EQ(batches[1], Ids({interactive}));
  EXPECT_EQ(batches[2], Ids({api}));
  EXPECT_EQ(batches[3], Ids({bulk}));
  EXPECT_EQ(batches[4], Ids({stream}));
}

// Aging: a bulk request waits at most 2 aging steps (+ the batch running when it becomes the
// most urgent) however much interactive work keeps arriving.
TEST(PipelineTest, StarvationGuardLetsOldBulkWorkThrough) {
  SchedulerConfig c = Config(Policy::kContinuous, 1);
  c.aging_step = milliseconds(20);
  Harness h(c);
  h.Submit(0, Priority::kInteractive);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  const TimePoint bulk_arrival = h.time.Now();
  const uint64_t bulk = h.Submit(1, Priority::kBulk);
  const milliseconds batch(10);
  size_t calls = 1;
  // Two fresh interactive requests arrive during every batch: a strict priority order would
  // never run the bulk request.
  while (!h.recorder.EverRan(bulk)) {
    h.Submit(2, Priority::kInteractive);
    h.Submit(3, Priority::kInteractive);
    h.Finish(h.engine(), batch);
    h.engine().WaitForCalls(++calls);
    ASSERT_LT(calls, 100u) << "bulk request starved";
  }
  EXPECT_LE(h.time.Now() - bulk_arrival, 2 * c.aging_step + batch);
}

// Fairness bound (bucket_queue.h): within a class, clients take turns, so one client's flood of
// 1000 delays a light client's request by at most one pick: it runs in the first batch formed
// after it arrives.
TEST(PipelineTest, AFloodingClientDoesNotDelayALightClient) {
  SchedulerConfig c = Config(Policy::kContinuous, 4);
  Harness h(c);
  h.Submit(0, Priority::kApi, "heavy");
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  for (int i = 0; i < 1000; ++i) h.Submit(1, Priority::kApi, "heavy");
  const uint64_t light = h.Submit(2, Priority::kApi, "light");
  h.Finish(h.engine());
  h.engine().WaitForCalls(2);
  const auto second_batch = h.recorder.batches()[1];
  EXPECT_NE(std::find(second_batch.begin(), second_batch.end(), light), second_batch.end());
  EXPECT_EQ(second_batch.size(), 4u);
  h.engine().Open();
  h.recorder.WaitForResults(1002);
}

TEST(PipelineTest, HopelessDeadlineIsRejectedAtAdmission) {
  // Seeded from a warm-up: a batch of one takes 10 ms.
  Harness h(Config(Policy::kContinuous, 4), 1, {{0, 1, milliseconds(10)}});
  const uint64_t id = h.Submit(1, Priority::kApi, "c", milliseconds(8));
  const RequestResult r = h.recorder.WaitFor(id);
  EXPECT_EQ(r.outcome, Outcome::kRejectedDeadline);
  EXPECT_EQ(r.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(h.recorder.batches().empty());
}

// A shape's first pass on an engine is cold (allocations, kernel creation, page faults): were it
// a latency sample, one slow start would make every frame of a live stream hopeless until the
// stale-estimate probe (5 s) - what a slow AVX2 machine did to detect-video's live sources.
TEST(PipelineTest, AnEnginesFirstPassOfAShapeIsNotALatencySample) {
  Harness h(Config(Policy::kContinuous, 1));
  const uint64_t first = h.Submit(0, Priority::kStream, "cam", milliseconds(1000), true);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  h.Finish(h.engine(), milliseconds(1750));
  EXPECT_EQ(h.recorder.WaitFor(first).outcome, Outcome::kDone);
  // Learnt from the cold pass, 1750 ms would exceed this frame's 1000 ms.
  const uint64_t second = h.Submit(1, Priority::kStream, "cam", milliseconds(1000), true);
  ASSERT_EQ(h.queued() + h.running(), 1)
      << "refused: " << h.recorder.WaitFor(second).status.ToString();
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(2);
  h.Finish(h.engine(), milliseconds(100));
  EXPECT_EQ(h.recorder.WaitFor(second).outcome, Outcome::kDone);
  // The warm pass is learnt: 100 ms cannot meet 50 ms.
  const uint64_t third = h.Submit(2, Priority::kStream, "cam", milliseconds(50), true);
  ASSERT_EQ(h.queued() + h.running(), 0) << "admitted: the warm pass was not learnt";
  EXPECT_EQ(h.recorder.WaitFor(third).outcome, Outcome::kRejectedDeadline);
  EXPECT_EQ(h.pipeline->Stats().cold_batches, 1);
}

// The warm-up ran its shapes on the first engine: their first pass there is a sample.
TEST(PipelineTest, TheWarmUpsShapesAreWarmOnTheFirstEngine) {
  Harness h(Config(Policy::kContinuous, 1), 1, {{0, 1, milliseconds(10)}});
  const uint64_t first = h.Submit(0);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  h.Finish(h.engine(), milliseconds(110));
  EXPECT_EQ(h.recorder.WaitFor(first).outcome, Outcome::kDone);
  // The model's mean is now (10 + 110) / 2 = 60 ms; the seed alone would admit 40 ms.
  const uint64_t second = h.Submit(1, Priority::kApi, "c", milliseconds(40));
  ASSERT_EQ(h.queued() + h.running(), 0) << "admitted: the warm-up's shape counted as cold";
  EXPECT_EQ(h.recorder.WaitFor(second).outcome, Outcome::kRejectedDeadline);
  EXPECT_EQ(h.pipeline->Stats().cold_batches, 0);
}

TEST(PipelineTest, QueuedRequestPastItsDeadlineIsRejectedBeforeItRuns) {
  Harness h(Config(Policy::kContinuous, 1), 1, {{0, 1, milliseconds(10)}});
  h.Submit(0);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  const uint64_t late = h.Submit(1, Priority::kApi, "c", milliseconds(15));
  const uint64_t fine = h.Submit(2);
  EXPECT_EQ(h.queued(), 2);
  h.time.Advance(milliseconds(6));  // 6 + 10 > 15: it can no longer make it
  EXPECT_EQ(h.recorder.WaitFor(late).outcome, Outcome::kRejectedDeadline);
  h.engine().Release();
  h.engine().WaitForCalls(2);
  h.engine().Release();
  EXPECT_EQ(h.recorder.WaitFor(fine).outcome, Outcome::kDone);
  EXPECT_FALSE(h.recorder.EverRan(late));
}

TEST(PipelineTest, FullQueueRejectsAtOnce) {
  SchedulerConfig c = Config(Policy::kContinuous, 1);
  c.queue_capacity_requests = 2;
  Harness h(c);
  h.Submit(0);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  h.Submit(1);
  h.Submit(2);
  const uint64_t refused = h.Submit(3);
  const RequestResult r = h.recorder.WaitFor(refused);  // already ended: Submit returned
  EXPECT_EQ(r.outcome, Outcome::kRejectedQueueFull);
  EXPECT_EQ(r.status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(h.pipeline->Stats().count(Outcome::kRejectedQueueFull), 1);
}

TEST(PipelineTest, BlockingSubmitWaitsForRoomInsteadOfBeingRefused) {
  SchedulerConfig c = Config(Policy::kContinuous, 1);
  c.queue_capacity_requests = 1;
  Harness h(c);
  h.Submit(0);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  h.Submit(1);  // the queue is full now
  uint64_t blocked_id = 0;
  std::thread producer([&] {
    SubmitRequest r;
    r.image.decoded = TaggedImage(2);
    blocked_id = h.pipeline->Submit(std::move(r), nullptr, SubmitMode::kBlock).id;
  });
  // The producer is inside Submit (counted) but cannot be admitted while the queue is full.
  while (h.pipeline->Stats().submitted < 3) std::this_thread::yield();
  EXPECT_EQ(h.queued(), 1);
  h.engine().Open();  // batches drain the queue; the producer gets its room
  producer.join();
  EXPECT_EQ(h.recorder.WaitFor(blocked_id).outcome, Outcome::kDone);
  EXPECT_EQ(h.pipeline->Stats().count(Outcome::kRejectedQueueFull), 0);
}

TEST(PipelineTest, CancelEndsAQueuedRequestButNotARunningOne) {
  Harness h(Config(Policy::kContinuous, 1));
  const uint64_t running = h.Submit(0);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  const uint64_t queued = h.Submit(1);
  EXPECT_TRUE(h.pipeline->Cancel(queued));
  EXPECT_EQ(h.recorder.WaitFor(queued).outcome, Outcome::kCancelled);
  EXPECT_FALSE(h.pipeline->Cancel(queued));   // already ended
  EXPECT_FALSE(h.pipeline->Cancel(running));  // too late
  EXPECT_FALSE(h.pipeline->Cancel(12345));    // unknown
  h.engine().Release();
  EXPECT_EQ(h.recorder.WaitFor(running).outcome, Outcome::kDone);
  EXPECT_FALSE(h.recorder.EverRan(queued));
}

TEST(PipelineTest, NewerFrameSupersedesTheQueuedOneOfItsStream) {
  Harness h(Config(Policy::kContinuous, 4));
  h.Submit(0);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  const uint64_t f1 = h.Submit(1, Priority::kStream, "cam", Duration::zero(), true);
  const uint64_t other = h.Submit(2, Priority::kStream, "cam2", Duration::zero(), true);
  const uint64_t f2 = h.Submit(3, Priority::kStream, "cam", Duration::zero(), true);
  const RequestResult r = h.recorder.WaitFor(f1);
  EXPECT_EQ(r.outcome, Outcome::kSuperseded);
  h.Finish(h.engine());
  h.engine().WaitForCalls(2);
  EXPECT_EQ(h.recorder.batches()[1], Ids({other, f2}));
}

TEST(PipelineTest, ShutdownDrainsAcceptedWork) {
  Harness h(Config(Policy::kDynamic, 8));  // dynamic would hold these for max_delay
  std::vector<uint64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(h.Submit(i));
  EXPECT_EQ(h.queued(), 5);
  h.engine().Open();
  h.pipeline->Shutdown(ShutdownMode::kDrain);  // no time passes: draining flushes the queue
  for (uint64_t id : ids) EXPECT_EQ(h.recorder.WaitFor(id).outcome, Outcome::kDone);
  const RequestResult late = [&] {
    const uint64_t id = h.Submit(9);
    return h.recorder.WaitFor(id);
  }();
  EXPECT_EQ(late.outcome, Outcome::kCancelled);
}

TEST(PipelineTest, ShutdownWithCancelEndsQueuedWorkAsCancelled) {
  Harness h(Config(Policy::kContinuous, 1));
  const uint64_t running = h.Submit(0);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  std::vector<uint64_t> queued;
  for (int i = 0; i < 3; ++i) queued.push_back(h.Submit(i + 1));
  std::thread stopper([&] { h.pipeline->Shutdown(ShutdownMode::kCancel); });
  for (uint64_t id : queued) EXPECT_EQ(h.recorder.WaitFor(id).outcome, Outcome::kCancelled);
  h.engine().Release();  // the running batch still finishes
  stopper.join();
  EXPECT_EQ(h.recorder.WaitFor(running).outcome, Outcome::kDone);
  const PipelineStats s = h.pipeline->Stats();
  EXPECT_EQ(s.count(Outcome::kCancelled), 3);
  EXPECT_EQ(s.ended(), 4);
}

TEST(PipelineTest, EngineFailureFailsOnlyItsBatch) {
  Harness h(Config(Policy::kContinuous, 2));
  h.engine().FailCall(1);
  const uint64_t a = h.Submit(0);
  h.time.Advance(milliseconds(5));
  h.engine().WaitForCalls(1);
  const uint64_t b = h.Submit(1), c = h.Submit(2), d = h.Submit(3), e = h.Submit(4);
  h.engine().Open();
  h.recorder.WaitForResults(5);
  EXPECT_EQ(h.recorder.WaitFor(a).outcome, Outcome::kDone);
  const RequestResult failed = h.recorder.WaitFor(b);
  EXPECT_EQ(failed.outcome, Outcome::kFailed);
  EXPECT_NE(failed.status.message().find("fake engine failure"), std::string::npos);
  EXPECT_EQ(h.recorder.WaitFor(c).outcome, Outcome::kFailed);
  EXPECT_EQ(h.recorder.WaitFor(d).outcome, Outcome::kDone);
  EXPECT_EQ(h.recorder.WaitFor(e).outcome, Outcome::kDone);
  const PipelineStats s = h.pipeline->Stats();
  EXPECT_EQ(s.failed_batches, 1);
  EXPECT_EQ(s.batches, 3);
}

TEST(PipelineTest, UndecodableInputIsRejectedWithTheDecodersMessage) {
  Harness h(Config(Policy::kContinuous));
  SubmitRequest r;
  r.image.bytes = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  const uint64_t id = h.pipeline->Submit(std::move(r), nullptr).id;
  const RequestResult result = h.recorder.WaitFor(id);
  EXPECT_EQ(result.outcome, Outcome::kRejectedBadInput);
  EXPECT_EQ(result.status.code(), StatusCode::kUnsupported) << result.status.ToString();
  EXPECT_FALSE(result.status.message().empty());
}

TEST(PipelineTest, ResultsCarryFacesMappedToTheOriginalAndTimings) {
  Harness h(Config(Policy::kContinuous, 4));
  SubmitRequest r;
  r.image.decoded = TaggedImage(200, 64, 32);  // letterboxed 4x down into the 16x16 canvas
  const uint64_t id = h.pipeline->Submit(std::move(r), nullptr).id;
  h.time.Advance(milliseconds(5));  // queued 5 ms
  h.engine().WaitForCalls(1);
  h.Finish(h.engine(), milliseconds(30));  // a 30 ms forward pass
  const RequestResult result = h.recorder.WaitFor(id);
  ASSERT_EQ(result.outcome, Outcome::kDone);
  EXPECT_EQ(result.result.width, 64);
  EXPECT_EQ(result.result.height, 32);
  ASSERT_EQ(result.result.faces.size(), 1u);
  EXPECT_FLOAT_EQ(result.result.faces[0].score, 200 / 255.f);  // row 0 was this canvas
  EXPECT_FLOAT_EQ(result.result.faces[0].x2, 64);
  EXPECT_FLOAT_EQ(result.result.faces[0].y2, 32);
  EXPECT_DOUBLE_EQ(result.result.timing.queue_ms, 5.0);
  EXPECT_DOUBLE_EQ(result.result.timing.inference_ms, 30.0);
  EXPECT_EQ(result.result.timing.batch_size, 1);
  EXPECT_DOUBLE_EQ(result.total_ms, 35.0);
}

TEST(PipelineTest, RowsMapBackToTheirRequests) {
  Harness h(Config(Policy::kContinuous, 8));
  std::map<uint64_t, int> tag_of;
  for (int tag = 10; tag < 16; ++tag) tag_of[h.Submit(tag)] = tag;
  h.time.Advance(milliseconds(5));
  h.engine().Open();
  h.recorder.WaitForResults(6);
  for (const auto& [id, tag] : tag_of) {
    const RequestResult r = h.recorder.WaitFor(id);
    ASSERT_EQ(r.result.faces.size(), 1u);
    EXPECT_FLOAT_EQ(r.result.faces[0].score, tag / 255.f) << "request " << id;
    EXPECT_EQ(r.result.timing.batch_size, 6);
  }
}

// A face stage that records the canvas it was given (its first pixel: the request's tag) and
// marks each face with a point at it; it fails for tag 7.
class RecordingStage final : public FaceStage {
 public:
  Status Apply(std::span<const uint8_t> canvas, const image::Letterbox& letterbox,
               std::vector<Detection>& faces) const override {
    const int tag = canvas.empty() ? -1 : canvas[0];
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(tag);
      canvas_bytes_ = canvas.size();
      canvas_width_ = letterbox.canvas_width;
    }
    if (tag == 7) return Internal("stage failed on tag 7");
    for (Detection& f : faces) f.landmarks = {Point{static_cast<float>(tag), 0}};
    return Status::Ok();
  }
  std::vector<int> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  size_t canvas_bytes() const { return canvas_bytes_; }
  int canvas_width() const { return canvas_width_; }

 private:
  mutable std::mutex mu_;
  mutable std::vector<int> seen_;
  mutable size_t canvas_bytes_ = 0;
  mutable int canvas_width_ = 0;
};

// The face stage runs after decoding on the request's own canvas (held past the forward pass),
// its points reach the answer, a failure ends only its request (as failed, with the stage's
// message), and the held canvases still return to the pool: a second wave allocates none.
TEST(PipelineTest, TheFaceStageReadsEachRequestsCanvasBeforeItsAnswer) {
  RecordingStage stage;
  Harness h(Config(Policy::kContinuous, 4), 1, {}, &stage);
  std::map<uint64_t, int> tag_of;
  for (int tag = 5; tag < 9; ++tag) tag_of[h.Submit(tag)] = tag;
  h.engine().Release(1);
  h.recorder.WaitForResults(4);
  for (const auto& [id, tag] : tag_of) {
    const RequestResult r = h.recorder.WaitFor(id);
    if (tag == 7) {
      EXPECT_EQ(r.outcome, Outcome::kFailed);
      EXPECT_EQ(r.status.message(), "stage failed on tag 7");
      continue;
    }
    ASSERT_EQ(r.outcome, Outcome::kDone) << tag;
    ASSERT_EQ(r.result.faces.size(), 1u);
    ASSERT_EQ(r.result.faces[0].landmarks.size(), 1u);
    EXPECT_EQ(r.result.faces[0].landmarks[0].x, tag) << "the stage read another request's canvas";
  }
  std::vector<int> seen = stage.seen();
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{5, 6, 7, 8}));
  EXPECT_EQ(stage.canvas_width(), 16);
  EXPECT_EQ(stage.canvas_bytes(), 16u * 16 * 3);
  const int64_t allocated = h.pipeline->Stats().canvas_allocations;
  for (int tag = 10; tag < 14; ++tag) h.Submit(tag);
  h.engine().Release(1);
  h.recorder.WaitForResults(8);
  EXPECT_EQ(h.pipeline->Stats().canvas_allocations, allocated);
}

// Wave `w` (0, 1, ...) of 20 requests: it holds all its 20 canvases at once (the engine is gated
// until the wave is queued), then runs as 5 full batches of 4.
void RunWave(Harness& h, int w) {
  for (int i = 0; i < 20; ++i) h.Submit(i);
  h.engine().Release(5);
  h.recorder.WaitForResults(20 * (w + 1));
}

// Input buffers are planned and reused: after the first wave has warmed the canvas pool, later
// waves of the same shape allocate no canvas at all.
TEST(PipelineTest, SteadyStateAllocatesNoCanvasBuffers) {
  Harness h(Config(Policy::kContinuous, 4));
  RunWave(h, 0);
  EXPECT_EQ(h.pipeline->Stats().canvas_allocations, 20);
  for (int w = 1; w <= 5; ++w) RunWave(h, w);
  const PipelineStats s = h.pipeline->Stats();
  EXPECT_EQ(s.canvas_allocations, 20);
  EXPECT_EQ(s.canvas_acquisitions, 120);
  EXPECT_EQ(s.batches, 30);
}

// An idle pipeline gives back what a burst left in the canvas pool beyond its batches' needs
// (max batch 4 × (1 instance + 1) canvases); the next burst allocates the difference again.
TEST(PipelineTest, ReleaseIdleMemoryKeepsOnlyWhatTheBatchesNeed) {
  Harness h(Config(Policy::kContinuous, 4));
  RunWave(h, 0);
  constexpr int64_t kCanvasBytes = 16 * 16 * 3;
  EXPECT_EQ(h.pipeline->ReleaseIdleMemory(), (20 - 8) * kCanvasBytes);
  EXPECT_EQ(h.pipeline->ReleaseIdleMemory(), 0);
  RunWave(h, 1);
  EXPECT_EQ(h.pipeline->Stats().canvas_allocations, 20 + 12);
}

TEST(PipelineTest, StatsAddUp) {
  Harness h(Config(Policy::kContinuous, 4));
  h.engine().Open();
  for (int i = 0; i < 10; ++i) h.Submit(i);
  h.time.Advance(milliseconds(5));
  h.recorder.WaitForResults(10);
  const PipelineStats s = h.pipeline->Stats();
  EXPECT_EQ(s.submitted, 10);
  EXPECT_EQ(s.ended(), 10);
  EXPECT_EQ(s.count(Outcome::kDone), 10);
  EXPECT_EQ(s.batched_requests, 10);
  int64_t from_histogram = 0;
  for (size_t n = 0; n < s.batch_size_counts.size(); ++n) {
    from_histogram += static_cast<int64_t>(n) * s.batch_size_counts[n];
  }
  EXPECT_EQ(from_histogram, 10);
  EXPECT_EQ(s.preprocessing + s.queue.total.requests + s.running, 0);
}

TEST(PipelineTest, CreateRefusesBadOptions) {
  FakeEngine engine;
  PipelineOptions options;
  EXPECT_FALSE(Pipeline::Create({}, &engine, options).ok());
  const auto no_decoder = Pipeline::Create({&engine}, nullptr, options);
  ASSERT_FALSE(no_decoder.ok());
  EXPECT_NE(no_decoder.status().message().find("decoder"), std::string::npos);
  options.scheduler.max_batch_size = 0;
  const auto bad = Pipeline::Create({&engine}, &engine, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("max_batch_size"), std::string::npos);
}

}  // namespace
}  // namespace mogserve::pipeline::testing

namespace mogserve::pipeline::testing {
namespace {

// The one request path (detect_call.h): a call's answers come back once, all of them, in the
// images' order, whatever order they end in; an image refused at decode does not hold up or
// reorder the rest.
TEST(DetectCallTest, SubmitAllAnswersOnceInTheImagesOrder) {
  Harness h(Config(Policy::kContinuous, 8));
  DetectCall call;
  call.images.resize(3);
  call.images[0].decoded = TaggedImage(10);
  call.images[1].bytes = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  call.images[2].decoded = TaggedImage(20);
  call.client = "one-call";
  std::promise<std::vector<RequestResult>> answered;
  std::atomic<int> calls{0};
  SubmitAll(*h.pipeline, std::move(call), [&](std::vector<RequestResult> results) {
    ++calls;
    answered.set_value(std::move(results));
  });
  h.time.Advance(milliseconds(5));
  h.engine().Open();
  const std::vector<RequestResult> results = answered.get_future().get();
  EXPECT_EQ(calls.load(), 1);
  ASSERT_EQ(results.size(), 3u);
  ASSERT_EQ(results[0].outcome, Outcome::kDone);
  EXPECT_FLOAT_EQ(results[0].result.faces.at(0).score, 10 / 255.f);
  EXPECT_EQ(results[1].outcome, Outcome::kRejectedBadInput);
  ASSERT_EQ(results[2].outcome, Outcome::kDone);
  EXPECT_FLOAT_EQ(results[2].result.faces.at(0).score, 20 / 255.f);

  bool empty_answered = false;
  SubmitAll(*h.pipeline, DetectCall{},
            [&](std::vector<RequestResult> r) { empty_answered = r.empty(); });
  EXPECT_TRUE(empty_answered);  // a call of no images is answered at once
}

// The request's options reach the pipeline request: priority names, timeouts, detect settings
// over the pipeline's defaults.
TEST(DetectCallTest, MakeSubmitRequestAppliesTheRequestsOptions) {
  DetectOptions defaults;
  defaults.max_faces = 7;
  RequestOptions options;
  options.priority = "bulk";
  options.timeout_ms = 250;
  options.min_face_size = 12;
  const SubmitRequest s = MakeSubmitRequest(ImageInput{}, options, defaults);
  EXPECT_EQ(s.priority, Priority::kBulk);
  EXPECT_EQ(s.timeout, milliseconds(250));
  ASSERT_TRUE(s.detect.has_value());
  EXPECT_EQ(s.detect->max_faces, 7);
  EXPECT_EQ(s.detect->min_face_size, 12);
  EXPECT_EQ(MakeSubmitRequest(ImageInput{}, RequestOptions{}, defaults).priority, Priority::kApi);
}

}  // namespace
}  // namespace mogserve::pipeline::testing
