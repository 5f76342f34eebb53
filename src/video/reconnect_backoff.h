// ReconnectBackoff: how long a live stream waits before it reconnects after losing its source
// (specs/video_streams.md §6): 0.5 s, doubling to 30 s, each delay ±20 % at random so that
// cameras dropped together (a switch reboot) do not all come back in the same instant; back to
// 0.5 s once a connection has held for 30 s. Pure: no clock, no threads; the caller says how
// long the last connection ran. Not thread-safe (one per stream thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

#include "video/video_error.h"

namespace mogserve::video {

struct BackoffOptions {
  std::chrono::milliseconds initial{500};
  double factor = 2;
  std::chrono::milliseconds max{30'000};
  double jitter = 0.2;  // each delay is base × [1 − jitter, 1 + jitter]
  std::chrono::milliseconds reset_after{30'000};  // a connection that ran this long resets
};

class ReconnectBackoff {
 public:
  explicit ReconnectBackoff(BackoffOptions options = {}, uint64_t seed = std::random_device{}());

  // The delay before the next attempt. `ran_for`: how long the connection that was just lost
  // delivered frames (zero when the attempt failed to open).
  std::chrono::milliseconds Next(std::chrono::milliseconds ran_for);
  // Attempts since the last reset.
  int attempts() const { return attempts_; }

 private:
  BackoffOptions options_;
  std::mt19937_64 rng_;
  double base_ms_;
  int attempts_ = 0;
};

// Whether a live source that stopped with `code` is retried: a camera that reboots is
// unreachable, times out or answers 404 for a while, and a dropped connection is an I/O error.
// Unauthorized (retries lock camera accounts), a codec or container we cannot read, and a bad
// URL will not get better by themselves: the stream fails and waits for a restart.
bool IsRetryable(VideoErrorCode code);

}  // namespace mogserve::video
