// StreamWindow: the last 10 s of one stream, for its live stats (specs/video_streams.md §5):
// how many frames per second reached each stage, and the latency percentiles of the frames
// detected. Counts are kept in one-second buckets and latencies as samples (at most
// kMaxLatencySamples), so memory is fixed whatever the frame rate. Pure: the caller passes the
// time. Not thread-safe (the stream guards it).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace mogserve::video {

enum class StreamEvent {
  kReceived,        // video packets read
  kDecoded,         // frames through the decoder stage: undamaged ones out, or dropped to catch up
  kDroppedCatchup,  // packets dropped undecoded while reading lagged the source
  kCorrupt,         // damaged frames or packets
  kSampledOut,      // left out by detect_fps
  kDetected,
  kSuperseded,
  kExpired,
  kFailed,
  kCount,
};

struct LatencyPercentiles {
  double p50_ms = 0;
  double p95_ms = 0;
  double p99_ms = 0;
  int64_t samples = 0;  // 0: no frame detected within the window (the percentiles are 0)
};

class StreamWindow {
 public:
  static constexpr size_t kMaxLatencySamples = 2048;

  StreamWindow(SteadyClock::time_point start, std::chrono::seconds span = std::chrono::seconds(10));

  void Add(StreamEvent event, SteadyClock::time_point now, int64_t n = 1);
  void AddLatency(double latency_ms, SteadyClock::time_point now);

  // Events per second over the last span (over the time since start while younger, at least 1 s).
  double PerSecond(StreamEvent event, SteadyClock::time_point now) const;
  // Nearest-rank percentiles of the latencies added within the last span.
  LatencyPercentiles Latency(SteadyClock::time_point now) const;

 private:
  using Counts = std::array<int64_t, static_cast<size_t>(StreamEvent::kCount)>;
  struct Bucket {
    int64_t second = -1;  // seconds since start
    Counts counts{};
  };
  int64_t SecondOf(SteadyClock::time_point t) const;

  SteadyClock::time_point start_;
  std::chrono::seconds span_;
  std::vector<Bucket> buckets_;  // a ring indexed by second % size
  mutable std::deque<std::pair<SteadyClock::time_point, double>> latencies_;
};

}  // namespace mogserve::video
