// StreamEvents' WebSocket subscribers (GET /v1/streams/ws) with a real stream registry (the
// test clip played like a camera through the fake engine) and a scripted peer that says how
// far behind its client reads: frame events latest-only with `dropped` counted, the ids
// filter, the watcher cap shared with the streamed answers.
#ifdef MOGSERVE_WITH_VIDEO

#include "server/stream_events.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "pipeline/fake_engine.h"
#include "video/stream_registry.h"

namespace mogserve::server {
namespace {

using std::chrono::milliseconds;

std::string ClipPath(const std::string& name) {
  return std::string(MOGSERVE_TEST_CLIP_DIR) + "/" + name;
}

// Records the messages; unsent() is what the test sets (a client that stopped reading).
class ScriptedPeer final : public http::WebSocketPeer {
 public:
  bool Send(std::string message, bool) override {
    std::lock_guard<std::mutex> lock(mu_);
    messages_.push_back(nlohmann::json::parse(message));
    return !closed_;
  }
  void Resume() override {}
  void Close() override { closed_ = true; }
  bool open() const override { return !closed_; }
  size_t unsent() const override { return unsent_; }

  std::vector<nlohmann::json> Events(const std::string& event) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& m : messages_) {
      if (m["event"] == event) out.push_back(m);
    }
    return out;
  }
  std::atomic<size_t> unsent_{0};
  std::atomic<bool> closed_{false};

 private:
  mutable std::mutex mu_;
  std::vector<nlohmann::json> messages_;  // guarded by mu_
};

// An SSE answer that takes everything.
class OpenStream final : public http::ResponseStream {
 public:
  bool Write(std::string) override { return open_; }
  void End() override { open_ = false; }
  bool open() const override { return open_; }
  int64_t unsent_bytes() const override { return 0; }

 private:
  std::atomic<bool> open_{true};
};

// Waits until `done` holds (20 s at most).
bool WaitUntil(const std::function<bool()>& done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

TEST(StreamEvents, ASlowWebSocketGetsTheLatestFrameAndCountsTheDropped) {
  pipeline::testing::FakeEngine engine(/*open=*/true);
  pipeline::PipelineOptions o;
  o.buckets = pipeline::ShapeBuckets::FixedSquare(64);
  o.scheduler.default_timeout = pipeline::Duration::zero();
  o.preprocess_threads = 0;
  auto pipeline = pipeline::Pipeline::Create({&engine}, &engine, o);
  ASSERT_TRUE(pipeline.ok());
  video::StreamRegistry registry(**pipeline, video::IngestOptions{}, /*max_streams=*/2);
  StreamEvents events(registry, /*max_subscribers=*/3);
  ASSERT_TRUE(registry.Add({"cam", ClipPath("clip.mp4"), 0}).ok());  // every frame, 25 fps

  auto fast = std::make_shared<ScriptedPeer>();
  auto slow = std::make_shared<ScriptedPeer>();
  auto elsewhere = std::make_shared<ScriptedPeer>();
  slow->unsent_ = StreamEvents::kWebSocketFrameWindow;  // its client reads nothing for now
  ASSERT_NE(events.SubscribeWebSocket(fast, {}), nullptr);
  ASSERT_NE(events.SubscribeWebSocket(slow, {"cam"}), nullptr);
  ASSERT_NE(events.SubscribeWebSocket(elsewhere, {"other"}), nullptr);
  // The cap counts every kind of watcher.
  EXPECT_EQ(events.SubscribeWebSocket(std::make_shared<ScriptedPeer>(), {}), nullptr);
  EXPECT_FALSE(events.Subscribe(std::make_shared<OpenStream>(), {}));
  EXPECT_EQ(events.subscribers(), 3);

  // A second of frames: each to the reader that keeps up, none to the slow one.
  ASSERT_TRUE(WaitUntil([&] { return fast->Events("frame").size() >= 25; }));
  EXPECT_TRUE(slow->Events("frame").empty());
  ASSERT_FALSE(slow->Events("state").empty());  // other events are not held back
  EXPECT_EQ(slow->Events("state")[0]["data"]["stream"], "cam");
  int previous = -1;
  for (const nlohmann::json& m : fast->Events("frame")) {
    EXPECT_EQ(m["dropped"], 0) << m;
    EXPECT_EQ(m["data"]["stream"], "cam");
    EXPECT_GT(m["data"]["frame"].get<int>(), previous);
    previous = m["data"]["frame"];
  }

  // The slow client catches up: it gets the newest frame event, with the ones it missed
  // counted (every frame detected in between), and the next ones as they come.
  const int64_t newest_before = fast->Events("frame").back()["data"]["frame"];
  slow->unsent_ = 0;
  ASSERT_TRUE(WaitUntil([&] { return slow->Events("frame").size() >= 3; }));
  const std::vector<nlohmann::json> caught_up = slow->Events("frame");
  const nlohmann::json& first = caught_up[0];
  EXPECT_GE(first["data"]["frame"].get<int64_t>(), newest_before) << first;
  EXPECT_GE(first["dropped"].get<int64_t>(), 20) << first;
  int64_t missed = 0;  // the frame events before it, which the fast reader got each
  for (const nlohmann::json& m : fast->Events("frame"))
    missed += m["data"]["frame"] < first["data"]["frame"];
  EXPECT_EQ(first["dropped"].get<int64_t>(), missed) << first;
  EXPECT_EQ(caught_up[1]["dropped"], 0) << caught_up[1];

  // Another stream's watcher saw none of it.
  EXPECT_TRUE(elsewhere->Events("frame").empty());
  EXPECT_TRUE(elsewhere->Events("state").empty());

  // A closed socket leaves its place (the next tick).
  elsewhere->closed_ = true;
  ASSERT_TRUE(WaitUntil([&] { return events.subscribers() == 2; }));
  events.Stop();
  EXPECT_FALSE(fast->open());
  EXPECT_FALSE(slow->open());
}

}  // namespace
}  // namespace mogserve::server

#endif  // MOGSERVE_WITH_VIDEO
