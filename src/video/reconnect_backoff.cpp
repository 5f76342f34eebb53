#include "video/reconnect_backoff.h"

#include <algorithm>

namespace mogserve::video {

ReconnectBackoff::ReconnectBackoff(BackoffOptions options, uint64_t seed)
    : options_(options), rng_(seed), base_ms_(static_cast<double>(options.initial.count())) {}

std::chrono::milliseconds ReconnectBackoff::Next(std::chrono::milliseconds ran_for) {
  const double initial = static_cast<double>(options_.initial.count());
  if (ran_for >= options_.reset_after) {
    base_ms_ = initial;
    attempts_ = 0;
  }
  const double base = base_ms_;
  base_ms_ = std::min(base_ms_ * options_.factor, static_cast<double>(options_.max.count()));
  ++attempts_;
  std::uniform_real_distribution<double> spread(1 - options_.jitter, 1 + options_.jitter);
  return std::chrono::milliseconds(static_cast<int64_t>(base * spread(rng_) + 0.5));
}

bool IsRetryable(VideoErrorCode code) {
  switch (code) {
    case VideoErrorCode::kUnreachable:
    case VideoErrorCode::kTimeout:
    case VideoErrorCode::kNotFound:
    case VideoErrorCode::kIoError:
      return true;
    case VideoErrorCode::kBadUrl:
    case VideoErrorCode::kUnauthorized:
    case VideoErrorCode::kNoVideoStream:
    case VideoErrorCode::kUnsupportedCodec:
    case VideoErrorCode::kInvalidData:
    case VideoErrorCode::kCancelled:
      return false;
  }
  return false;
}

}  // namespace mogserve::video
