// Tests of IoU and greedy hard NMS on boxes whose overlaps are computed by hand.
#include "model/nms.h"

#include <gtest/gtest.h>

#include <vector>

#include "mogserve/detector.h"

namespace mogserve::model {
namespace {

Detection Box(float x1, float y1, float x2, float y2, float score = 1.0f) {
  Detection d;
  d.x1 = x1;
  d.y1 = y1;
  d.x2 = x2;
  d.y2 = y2;
  d.score = score;
  return d;
}

// The kept boxes, identified by their scores (unique within each test case).
std::vector<float> Scores(const std::vector<Detection>& boxes) {
  std::vector<float> out;
  for (const Detection& d : boxes) out.push_back(d.score);
  return out;
}

void IoUHandComputedOverlapsAndDegenerateBoxes() {
  // 10x10 squares shifted by 5 along x: intersection 50, union 150.
  EXPECT_FLOAT_EQ(IoU(Box(0, 0, 10, 10), Box(5, 0, 15, 10)), 1.0f / 3.0f);
  // Symmetric.
  EXPECT_FLOAT_EQ(IoU(Box(5, 0, 15, 10), Box(0, 0, 10, 10)), 1.0f / 3.0f);
  // Diagonal shift by (2, 2): intersection 8x8 = 64, union 100 + 100 - 64 = 136.
  EXPECT_FLOAT_EQ(IoU(Box(0, 0, 10, 10), Box(2, 2, 12, 12)), 64.0f / 136.0f);
  // One box inside the other: intersection 4x2 = 8, union = 40.
  EXPECT_FLOAT_EQ(IoU(Box(0, 0, 10, 4), Box(3, 1, 7, 3)), 8.0f / 40.0f);
  // Identical: 1.
  EXPECT_FLOAT_EQ(IoU(Box(1.5f, 2.5f, 7, 9), Box(1.5f, 2.5f, 7, 9)), 1.0f);
  // Touching edges and disjoint boxes: 0.
  EXPECT_EQ(IoU(Box(0, 0, 10, 10), Box(10, 0, 20, 10)), 0.0f);
  EXPECT_EQ(IoU(Box(0, 0, 10, 10), Box(30, 30, 40, 40)), 0.0f);

  // Degenerate boxes have no overlap.
  const Detection square = Box(0, 0, 10, 10);
  EXPECT_EQ(IoU(square, Box(0, 0, 0, 10)), 0.0f);  // zero width, inside the square
  EXPECT_EQ(IoU(square, Box(0, 5, 10, 5)), 0.0f);  // zero height
  EXPECT_EQ(IoU(Box(3, 3, 3, 3), Box(3, 3, 3, 3)), 0.0f);
  // Inverted boxes (x2 < x1 and y2 < y1) have a positive product of width and height, but no
  // area: they overlap nothing, not even themselves.
  const Detection inverted = Box(10, 10, 0, 0);
  EXPECT_EQ(IoU(inverted, inverted), 0.0f);
  EXPECT_EQ(IoU(inverted, square), 0.0f);
  EXPECT_EQ(IoU(square, inverted), 0.0f);
  EXPECT_EQ(IoU(square, Box(10, 0, 0, 10)), 0.0f);  // only x inverted
}

void NmsStrictThresholdGreedyAgainstKeptMaxKeepAndStableTies() {
  // IoU exactly 1/3: suppressed below the threshold, kept at or above it.
  const std::vector<Detection> pair = {Box(0, 0, 10, 10, 0.9f), Box(5, 0, 15, 10, 0.8f)};
  EXPECT_EQ(Scores(NonMaxSuppression(pair, 0.3f, 0)), std::vector<float>{0.9f});
  EXPECT_EQ(Scores(NonMaxSuppression(pair, 0.34f, 0)), (std::vector<float>{0.9f, 0.8f}));

  // IoU exactly 0.5 (intersection 2, union 4, both exact in float): "suppress if > threshold"
  // keeps it at threshold 0.5 and suppresses it just below.
  const std::vector<Detection> half = {Box(0, 0, 4, 1, 0.9f), Box(0, 0, 2, 1, 0.8f)};
  ASSERT_EQ(IoU(half[0], half[1]), 0.5f);
  EXPECT_EQ(Scores(NonMaxSuppression(half, 0.5f, 0)), (std::vector<float>{0.9f, 0.8f}));
  EXPECT_EQ(Scores(NonMaxSuppression(half, 0.49f, 0)), std::vector<float>{0.9f});

  // Chain A-B-C: IoU(A,B) = 60/140 = 0.43, IoU(B,C) = 40/160 = 0.25, IoU(A,C) = 0. At 0.2, B is
  // suppressed by A; C overlaps only the suppressed B and must survive. Given unsorted.
  const Detection a = Box(0, 0, 10, 10, 0.9f);
  const Detection b = Box(4, 0, 14, 10, 0.8f);
  const Detection c = Box(10, 0, 20, 10, 0.7f);
  ASSERT_FLOAT_EQ(IoU(a, b), 60.0f / 140.0f);
  ASSERT_FLOAT_EQ(IoU(b, c), 40.0f / 160.0f);
  EXPECT_EQ(Scores(NonMaxSuppression({c, a, b}, 0.2f, 0)), (std::vector<float>{0.9f, 0.7f}));
  // At 0.5 nothing is suppressed, and the result is sorted by score.
  EXPECT_EQ(Scores(NonMaxSuppression({c, a, b}, 0.5f, 0)), (std::vector<float>{0.9f, 0.8f, 0.7f}));
  // Without A, B is kept and suppresses C at 0.2.
  EXPECT_EQ(Scores(NonMaxSuppression({c, b}, 0.2f, 0)), std::vector<float>{0.8f});

  // The kept boxes themselves are returned unchanged.
  const std::vector<Detection> kept = NonMaxSuppression({b}, 0.5f, 0);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].x1, 4.0f);
  EXPECT_EQ(kept[0].x2, 14.0f);
  EXPECT_EQ(kept[0].y2, 10.0f);

  EXPECT_TRUE(NonMaxSuppression({}, 0.5f, 10).empty());

  // max_keep and stable ties.
  // Five disjoint boxes in scrambled score order.
  std::vector<Detection> boxes;
  const float scores[] = {0.3f, 0.9f, 0.5f, 0.7f, 0.1f};
  for (int i = 0; i < 5; ++i) boxes.push_back(Box(20.0f * i, 0, 20.0f * i + 10, 10, scores[i]));
  EXPECT_EQ(Scores(NonMaxSuppression(boxes, 0.5f, 3)), (std::vector<float>{0.9f, 0.7f, 0.5f}));
  EXPECT_EQ(Scores(NonMaxSuppression(boxes, 0.5f, 1)), std::vector<float>{0.9f});
  EXPECT_EQ(NonMaxSuppression(boxes, 0.5f, 0).size(), 5u);   // 0: no limit
  EXPECT_EQ(NonMaxSuppression(boxes, 0.5f, -1).size(), 5u);  // negative: no limit
  EXPECT_EQ(NonMaxSuppression(boxes, 0.5f, 99).size(), 5u);

  // max_keep counts kept boxes, not candidates: the suppressed 0.8 does not use up a slot.
  std::vector<Detection> with_duplicate = boxes;
  with_duplicate.push_back(Box(20, 0, 30, 10, 0.8f));  // identical to the 0.9 box
  EXPECT_EQ(Scores(NonMaxSuppression(with_duplicate, 0.5f, 3)),
            (std::vector<float>{0.9f, 0.7f, 0.5f}));

  // Equal scores keep input order (stable sort), told apart by x1.
  std::vector<Detection> ties;
  for (int i = 0; i < 4; ++i)
    ties.push_back(Box(100.0f - 20.0f * i, 0, 110.0f - 20.0f * i, 10, 0.6f));
  ties.insert(ties.begin() + 2, Box(500, 0, 510, 10, 0.95f));
  const std::vector<Detection> out = NonMaxSuppression(ties, 0.5f, 0);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].x1, 500.0f);
  EXPECT_EQ(out[1].x1, 100.0f);
  EXPECT_EQ(out[2].x1, 80.0f);
  EXPECT_EQ(out[3].x1, 60.0f);
  EXPECT_EQ(out[4].x1, 40.0f);

  // Two overlapping boxes with equal scores: the first one given wins.
  const std::vector<Detection> first_wins =
      NonMaxSuppression({Box(0, 0, 10, 10, 0.5f), Box(1, 0, 11, 10, 0.5f)}, 0.5f, 0);
  ASSERT_EQ(first_wins.size(), 1u);
  EXPECT_EQ(first_wins[0].x1, 0.0f);
  const std::vector<Detection> second_order =
      NonMaxSuppression({Box(1, 0, 11, 10, 0.5f), Box(0, 0, 10, 10, 0.5f)}, 0.5f, 0);
  ASSERT_EQ(second_order.size(), 1u);
  EXPECT_EQ(second_order[0].x1, 1.0f);

  // Degenerate boxes overlap nothing, so they neither suppress nor get suppressed.
  EXPECT_EQ(NonMaxSuppression(
                {Box(10, 10, 0, 0, 0.9f), Box(0, 0, 10, 10, 0.8f), Box(5, 0, 5, 10, 0.7f)}, 0.0f, 0)
                .size(),
            3u);
}

TEST(NonMaxSuppressionTest, IoUAndGreedyNmsOnHandComputedBoxes) {
  {
    SCOPED_TRACE("IoU");
    IoUHandComputedOverlapsAndDegenerateBoxes();
  }
  {
    SCOPED_TRACE("NMS");
    NmsStrictThresholdGreedyAgainstKeptMaxKeepAndStableTies();
  }
}

}  // namespace
}  // namespace mogserve::model
