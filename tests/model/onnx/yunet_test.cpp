// DecodeYunet on hand-made outputs: the cell grid of the padded input (columns from its width),
// score sqrt(cls · obj) with both clamped to [0, 1], centres and landmarks (cell + offset) ·
// stride, sizes exp(·) · stride, and OpenCV's NMSBoxes: integer boxes, plain areas, scores strictly
// above the threshold once there is more than one face.
#include "model/onnx/yunet.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mogserve::model::onnx {
namespace {

struct Outputs {
  std::vector<float> cls, obj, bbox, kps;
  Outputs(int cells) : cls(cells, 0.0f), obj(cells, 0.0f), bbox(cells * 4, 0.0f), kps(cells * 10, 0.0f) {}
  YunetLevel level() const { return {cls, obj, bbox, kps}; }
};

TEST(Yunet, CellsOffsetsAndSizesInStrides) {
  YunetConfig c;
  c.strides = {8, 16};
  // A 32 x 16 padded input: stride 8 has 4 columns, 2 rows; stride 16 has 2 x 1.
  Outputs s8(8), s16(2);
  // Stride 8, row 1, column 2: cell 6.
  s8.cls[6] = 1.5f;  // clamped to 1
  s8.obj[6] = 0.81f;
  s8.bbox[6 * 4 + 0] = 0.5f;
  s8.bbox[6 * 4 + 1] = -0.25f;
  s8.bbox[6 * 4 + 2] = std::log(2.0f);
  s8.bbox[6 * 4 + 3] = 0.0f;
  for (int p = 0; p < 5; ++p) {
    s8.kps[6 * 10 + 2 * p] = 0.1f * p;
    s8.kps[6 * 10 + 2 * p + 1] = 1.0f;
  }
  // Stride 16, column 1: far from the first; its obj is negative (clamped to 0): no face.
  s16.cls[1] = 1.0f;
  s16.obj[1] = -0.5f;
  const YunetLevel levels[] = {s8.level(), s16.level()};
  std::vector<YunetDetection> faces = DecodeYunet(c, levels, 32, 16, 0.5f, 0.3f);
  ASSERT_EQ(faces.size(), 1u);
  EXPECT_FLOAT_EQ(faces[0].score, 0.9f);
  // Centre ((2 + 0.5) · 8, (1 − 0.25) · 8) = (20, 6); size 16 x 8.
  EXPECT_FLOAT_EQ(faces[0].w, 16.0f);
  EXPECT_FLOAT_EQ(faces[0].h, 8.0f);
  EXPECT_FLOAT_EQ(faces[0].x, 12.0f);
  EXPECT_FLOAT_EQ(faces[0].y, 2.0f);
  EXPECT_FLOAT_EQ(faces[0].landmarks[3][0], (0.3f + 2) * 8);
  EXPECT_FLOAT_EQ(faces[0].landmarks[3][1], 16.0f);
  // A grid that does not match the outputs gives no faces.
  EXPECT_TRUE(DecodeYunet(c, levels, 64, 16, 0.5f, 0.3f).empty());
}

TEST(Yunet, NmsOnIntegerBoxesWithPlainAreas) {
  YunetConfig c;
  c.strides = {8};
  Outputs s(2);  // a 16 x 8 input: two cells
  // Cell 0: centre (4.6, 0), 9.2 x 8 → x 0, w 9 as integers; cell 1 shifted left onto it:
  // centre ((1 − 0.5) · 8, 0), 8 x 8. Scores 0.8 and 0.5.
  s.cls[0] = s.obj[0] = 0.8f;
  s.cls[1] = s.obj[1] = 0.5f;
  s.bbox[0] = 0.575f;
  s.bbox[2] = std::log(9.2f / 8);
  s.bbox[1 * 4 + 0] = -0.5f;  // centre 4 → x 0, w 8
  const YunetLevel levels[] = {s.level()};
  // Integer rects (x, y, w, h) (0, −4, 9, 8) and (0, −4, 8, 8): IoU 64 / 72 = 0.889 (with the
  // float boxes: 0.87).
  std::vector<YunetDetection> faces = DecodeYunet(c, levels, 16, 8, 0.4f, 0.88f);
  ASSERT_EQ(faces.size(), 1u);
  EXPECT_FLOAT_EQ(faces[0].score, 0.8f);
  EXPECT_EQ(DecodeYunet(c, levels, 16, 8, 0.4f, 0.89f).size(), 2u);
  // With two faces, NMSBoxes keeps scores strictly above the threshold: 0.5 is dropped at 0.5
  // (decoding keeps it: >=), while a lone face at exactly the threshold stays.
  faces = DecodeYunet(c, levels, 16, 8, 0.5f, 0.99f);
  ASSERT_EQ(faces.size(), 1u);
  EXPECT_FLOAT_EQ(faces[0].score, 0.8f);
  s.cls[0] = s.obj[0] = 0.0f;
  const YunetLevel lone[] = {s.level()};
  EXPECT_EQ(DecodeYunet(c, lone, 16, 8, 0.5f, 0.3f).size(), 1u);
}

}  // namespace
}  // namespace mogserve::model::onnx
