#include "video/catch_up.h"

#include <gtest/gtest.h>

namespace mogserve::video {
namespace {

constexpr double kFrame = 0.04;  // 25 fps
constexpr int kGop = 25;         // a keyframe every second

// A 25 fps source with a keyframe every 25 frames; the test says when each packet is read.
struct Source {
  CatchUp catch_up;
  int next = 0;
  int dropped = 0;
  // Reads frame `next` at `arrival_s`; whether it was dropped.
  bool Read(double arrival_s) {
    const int i = next++;
    const bool drop = catch_up.Drop(arrival_s, i * kFrame, i % kGop == 0);
    dropped += drop ? 1 : 0;
    return drop;
  }
};

TEST(CatchUp, PacketsReadInRealTimeAreNeverDropped) {
  Source s;
  for (int i = 0; i < 250; ++i) ASSERT_FALSE(s.Read(5.0 + i * kFrame + (i % 3) * 0.01));
  EXPECT_LT(s.catch_up.lag_s(), 0.05);
}

TEST(CatchUp, ABurstAheadOfRealTimeIsNotLag) {
  // Probe-buffered packets first (all read at once), then real time: the least-late packet sets
  // the origin, so nothing is late.
  Source s;
  for (int i = 0; i < 25; ++i) ASSERT_FALSE(s.Read(1.0));
  for (int i = 25; i < 100; ++i) ASSERT_FALSE(s.Read(1.0 + (i - 24) * kFrame));
  EXPECT_FALSE(s.catch_up.catching_up());
}

TEST(CatchUp, ABacklogIsDroppedUpToTheKeyframeAfterTheLagFalls) {
  Source s;
  // 2 s in real time (frames 0–49), then a 3 s stall, then the backlog read 5 ms apart.
  for (int i = 0; i < 50; ++i) ASSERT_FALSE(s.Read(i * kFrame));
  double t = 2.0 + 3.0;
  std::vector<bool> dropped;
  for (int i = 50; i < 175; ++i) {
    t += 0.005;
    dropped.push_back(s.Read(t));
  }
  // Frame 50 is read 3 s late but is a keyframe: decoded. 51 is late: dropped, and so is
  // everything after it up to each keyframe while the lag stays above 200 ms.
  EXPECT_FALSE(dropped[0]);
  EXPECT_TRUE(dropped[1]);
  EXPECT_FALSE(dropped[75 - 50]);  // keyframes pass
  EXPECT_FALSE(dropped[100 - 50]);
  EXPECT_TRUE(dropped[99 - 50]);
  // The lag falls by 35 ms a packet: from 3 s it is under 200 ms after ~80 packets (frame
  // ~130), but the frames after it reference dropped ones until the keyframe at 150.
  EXPECT_TRUE(dropped[149 - 50]);
  EXPECT_FALSE(dropped[150 - 50]);
  EXPECT_FALSE(dropped[151 - 50]);
  EXPECT_FALSE(s.catch_up.catching_up());
  // Every non-key frame from 51 to 149 was dropped.
  EXPECT_EQ(s.dropped, 99 - 3);
}

TEST(CatchUp, LagUnderTheStartThresholdDropsNothing) {
  Source s;
  for (int i = 0; i < 50; ++i) ASSERT_FALSE(s.Read(i * kFrame));
  // A 0.9 s stall, then the backlog: late, but not by a second.
  double t = 2.0 + 0.9;
  for (int i = 50; i < 100; ++i) ASSERT_FALSE(s.Read(t += 0.005));
  EXPECT_EQ(s.dropped, 0);
}

TEST(CatchUp, ATimestampJumpStartsTheMeasureAgain) {
  CatchUp c;
  for (int i = 0; i < 50; ++i) ASSERT_FALSE(c.Drop(i * kFrame, i * kFrame, i % kGop == 0));
  // The source restarts its clock at 0 while wall time runs on: not 2 s of lag.
  for (int i = 0; i < 50; ++i) {
    ASSERT_FALSE(c.Drop(2.0 + i * kFrame, i * kFrame, i % kGop == 0)) << i;
  }
  EXPECT_LT(c.lag_s(), 0.05);
}

TEST(CatchUp, PacketsWithoutTimestampsFollowTheCurrentDecision) {
  CatchUp c;
  ASSERT_FALSE(c.Drop(0.0, 0.0, true));
  ASSERT_FALSE(c.Drop(0.04, std::nullopt, false));
  ASSERT_TRUE(c.Drop(2.0, 0.08, false));  // 1.9 s late
  EXPECT_TRUE(c.Drop(2.01, std::nullopt, false));
  EXPECT_FALSE(c.Drop(2.02, std::nullopt, true));
}

}  // namespace
}  // namespace mogserve::video
