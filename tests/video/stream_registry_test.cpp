#include "video/stream_registry.h"

#include <gtest/gtest.h>

#include <thread>

#include "clips.h"
#include "loopback.h"
#include "pipeline/fake_engine.h"

namespace mogserve::video {
namespace {

using pipeline::testing::FakeEngine;
using std::chrono::milliseconds;
using testing::ClipPath;

pipeline::PipelineOptions Options() {
  pipeline::PipelineOptions o;
  o.buckets = pipeline::ShapeBuckets::FixedSquare(64);
  o.scheduler.default_timeout = pipeline::Duration::zero();
  o.preprocess_threads = 0;
  return o;
}

// Polls Get(id) until `done` holds (10 s at most).
StreamInfo WaitFor(const StreamRegistry& registry, const std::string& id,
                   const std::function<bool(const StreamInfo&)>& done) {
  StreamInfo info;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    info = *registry.Get(id);
    if (done(info)) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return info;
}

TEST(StreamRegistry, AddsListsAndRemovesStreams) {
  FakeEngine engine(/*open=*/true);
  auto pipeline = pipeline::Pipeline::Create({&engine}, &engine, Options());
  ASSERT_TRUE(pipeline.ok());
  testing::SilentListener silent;
  IngestOptions defaults;
  defaults.source.timeouts = {milliseconds(60'000), milliseconds(60'000)};
  StreamRegistry registry(**pipeline, defaults, /*max_streams=*/3);

  ASSERT_TRUE(registry.Add({"cam", ClipPath("clip.mp4"), 5}).ok());
  ASSERT_TRUE(registry.Add({"quiet", "tcp://127.0.0.1:" + std::to_string(silent.port())}).ok());
  ASSERT_TRUE(registry.Add({"old", ClipPath("clip_mpeg4.mp4")}).ok());
  EXPECT_EQ(registry.Add({"cam", ClipPath("clip.mp4")}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry.Add({"more", ClipPath("clip.mp4")}).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(registry.Add({"bad id", ClipPath("clip.mp4")}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Add({"g", "gopher://x"}).code(), StatusCode::kUnsupported);

  // A file plays like a camera: running, detecting (5 fps), with the identities holding.
  const StreamInfo cam =
      WaitFor(registry, "cam", [](const StreamInfo& s) { return s.counters.detected >= 3; });
  EXPECT_EQ(cam.state, StreamState::kRunning);
  EXPECT_GE(cam.counters.detected, 3);
  EXPECT_EQ(cam.last_faces, 1);  // the fake engine's one face
  EXPECT_EQ(cam.last_frame % 5, 0);
  const StreamInfo old =
      WaitFor(registry, "old", [](const StreamInfo& s) { return s.state == StreamState::kFailed; });
  ASSERT_TRUE(old.error.has_value());
  EXPECT_EQ(old.error->code, VideoErrorCode::kUnsupportedCodec);
  EXPECT_EQ(registry.Get("quiet")->state, StreamState::kConnecting);
  EXPECT_EQ(cam.status.codec, "h264");
  EXPECT_EQ(cam.status.width, 1280);
  EXPECT_EQ(cam.status.reconnects, 0);
  EXPECT_EQ(cam.counters.decoded, cam.counters.sampled_out + cam.counters.submitted);

  std::vector<std::string> ids;
  for (const StreamInfo& s : registry.List()) ids.push_back(s.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"cam", "old", "quiet"}));

  // Removing interrupts the open blocked on the silent source.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(registry.Remove("quiet").ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
  EXPECT_EQ(registry.Get("quiet").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.Remove("quiet").code(), StatusCode::kNotFound);
  EXPECT_TRUE(registry.Add({"again", ClipPath("clip.mp4")}).ok());  // room again
}

// A stream of the registry reconnects after what time mends and fails at once, without
// retrying, on what it does not; restart retries a failed one.
TEST(StreamRegistry, RetriesWhatTimeMendsAndFailsOnWhatItDoesNot) {
  FakeEngine engine(/*open=*/true);
  auto pipeline = pipeline::Pipeline::Create({&engine}, &engine, Options());
  ASSERT_TRUE(pipeline.ok());
  testing::SilentListener silent;
  testing::FixedStatusHttpServer unauthorized("401 Unauthorized");
  testing::FixedStatusHttpServer missing("404 Not Found");
  IngestOptions defaults;
  defaults.source.timeouts = {milliseconds(500), milliseconds(500)};
  defaults.backoff.initial = milliseconds(100);
  StreamRegistry registry(**pipeline, defaults, /*max_streams=*/8);
  const std::string local = "http://127.0.0.1:";
  ASSERT_TRUE(registry.Add({"locked", local + std::to_string(unauthorized.port()) + "/a.ts"}).ok());
  ASSERT_TRUE(registry.Add({"missing", local + std::to_string(missing.port()) + "/nope"}).ok());
  ASSERT_TRUE(registry.Add({"quiet", "tcp://127.0.0.1:" + std::to_string(silent.port())}).ok());
  ASSERT_TRUE(registry.Add({"old", ClipPath("clip_mpeg4.mp4")}).ok());
  ASSERT_TRUE(registry.Add({"mute", ClipPath("audio_only.m4a")}).ok());

  auto failed = [](const StreamInfo& s) { return s.state == StreamState::kFailed; };
  const StreamInfo locked = WaitFor(registry, "locked", failed);
  ASSERT_TRUE(locked.error.has_value());
  EXPECT_EQ(locked.error->code, VideoErrorCode::kUnauthorized) << locked.error->message;
  EXPECT_EQ(WaitFor(registry, "old", failed).error->code, VideoErrorCode::kUnsupportedCodec);
  EXPECT_EQ(WaitFor(registry, "mute", failed).error->code, VideoErrorCode::kNoVideoStream);

  // Retried: reconnecting, the cause kept as last_error, the server asked again and again.
  auto retried = [](const StreamInfo& s) {
    return s.state == StreamState::kReconnecting && s.status.last_error.has_value();
  };
  const StreamInfo gone = WaitFor(registry, "missing", retried);
  ASSERT_TRUE(gone.status.last_error.has_value());
  EXPECT_EQ(gone.status.last_error->code, VideoErrorCode::kNotFound);
  EXPECT_FALSE(gone.error.has_value());
  const StreamInfo quiet = WaitFor(registry, "quiet", retried);
  ASSERT_TRUE(quiet.status.last_error.has_value());
  EXPECT_EQ(quiet.status.last_error->code, VideoErrorCode::kTimeout);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (missing.requests() < 3 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_GE(missing.requests(), 3);
  // Never retried: one request (a camera would lock the account).
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_EQ(unauthorized.requests(), 1);

  // Restart: asked once more, and failed again for the same reason.
  ASSERT_TRUE(registry.Restart("locked").ok());
  const StreamInfo again = WaitFor(registry, "locked", failed);
  EXPECT_EQ(again.error->code, VideoErrorCode::kUnauthorized);
  EXPECT_EQ(unauthorized.requests(), 2);
  EXPECT_EQ(registry.Restart("nope").code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace mogserve::video
