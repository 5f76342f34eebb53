// DecodeScrfd on hand-made outputs: the anchor grid (x fastest, anchors of a cell adjacent),
// distances and landmark offsets in strides, the division by det_scale, the threshold, and
// insightface's NMS with +1 areas.
#include "model/onnx/scrfd.h"

#include <gtest/gtest.h>

namespace mogserve::model::onnx {
namespace {

TEST(Scrfd, AnchorCentresDistancesAndLandmarksInStrides) {
  ScrfdConfig c;
  c.input_height = c.input_width = 32;
  c.strides = {8, 16};
  c.anchors_per_cell = 2;
  // Stride 8: 4 x 4 cells x 2 anchors; stride 16: 2 x 2 x 2.
  std::vector<float> s8(32, 0.1f), b8(32 * 4, 1.0f), k8(32 * 10, 0.0f);
  std::vector<float> s16(8, 0.1f), b16(8 * 4, 1.0f), k16(8 * 10, 0.0f);
  // Stride 8, cell (x 2, y 1) = cell 6, its second anchor: row 13.
  s8[13] = 0.9f;
  b8[13 * 4 + 0] = 1.0f;  // left 8 px
  b8[13 * 4 + 1] = 0.5f;  // top 4
  b8[13 * 4 + 2] = 2.0f;  // right 16
  b8[13 * 4 + 3] = 3.0f;  // bottom 24
  for (int p = 0; p < 5; ++p) {
    k8[13 * 10 + 2 * p] = 0.25f * p;
    k8[13 * 10 + 2 * p + 1] = -0.5f;
  }
  // Stride 16, cell (x 1, y 1) = cell 3, first anchor: row 6; a small box inside the first
  // face's (IoU 0.095: both kept).
  s16[6] = 0.7f;
  for (int k = 0; k < 4; ++k) b16[6 * 4 + k] = 0.25f;
  const ScrfdLevel levels[] = {{s8, b8, k8}, {s16, b16, k16}};
  const std::vector<ScrfdDetection> faces = DecodeScrfd(c, levels, 0.5f, 0.5f, 0.4f);
  ASSERT_EQ(faces.size(), 2u);
  // Centre (16, 8) on the canvas; pictures coordinates are canvas / 0.5.
  EXPECT_FLOAT_EQ(faces[0].score, 0.9f);
  EXPECT_FLOAT_EQ(faces[0].x1, (16 - 8) / 0.5f);
  EXPECT_FLOAT_EQ(faces[0].y1, (8 - 4) / 0.5f);
  EXPECT_FLOAT_EQ(faces[0].x2, (16 + 16) / 0.5f);
  EXPECT_FLOAT_EQ(faces[0].y2, (8 + 24) / 0.5f);
  ASSERT_TRUE(faces[0].has_landmarks);
  EXPECT_FLOAT_EQ(faces[0].landmarks[3][0], (16 + 0.75f * 8) / 0.5f);
  EXPECT_FLOAT_EQ(faces[0].landmarks[3][1], (8 - 4) / 0.5f);
  // Centre (16, 16), 4 px each way.
  EXPECT_FLOAT_EQ(faces[1].score, 0.7f);
  EXPECT_FLOAT_EQ(faces[1].x1, 24.0f);
  EXPECT_FLOAT_EQ(faces[1].y2, 40.0f);
}

TEST(Scrfd, NmsCountsInclusivePixelsAndKeepsTheBest) {
  ScrfdConfig c;
  c.input_height = c.input_width = 8;
  c.strides = {8};
  c.anchors_per_cell = 2;
  c.landmarks = false;
  // Two anchors of the one cell at (0, 0): boxes [0, 0, 2, 2] and [0, 0, 2, 1] (distances in
  // strides of 8 → 16 x 16 and 16 x 8 px). Plain IoU 0.5; with +1 areas 153 / 289 = 0.529.
  const std::vector<float> scores = {0.6f, 0.8f};
  const std::vector<float> boxes = {0, 0, 2, 2, 0, 0, 2, 1};
  const ScrfdLevel level[] = {{scores, boxes, {}}};
  std::vector<ScrfdDetection> faces = DecodeScrfd(c, level, 1.0f, 0.5f, 0.52f);
  ASSERT_EQ(faces.size(), 1u);  // 0.529 > 0.52: suppressed (plain IoU would keep it)
  EXPECT_FLOAT_EQ(faces[0].score, 0.8f);
  EXPECT_FALSE(faces[0].has_landmarks);
  faces = DecodeScrfd(c, level, 1.0f, 0.5f, 0.53f);
  EXPECT_EQ(faces.size(), 2u);
  faces = DecodeScrfd(c, level, 1.0f, 0.7f, 0.4f);  // the threshold: only 0.8
  ASSERT_EQ(faces.size(), 1u);
  EXPECT_FLOAT_EQ(faces[0].score, 0.8f);
}

}  // namespace
}  // namespace mogserve::model::onnx
