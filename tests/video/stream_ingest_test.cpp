#include "video/stream_ingest.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "clips.h"
#include "loopback.h"
#include "pipeline/fake_engine.h"

namespace mogserve::video {
namespace {

using pipeline::testing::FakeEngine;
using std::chrono::milliseconds;
using testing::ClipPath;
using testing::kClipFrames;

pipeline::PipelineOptions Options() {
  pipeline::PipelineOptions o;
  o.buckets = pipeline::ShapeBuckets::FixedSquare(64);
  o.scheduler.max_batch_size = 4;
  o.scheduler.queue_capacity_requests = 8;
  o.scheduler.default_timeout = pipeline::Duration::zero();
  o.preprocess_threads = 0;
  return o;
}

IngestOptions Ingest(const std::string& url) {
  IngestOptions o;
  o.id = "cam";
  o.source.url = url;
  return o;
}

// Collects the results a stream delivers.
struct Results {
  std::mutex mu;
  std::vector<FrameResult> all;
  StreamIngest::ResultCallback callback() {
    return [this](const FrameResult& r) {
      std::lock_guard<std::mutex> lock(mu);
      all.push_back(r);
    };
  }
};

void ExpectIdentities(const IngestCounters& c) {
  EXPECT_EQ(c.decoded, c.dropped_catchup + c.sampled_out + c.submitted);
  EXPECT_EQ(c.submitted, c.detected + c.superseded + c.expired + c.failed);
}

TEST(StreamIngest, FileInBulkDetectsEveryFrameInOrder) {
  FakeEngine engine(/*open=*/true);
  auto pipeline = pipeline::Pipeline::Create({&engine}, &engine, Options());
  ASSERT_TRUE(pipeline.ok());
  Results results;
  StreamIngest stream(**pipeline, Ingest(ClipPath("clip.mp4")), results.callback());
  EXPECT_FALSE(stream.paced());
  EXPECT_EQ(stream.Wait(), std::nullopt);
  ASSERT_EQ(results.all.size(), static_cast<size_t>(kClipFrames));
  for (int i = 0; i < kClipFrames; ++i) {
    const FrameResult& r = results.all[i];
    ASSERT_EQ(r.seq, i);
    ASSERT_EQ(r.frame.index, i);
    ASSERT_EQ(r.skipped, 0);
    EXPECT_EQ(r.stream, "cam");
    // The fake engine's one face spans the canvas content, mapped back to source pixels.
    ASSERT_EQ(r.result.result.faces.size(), 1u);
    EXPECT_NEAR(r.result.result.faces[0].x2, 1280, 1);
    EXPECT_NEAR(r.result.result.faces[0].y2, 720, 1);
    EXPECT_GE(r.latency_ms, r.result.result.timing.inference_ms);
  }
  const IngestCounters c = stream.counters();
  EXPECT_EQ(c.decoded, kClipFrames);
  EXPECT_EQ(c.detected, kClipFrames);
  ExpectIdentities(c);
  // Several frames of the one stream shared batches: bulk frames are not latest_only.
  EXPECT_GT((*pipeline)->Stats().mean_batch_size(), 1.0);
}

TEST(StreamIngest, DetectFpsSamplesByPresentationTime) {
  FakeEngine engine(/*open=*/true);
  auto pipeline = pipeline::Pipeline::Create({&engine}, &engine, Options());
  ASSERT_TRUE(pipeline.ok());
  Results results;
  IngestOptions o = Ingest(ClipPath("clip.mp4"));
  o.detect_fps = 5;
  StreamIngest stream(**pipeline, o, results.callback());
  EXPECT_EQ(stream.Wait(), std::nullopt);
  ASSERT_EQ(results.all.size(), 50u);
  for (size_t i = 0; i < results.all.size(); ++i) {
    EXPECT_EQ(results.all[i].frame.index, static_cast<int64_t>(5 * i));
    EXPECT_EQ(results.all[i].skipped, i == 0 ? 0 : 4);
  }
  const IngestCounters c = stream.counters();
  EXPECT_EQ(c.sampled_out, 200);
  ExpectIdentities(c);
}

// every_frame: the frames detect_fps leaves out come too, each in its place, marked undetected,
// with their previews; with tracking, every face delivered (the fake engine's one whole-picture
// box, scored by the picture) has its track, and the tracker's stats are in the status.
TEST(StreamIngest, EveryFrameDeliversTheSampledOutFramesInTheirPlace) {
  FakeEngine engine(/*open=*/true);
  auto pipeline = pipeline::Pipeline::Create({&engine}, &engine, Options());
  ASSERT_TRUE(pipeline.ok());
  Results results;
  IngestOptions o = Ingest(ClipPath("clip.mp4"));
  o.detect_fps = 5;
  o.every_frame = true;
  o.track = track::TrackerOptions{};
  o.preview_max_side_px = 64;
  StreamIngest stream(**pipeline, o, results.callback());
  EXPECT_EQ(stream.Wait(), std::nullopt);
  ASSERT_EQ(results.all.size(), static_cast<size_t>(kClipFrames));
  std::set<int64_t> ids;
  for (size_t i = 0; i < results.all.size(); ++i) {
    const FrameResult& r = results.all[i];
    SCOPED_TRACE("frame " + std::to_string(i));
    for (const Detection& face : r.result.result.faces) {
      EXPECT_GT(face.track_id, 0);
      if (!r.detected) {
        EXPECT_TRUE(face.tracked);
      }
      ids.insert(face.track_id);
    }
    EXPECT_EQ(r.frame.index, static_cast<int64_t>(i));
    EXPECT_EQ(r.seq, static_cast<int64_t>(i));
    EXPECT_EQ(r.detected, i % 5 == 0);
    EXPECT_EQ(r.skipped, 0);
    EXPECT_EQ(r.result.result.width, testing::kClipWidth);
    EXPECT_EQ(r.result.result.height, testing::kClipHeight);
    ASSERT_NE(r.preview, nullptr);
    EXPECT_EQ(r.preview->width, 64);
  }
  const IngestCounters c = stream.counters();
  EXPECT_EQ(c.sampled_out, 200);
  EXPECT_EQ(c.submitted, 50);
  ExpectIdentities(c);
  const IngestStatus st = stream.status();
  ASSERT_TRUE(st.tracks.has_value());
  EXPECT_EQ(st.tracks->started, static_cast<int64_t>(ids.size()));
}

TEST(StreamIngest, RealtimeFramesAreSupersededBehindASlowEngine) {
  FakeEngine engine(/*open=*/false);  // holds every batch until released
  auto pipeline = pipeline::Pipeline::Create({&engine}, &engine, Options());
  ASSERT_TRUE(pipeline.ok());
  Results results;
  IngestOptions o = Ingest(ClipPath("clip.mp4"));
  o.realtime = true;
  o.frame_timeout = milliseconds(60'000);
  StreamIngest stream(**pipeline, o, results.callback());
  EXPECT_TRUE(stream.paced());
  engine.WaitForCalls(1);
  // While the engine is stuck on the first frame, newer frames replace each other in the queue.
  while (stream.counters().superseded < 5) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ((*pipeline)->Stats().queue.total.requests, 1);  // at most one queued frame
  engine.Open();
  stream.Stop();
  EXPECT_EQ(stream.Wait(), std::nullopt);
  const IngestCounters c = stream.counters();
  ExpectIdentities(c);
  EXPECT_GE(c.superseded, 5);
  EXPECT_EQ(c.expired, 0);
  // Every frame not detected is counted in the `skipped` of the next result.
  int64_t accounted = 0;
  for (size_t i = 0; i < results.all.size(); ++i) {
    if (i > 0) {
      EXPECT_GT(results.all[i].frame.index, results.all[i - 1].frame.index);
    }
    accounted += 1 + results.all[i].skipped;
  }
  EXPECT_EQ(static_cast<int64_t>(results.all.size()), c.detected);
  EXPECT_LE(accounted, c.decoded);
  EXPECT_GE(accounted, c.decoded - c.superseded);
}

// specs/video_streams.md §6: full-size previews (detect-video --save-frames) are bounded per
// stream. A file read in bulk behind a stuck engine would queue 8 frames (the queue's capacity)
// of 2.8 MB each; with an 8.5 MB budget the reader stops at 3 and waits for results.
TEST(StreamIngest, PreviewsInFlightStayWithinTheirBudget) {
  FakeEngine engine(/*open=*/false);
  auto pipeline = pipeline::Pipeline::Create({&engine}, &engine, Options());
  ASSERT_TRUE(pipeline.ok());
  Results results;
  IngestOptions o = Ingest(ClipPath("clip.mp4"));
  o.preview_max_side_px = 1 << 15;  // the source's size: 1280×720×3 bytes
  o.preview_budget_bytes = 3 * 1280 * 720 * 3 + 1000;
  StreamIngest stream(**pipeline, o, results.callback());
  engine.WaitForCalls(1);
  std::this_thread::sleep_for(milliseconds(300));  // time to read on, were it not held
  EXPECT_EQ(stream.counters().submitted, 3);
  engine.Open();
  EXPECT_EQ(stream.Wait(), std::nullopt);
  ASSERT_EQ(results.all.size(), static_cast<size_t>(kClipFrames));
  for (const FrameResult& r : results.all) {
    ASSERT_NE(r.preview, nullptr) << r.seq;  // a bulk reader waits: every frame keeps its own
    EXPECT_EQ(r.preview->width, 1280);
  }
  ExpectIdentities(stream.counters());
}

TEST(StreamIngest, StopEndsAStreamBlockedOnASilentSource) {
  FakeEngine engine(/*open=*/true);
  auto pipeline = pipeline::Pipeline::Create({&engine}, &engine, Options());
  ASSERT_TRUE(pipeline.ok());
  testing::SilentListener silent;
  IngestOptions o = Ingest("tcp://127.0.0.1:" + std::to_string(silent.port()));
  o.source.timeouts = {milliseconds(60'000), milliseconds(60'000)};
  Results results;
  StreamIngest stream(**pipeline, o, results.callback());
  std::this_thread::sleep_for(milliseconds(200));
  const auto start = std::chrono::steady_clock::now();
  stream.Stop();
  EXPECT_EQ(stream.Wait(), std::nullopt);  // stopped, not failed
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
  EXPECT_TRUE(stream.finished());
}

TEST(StreamIngest, AFailingSourceReportsItsError) {
  FakeEngine engine(/*open=*/true);
  auto pipeline = pipeline::Pipeline::Create({&engine}, &engine, Options());
  ASSERT_TRUE(pipeline.ok());
  Results results;
  StreamIngest stream(**pipeline, Ingest(ClipPath("clip_mpeg4.mp4")), results.callback());
  std::optional<VideoError> error = stream.Wait();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, VideoErrorCode::kUnsupportedCodec);
  EXPECT_TRUE(results.all.empty());
}

}  // namespace
}  // namespace mogserve::video
