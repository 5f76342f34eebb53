#include "video/reconnect_backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace mogserve::video {
namespace {

using std::chrono::milliseconds;

TEST(ReconnectBackoff, DoublesFromHalfASecondToThirtyWithTwentyPercentJitter) {
  ReconnectBackoff backoff({}, /*seed=*/7);
  const double bases[] = {500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000};
  for (double base : bases) {
    const double delay = static_cast<double>(backoff.Next(milliseconds(0)).count());
    EXPECT_GE(delay, base * 0.8 - 1) << base;
    EXPECT_LE(delay, base * 1.2 + 1) << base;
  }
  EXPECT_EQ(backoff.attempts(), 9);
}

TEST(ReconnectBackoff, JitterSpreadsStreamsThatFailTogether) {
  // Eight cameras behind one rebooting switch: their first retries do not coincide.
  std::vector<int64_t> first;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    first.push_back(ReconnectBackoff({}, seed).Next(milliseconds(0)).count());
  }
  std::sort(first.begin(), first.end());
  EXPECT_GT(first.back() - first.front(), 50);
  EXPECT_GT(std::unique(first.begin(), first.end()) - first.begin(), 4);
}

TEST(ReconnectBackoff, AConnectionThatHeldThirtySecondsStartsOver) {
  BackoffOptions o;
  o.jitter = 0;
  ReconnectBackoff backoff(o, 1);
  EXPECT_EQ(backoff.Next(milliseconds(0)), milliseconds(500));
  EXPECT_EQ(backoff.Next(milliseconds(0)), milliseconds(1000));
  EXPECT_EQ(backoff.Next(milliseconds(29'000)), milliseconds(2000));  // flapping: keeps growing
  EXPECT_EQ(backoff.Next(milliseconds(30'000)), milliseconds(500));
  EXPECT_EQ(backoff.attempts(), 1);
  EXPECT_EQ(backoff.Next(milliseconds(0)), milliseconds(1000));
}

TEST(ReconnectBackoff, OnlyCausesThatMendThemselvesAreRetried) {
  EXPECT_TRUE(IsRetryable(VideoErrorCode::kUnreachable));
  EXPECT_TRUE(IsRetryable(VideoErrorCode::kTimeout));
  EXPECT_TRUE(IsRetryable(VideoErrorCode::kNotFound));
  EXPECT_TRUE(IsRetryable(VideoErrorCode::kIoError));
  EXPECT_FALSE(IsRetryable(VideoErrorCode::kUnauthorized));
  EXPECT_FALSE(IsRetryable(VideoErrorCode::kUnsupportedCodec));
  EXPECT_FALSE(IsRetryable(VideoErrorCode::kNoVideoStream));
  EXPECT_FALSE(IsRetryable(VideoErrorCode::kInvalidData));
  EXPECT_FALSE(IsRetryable(VideoErrorCode::kBadUrl));
  EXPECT_FALSE(IsRetryable(VideoErrorCode::kCancelled));
}

}  // namespace
}  // namespace mogserve::video
