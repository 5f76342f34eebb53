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
  auto pipeline = pipeline::Pipeline::Create({&engine}, Options());
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

}  // namespace
}  // namespace mogserve::video
