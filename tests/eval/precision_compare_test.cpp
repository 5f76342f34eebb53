// Pairing FP32 and reduced-precision detections, and scoring against hand-made ground truth.
#include "eval/precision_compare.h"

#include <gtest/gtest.h>

namespace mogserve::eval {
namespace {

TEST(CompareDetections, IdenticalRunsMatchExactly) {
  const DetectionsPerImage run = {{{0, 0, 10, 10, 0.9f}, {20, 0, 30, 10, 0.8f}}, {}};
  auto d = CompareDetections(run, run);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->images, 2);
  EXPECT_EQ(d->matched, 2);
  EXPECT_EQ(d->changed(), 0);
  EXPECT_DOUBLE_EQ(d->mean_iou, 1.0);
  EXPECT_DOUBLE_EQ(d->min_iou, 1.0);
  EXPECT_DOUBLE_EQ(d->max_abs_score_diff, 0.0);
}

// Reference: A (0.9), B (0.8), C (0.7). Candidate: A shifted by 1 px (IoU 90/110), B with score
// 0.75, C missing, and a new face D. Matched 2, lost 1, gained 1.
TEST(CompareDetections, DriftLossesAndGains) {
  const DetectionsPerImage ref = {
      {{0, 0, 10, 10, 0.9f}, {20, 0, 30, 10, 0.8f}, {40, 0, 50, 10, 0.7f}}};
  const DetectionsPerImage cand = {
      {{60, 0, 70, 10, 0.6f}, {20, 0, 30, 10, 0.75f}, {1, 0, 11, 10, 0.9f}}};
  auto d = CompareDetections(ref, cand);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->reference_faces, 3);
  EXPECT_EQ(d->candidate_faces, 3);
  EXPECT_EQ(d->matched, 2);
  EXPECT_EQ(d->lost, 1);
  EXPECT_EQ(d->gained, 1);
  EXPECT_EQ(d->changed(), 2);
  EXPECT_NEAR(d->min_iou, 90.0 / 110.0, 1e-6);
  EXPECT_NEAR(d->mean_iou, (1.0 + 90.0 / 110.0) / 2, 1e-6);
  EXPECT_NEAR(d->max_abs_score_diff, 0.05, 1e-6);
  EXPECT_NEAR(d->mean_abs_score_diff, 0.025, 1e-6);
}

// A face is paired once: two candidates on one reference face leave one gained.
TEST(CompareDetections, OnePartnerPerFace) {
  const DetectionsPerImage ref = {{{0, 0, 10, 10, 0.9f}}};
  const DetectionsPerImage cand = {{{0, 0, 10, 10, 0.9f}, {0, 0, 10, 9, 0.5f}}};
  auto d = CompareDetections(ref, cand);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->matched, 1);
  EXPECT_EQ(d->gained, 1);
  EXPECT_FALSE(CompareDetections(ref, {}).ok());
}

// Three images, three faces. Detections: face 1 (0.9), a miss (0.5), face 2 (0.3); face 3 is
// missed; the third image has no faces, so it is skipped (its detection counts for nothing).
TEST(ScoreAgainstGroundTruth, WiderProtocolAllFacesKept) {
  const DetectionsPerImage faces = {
      {{0, 0, 20, 20, 0}, {100, 0, 120, 20, 0}}, {{0, 0, 30, 30, 0}}, {}};
  const DetectionsPerImage dets = {{{0, 0, 20, 20, 0.9f}, {100, 0, 120, 20, 0.3f}},
                                   {{300, 300, 330, 330, 0.5f}},
                                   {{0, 0, 5, 5, 0.2f}}};
  auto s = ScoreAgainstGroundTruth(faces, dets, BoxCorners::kEdges);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->faces, 3);
  EXPECT_EQ(s->found, 2);
  EXPECT_NEAR(s->recall, 2.0 / 3.0, 1e-12);
  // The score 0.2 on the face-less image still sets the minimum: normalised .9 -> 1, .5 -> 3/7,
  // .3 -> 1/7. thr > 3/7: P 1/1 R 1/3; then P 1/2; thr <= 1/7: P 2/3 R 2/3: AP = 1/3 + 2/9.
  EXPECT_NEAR(s->ap, 1.0 / 3.0 + 2.0 / 9.0, 1e-12);
}

}  // namespace
}  // namespace mogserve::eval
