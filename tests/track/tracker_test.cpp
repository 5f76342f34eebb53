#include "track/tracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "common/detection.h"

namespace mogserve::track {
namespace {

Detection Face(double cx, double cy, double size, float score = 0.9f) {
  Detection d;
  d.x1 = static_cast<float>(cx - size / 2);
  d.y1 = static_cast<float>(cy - size / 2);
  d.x2 = static_cast<float>(cx + size / 2);
  d.y2 = static_cast<float>(cy + size / 2);
  d.score = score;
  return d;
}

bool SameBox(const Detection& a, const Detection& b) {
  return a.x1 == b.x1 && a.y1 == b.y1 && a.x2 == b.x2 && a.y2 == b.y2;
}

// The answer's entry for a face the detector found (its own box), or nullptr.
const Detection* Find(const std::vector<Detection>& answer, const Detection& face) {
  for (const Detection& d : answer) {
    if (!d.tracked && SameBox(d, face)) return &d;
  }
  return nullptr;
}

int64_t IdOf(const std::vector<Detection>& answer, const Detection& face) {
  const Detection* d = Find(answer, face);
  return d ? d->track_id : -1;
}

double Cx(const Detection& d) {
  return (d.x1 + d.x2) / 2.0;
}

// A face seen on `frames` detected frames at 30 fps from t = 0, standing at (cx, cy); returns
// its id. Leaves the tracker at t = (frames - 1) / 30.
int64_t Establish(Tracker& tracker, double cx, double cy, int frames) {
  int64_t id = 0;
  for (int i = 0; i < frames; ++i)
    id = IdOf(tracker.Update(i / 30.0, {Face(cx, cy, 80)}), Face(cx, cy, 80));
  return id;
}

TEST(TrackerTest, FirstFacesGetIdsFromOneAndKeepThem) {
  Tracker tracker;
  const Detection a = Face(100, 100, 60), b = Face(400, 300, 90, 0.7f);
  std::vector<Detection> answer = tracker.Update(0.0, {b, a});
  ASSERT_EQ(answer.size(), 2u);
  EXPECT_EQ(answer[0].score, 0.9f);  // highest score first
  EXPECT_EQ(std::set<int64_t>({answer[0].track_id, answer[1].track_id}), std::set<int64_t>({1, 2}));
  const int64_t id_a = IdOf(answer, a), id_b = IdOf(answer, b);
  for (int i = 1; i < 10; ++i) {
    answer = tracker.Update(i / 30.0, {a, b});
    EXPECT_EQ(IdOf(answer, a), id_a);
    EXPECT_EQ(IdOf(answer, b), id_b);
    EXPECT_FALSE(answer[0].tracked);
  }
  EXPECT_EQ(tracker.stats().started, 2);
  EXPECT_EQ(tracker.stats().confirmed, 2);
  EXPECT_EQ(tracker.stats().tentative, 0);
}

// Two faces moving in opposite directions along nearly the same row overlap in the middle; the
// motion model tells them apart where IoU with their last boxes would not.
void CrossFaces(double fps) {
  Tracker tracker;
  int64_t id_a = 0, id_b = 0;
  const int frames = static_cast<int>(2.0 * fps);
  for (int i = 0; i <= frames; ++i) {
    const double t = i / fps;
    const Detection a = Face(100 + 300 * t, 300, 80);  // rightwards, meets b at t = 1 s
    const Detection b = Face(700 - 300 * t, 330, 80);  // leftwards, 30 px lower
    // The detector lists faces left to right, so the order swaps as they cross.
    const std::vector<Detection> faces = Cx(a) < Cx(b) ? std::vector{a, b} : std::vector{b, a};
    const std::vector<Detection> answer = tracker.Update(t, faces);
    ASSERT_EQ(answer.size(), 2u) << "t=" << t;
    if (i == 0) {
      id_a = IdOf(answer, a);
      id_b = IdOf(answer, b);
      ASSERT_NE(id_a, id_b);
    }
    EXPECT_EQ(IdOf(answer, a), id_a) << "t=" << t;
    EXPECT_EQ(IdOf(answer, b), id_b) << "t=" << t;
  }
  EXPECT_EQ(tracker.stats().started, 2);
}

TEST(TrackerTest, CrossingFacesKeepTheirIdsAt30Fps) {
  CrossFaces(30.0);
}
TEST(TrackerTest, CrossingFacesKeepTheirIdsAt10Fps) {
  CrossFaces(10.0);
}

TEST(TrackerTest, OccludedFaceGetsItsIdBackNearItsPredictedPlace) {
  TrackerOptions options;
  options.max_misses = 30;
  Tracker tracker(options);
  // Walking right at 120 px/s; hidden for 20 detected frames (0.67 s, 80 px) and found again
  // where it walked to, no longer overlapping where it was last seen.
  const auto at = [](double t) { return Face(100 + 120 * t, 200, 60); };
  int64_t id = 0;
  for (int i = 0; i < 30; ++i) id = IdOf(tracker.Update(i / 30.0, {at(i / 30.0)}), at(i / 30.0));
  ASSERT_GT(id, 0);
  for (int i = 30; i < 50; ++i) tracker.Update(i / 30.0, {});
  EXPECT_EQ(IoU(at(29 / 30.0), at(50 / 30.0)), 0.0f);
  EXPECT_EQ(IdOf(tracker.Update(50 / 30.0, {at(50 / 30.0)}), at(50 / 30.0)), id);
  EXPECT_EQ(tracker.stats().started, 1);
}

TEST(TrackerTest, FaceMissingMaxMissesFramesComesBackWithANewId) {
  for (int hidden : {4, 5, 8}) {
    TrackerOptions options;
    options.max_misses = 5;
    Tracker tracker(options);
    const int64_t id = Establish(tracker, 300, 300, 10);
    for (int i = 0; i < hidden; ++i) tracker.Update((10 + i) / 30.0, {});
    const int64_t again =
        IdOf(tracker.Update((10 + hidden) / 30.0, {Face(300, 300, 80)}), Face(300, 300, 80));
    if (hidden < options.max_misses) {
      EXPECT_EQ(again, id) << "hidden " << hidden;
    } else {
      EXPECT_GT(again, id) << "hidden " << hidden;  // removed at the max_misses-th miss
    }
  }
}

TEST(TrackerTest, TentativeTrackIsRemovedAtItsFirstMissAndItsIdNotReused) {
  Tracker tracker;
  EXPECT_EQ(IdOf(tracker.Update(0.0, {Face(200, 200, 80)}), Face(200, 200, 80)), 1);
  EXPECT_EQ(tracker.stats().tentative, 1);
  EXPECT_TRUE(tracker.Update(1 / 30.0, {}).empty());  // never confirmed: not coasted either
  EXPECT_EQ(tracker.stats().tentative, 0);
  EXPECT_TRUE(tracker.Predict(1.5 / 30.0).empty());
  EXPECT_EQ(IdOf(tracker.Update(2 / 30.0, {Face(200, 200, 80)}), Face(200, 200, 80)), 2);
  EXPECT_EQ(tracker.stats().started, 2);
}

TEST(TrackerTest, LowScoreFaceContinuesAConfirmedTrackButNeverStartsOne) {
  Tracker tracker;
  const Detection low = Face(500, 300, 80, 0.3f);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(tracker.Update(i / 30.0, {low}).empty());
  EXPECT_EQ(tracker.stats().started, 0);
  // Under low_score: ignored even on a track.
  const int64_t id = Establish(tracker, 200, 200, 3);
  std::vector<Detection> answer = tracker.Update(3 / 30.0, {Face(202, 200, 80, 0.3f)});
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_EQ(answer[0].track_id, id);
  EXPECT_FALSE(answer[0].tracked);
  EXPECT_EQ(answer[0].score, 0.3f);
  EXPECT_EQ(answer[0].x1, Face(202, 200, 80).x1);  // the detector's own box
  answer = tracker.Update(4 / 30.0, {Face(202, 200, 80, 0.05f)});
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_TRUE(answer[0].tracked);  // the 0.05 face was ignored: the track coasts
  EXPECT_EQ(answer[0].score, 0.3f);
}

TEST(TrackerTest, LowScoreFaceDoesNotContinueATentativeTrack) {
  Tracker tracker;
  tracker.Update(0.0, {Face(200, 200, 80)});
  EXPECT_TRUE(tracker.Update(1 / 30.0, {Face(200, 200, 80, 0.3f)}).empty());
  EXPECT_EQ(IdOf(tracker.Update(2 / 30.0, {Face(200, 200, 80)}), Face(200, 200, 80)), 2);
}

TEST(TrackerTest, LowScoreFaceNeedsTheStricterIou) {
  Tracker tracker;  // low_match_iou 0.5, match_iou 0.2
  const int64_t id = Establish(tracker, 200, 200, 3);
  // Shifted by 40 px of 80: IoU 1/3, enough for a high face, not for a low one.
  EXPECT_TRUE(Find(tracker.Update(3 / 30.0, {Face(240, 200, 80, 0.3f)}), Face(240, 200, 80)) ==
              nullptr);
  Tracker other;
  Establish(other, 200, 200, 3);
  EXPECT_EQ(IdOf(other.Update(3 / 30.0, {Face(240, 200, 80)}), Face(240, 200, 80)), id);
}

TEST(TrackerTest, MissedFaceIsCoastedForMaxCoastFramesThenNotAnswered) {
  TrackerOptions options;
  options.max_coast = 3;
  options.max_misses = 10;
  Tracker tracker(options);
  const auto at = [](double t) { return Face(100 + 90 * t, 200, 80, 0.8f); };
  int64_t id = 0;
  for (int i = 0; i < 20; ++i) id = IdOf(tracker.Update(i / 30.0, {at(i / 30.0)}), at(i / 30.0));
  for (int miss = 1; miss <= 6; ++miss) {
    const double t = (19 + miss) / 30.0;
    const std::vector<Detection> answer = tracker.Update(t, {});
    const TrackerStats stats = tracker.stats();
    EXPECT_EQ(stats.lost, 1);
    if (miss <= options.max_coast) {
      ASSERT_EQ(answer.size(), 1u) << "miss " << miss;
      EXPECT_EQ(answer[0].track_id, id);
      EXPECT_TRUE(answer[0].tracked);
      EXPECT_EQ(answer[0].score, 0.8f);                           // the last match's
      EXPECT_GT(IoU(answer[0], at(t)), 0.9f) << "miss " << miss;  // kept walking
      EXPECT_EQ(stats.confirmed, 1);
    } else {
      EXPECT_TRUE(answer.empty()) << "miss " << miss;
      EXPECT_EQ(stats.confirmed, 0);
      EXPECT_TRUE(tracker.Predict(t + 0.01).empty());
    }
  }
}

TEST(TrackerTest, MaxCoastZeroAnswersNoLostTrack) {
  TrackerOptions options;
  options.max_coast = 0;
  Tracker tracker(options);
  Establish(tracker, 300, 300, 5);
  EXPECT_TRUE(tracker.Update(5 / 30.0, {}).empty());
  EXPECT_EQ(tracker.stats().lost, 1);
  EXPECT_EQ(tracker.stats().confirmed, 0);
}

TEST(TrackerTest, PredictFollowsAFaceBetweenDetectionsAt5Fps) {
  Tracker tracker, twin;  // twin sees the same detections and no Predict calls
  const auto at = [](double t) { return Face(150 + 150 * t, 200 + 50 * t, 80); };
  int predicted_frames = 0;
  for (int i = 0; i <= 15; ++i) {
    const double t = i * 0.2;
    const std::vector<Detection> answer = tracker.Update(t, {at(t)});
    const std::vector<Detection> twin_answer = twin.Update(t, {at(t)});
    ASSERT_EQ(answer.size(), twin_answer.size());
    for (size_t k = 0; k < answer.size(); ++k) {
      EXPECT_TRUE(SameBox(answer[k], twin_answer[k]));
      EXPECT_EQ(answer[k].track_id, twin_answer[k].track_id);
    }
    if (i < 4) continue;           // let the velocity settle
    for (int k = 1; k < 6; ++k) {  // the five undetected frames of 30 fps in between
      const double tk = t + k / 30.0;
      const std::vector<Detection> predicted = tracker.Predict(tk);
      ASSERT_EQ(predicted.size(), 1u);
      EXPECT_TRUE(predicted[0].tracked);
      EXPECT_EQ(predicted[0].track_id, answer[0].track_id);
      EXPECT_GE(IoU(predicted[0], at(tk)), 0.7f) << "t=" << tk;
      const std::vector<Detection> again = tracker.Predict(tk);
      EXPECT_TRUE(SameBox(again[0], predicted[0]));
      ++predicted_frames;
    }
  }
  EXPECT_EQ(predicted_frames, 12 * 5);
  // Standing still would have failed: the face moves 30 px (of 80) per detected frame.
  EXPECT_LT(IoU(at(3.0), at(3.0 + 5 / 30.0)), 0.7f);
}

TEST(TrackerTest, PredictBeforeTheLastUpdateTimeAnswersTheLastBoxes) {
  Tracker tracker;
  Establish(tracker, 300, 300, 3);
  const std::vector<Detection> now = tracker.Predict(2 / 30.0);
  const std::vector<Detection> earlier = tracker.Predict(0.0);
  ASSERT_EQ(now.size(), 1u);
  ASSERT_EQ(earlier.size(), 1u);
  EXPECT_TRUE(SameBox(now[0], earlier[0]));
}

TEST(TrackerTest, CarriedLandmarksMoveAndScaleWithTheBox) {
  Tracker tracker;
  // Moving right 150 px/s and growing 30 px/s; the landmarks keep their place in the box.
  const auto at = [](double t) {
    Detection d = Face(200 + 150 * t, 300, 80 + 30 * t);
    const float w = d.width(), h = d.height();
    d.landmarks = {{d.x1 + 0.3f * w, d.y1 + 0.4f * h},
                   {d.x1 + 0.7f * w, d.y1 + 0.4f * h},
                   {d.x1 + 0.5f * w, d.y1 + 0.6f * h},
                   {d.x1 + 0.35f * w, d.y1 + 0.8f * h},
                   {d.x1 + 0.65f * w, d.y1 + 0.8f * h}};
    for (int i = 0; i < 68; ++i) d.landmarks68.push_back({d.x1 + w * i / 68.0f, d.y1 + 0.5f * h});
    return d;
  };
  for (int i = 0; i < 15; ++i) tracker.Update(i / 30.0, {at(i / 30.0)});
  const Detection last = at(14 / 30.0);
  for (const std::vector<Detection>& carried :
       {tracker.Predict(17 / 30.0), tracker.Update(15 / 30.0, {})}) {
    ASSERT_EQ(carried.size(), 1u);
    const Detection& d = carried[0];
    EXPECT_TRUE(d.tracked);
    ASSERT_EQ(d.landmarks.size(), 5u);
    ASSERT_EQ(d.landmarks68.size(), 68u);
    EXPECT_GT(d.landmarks[2].x, last.landmarks[2].x + 3);  // moved with the box
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_NEAR((d.landmarks[k].x - d.x1) / d.width(),
                  (last.landmarks[k].x - last.x1) / last.width(), 1e-4);
      EXPECT_NEAR((d.landmarks[k].y - d.y1) / d.height(),
                  (last.landmarks[k].y - last.y1) / last.height(), 1e-4);
    }
    EXPECT_NEAR(d.landmarks68[67].x, d.x1 + d.width() * 67 / 68.0f, 1e-2);
  }
}

TEST(TrackerTest, AnswersEveryHighFaceSortedByScoreAndIgnoresTheRest) {
  Tracker tracker;
  const std::vector<Detection> faces = {Face(100, 100, 50, 0.6f), Face(300, 100, 50, 0.95f),
                                        Face(500, 100, 50, 0.3f), Face(700, 100, 50, 0.05f),
                                        Face(900, 100, 50, 0.8f)};
  const std::vector<Detection> answer = tracker.Update(0.0, faces);
  ASSERT_EQ(answer.size(), 3u);
  EXPECT_EQ(answer[0].score, 0.95f);
  EXPECT_EQ(answer[1].score, 0.8f);
  EXPECT_EQ(answer[2].score, 0.6f);
  for (const Detection& d : answer) EXPECT_GT(d.track_id, 0);
}

TEST(TrackerTest, FaceWithoutAValidBoxIsAnsweredUntracked) {
  Tracker tracker;
  Detection bad = Face(100, 100, 50);
  bad.x2 = std::numeric_limits<float>::quiet_NaN();
  const Detection flat = Face(300, 300, 0);
  const std::vector<Detection> answer = tracker.Update(0.0, {bad, flat, Face(500, 500, 50)});
  ASSERT_EQ(answer.size(), 3u);
  int with_id = 0;
  for (const Detection& d : answer) with_id += d.track_id > 0;
  EXPECT_EQ(with_id, 1);
  EXPECT_EQ(tracker.stats().started, 1);
  EXPECT_EQ(tracker.stats().tentative, 1);
}

TEST(TrackerTest, TimeGoingBackIsTakenAsTheLastTime) {
  Tracker tracker;
  const auto at = [](double t) { return Face(100 + 300 * t, 200, 80); };
  int64_t id = 0;
  for (int i = 0; i < 10; ++i) id = IdOf(tracker.Update(i / 30.0, {at(i / 30.0)}), at(i / 30.0));
  // A frame stamped in the past: no extrapolation backwards, the face is still matched.
  const std::vector<Detection> answer = tracker.Update(0.0, {at(10 / 30.0)});
  EXPECT_EQ(IdOf(answer, at(10 / 30.0)), id);
  const std::vector<Detection> predicted = tracker.Predict(-5.0);
  ASSERT_EQ(predicted.size(), 1u);
  EXPECT_LT(std::abs(Cx(predicted[0]) - Cx(at(10 / 30.0))), 15.0);
}

}  // namespace
}  // namespace mogserve::track
