#include "video/stream_window.h"

#include <gtest/gtest.h>

namespace mogserve::video {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(StreamWindow, RatesCoverTheLastTenSeconds) {
  const auto t0 = SteadyClock::now();
  StreamWindow w(t0);
  // 25 frames a second for 30 s, every 5th detected.
  for (int i = 0; i < 750; ++i) {
    const auto t = t0 + milliseconds(40 * i);
    w.Add(StreamEvent::kDecoded, t);
    if (i % 5 == 0) w.Add(StreamEvent::kDetected, t);
  }
  const auto now = t0 + seconds(30);
  EXPECT_NEAR(w.PerSecond(StreamEvent::kDecoded, now), 25, 0.5);
  EXPECT_NEAR(w.PerSecond(StreamEvent::kDetected, now), 5, 0.2);
  EXPECT_EQ(w.PerSecond(StreamEvent::kCorrupt, now), 0);
  // The source stops: the rate falls to zero once ten seconds have passed.
  EXPECT_NEAR(w.PerSecond(StreamEvent::kDecoded, now + seconds(5)), 12.5, 1.5);
  EXPECT_EQ(w.PerSecond(StreamEvent::kDecoded, now + seconds(11)), 0);
}

TEST(StreamWindow, AYoungStreamIsMeasuredOverItsAge) {
  const auto t0 = SteadyClock::now();
  StreamWindow w(t0);
  for (int i = 0; i < 75; ++i) w.Add(StreamEvent::kReceived, t0 + milliseconds(40 * i));
  EXPECT_NEAR(w.PerSecond(StreamEvent::kReceived, t0 + seconds(3)), 25, 0.5);
}

TEST(StreamWindow, LatencyPercentilesOfTheLastTenSeconds) {
  const auto t0 = SteadyClock::now();
  StreamWindow w(t0);
  EXPECT_EQ(w.Latency(t0).samples, 0);
  for (int i = 0; i < 100; ++i) w.AddLatency(1000, t0);  // old: gone from the window
  for (int i = 1; i <= 100; ++i) w.AddLatency(i, t0 + seconds(20));
  const LatencyPercentiles p = w.Latency(t0 + seconds(21));
  EXPECT_EQ(p.samples, 100);
  EXPECT_EQ(p.p50_ms, 50);
  EXPECT_EQ(p.p95_ms, 95);
  EXPECT_EQ(p.p99_ms, 99);
}

TEST(StreamWindow, LatencySamplesAreBounded) {
  const auto t0 = SteadyClock::now();
  StreamWindow w(t0);
  for (size_t i = 0; i < 3 * StreamWindow::kMaxLatencySamples; ++i) w.AddLatency(1, t0);
  EXPECT_EQ(w.Latency(t0).samples, static_cast<int64_t>(StreamWindow::kMaxLatencySamples));
}

}  // namespace
}  // namespace mogserve::video
