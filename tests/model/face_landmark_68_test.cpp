// face-api's 68-point landmark net as a network plan (model/face_landmark_68.h): its shape and
// cost from the architecture written out by hand, the averaging of the 49 cells, and which of the
// 68 points become the five.
#include "model/face_landmark_68.h"

#include <gtest/gtest.h>

#include "model/layer_plan.h"

namespace mogserve::model {
namespace {

TEST(FaceLandmark68, NetworkIsFourDenseBlocksAndTheDenseLayerPerCell) {
  const auto net = BuildFaceLandmark68Network();
  EXPECT_EQ(net->fixed_input_side(), kLandmark68InputSide);
  int convs = 0, activations = 0;
  for (const Op& op : net->ops()) {
    convs += op.kind == OpKind::kConv;
    activations += op.kind == OpKind::kActivation;
  }
  // dense0: a full conv + 3 separable (2 convs each); dense1-3: 4 separable; the dense layer.
  EXPECT_EQ(convs, 1 + 3 * 2 + 3 * 4 * 2 + 1);
  EXPECT_EQ(activations, 4 * 2);  // relu(out1 + out2), relu(out1 + out2 + out3) per block
  auto plan = LayerPlan::Create(net, kLandmark68InputSide, kLandmark68InputSide);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->raw_floats(), 7 * 7 * 136);
  // Multiply-adds by hand: block b at side s_b = 56, 28, 14, 7 with c_b = 32 .. 256 channels.
  int64_t macs = int64_t{56} * 56 * 32 * 3 * 3 * 3;   // dense0/conv0
  macs += 3 * int64_t{56} * 56 * (32 * 9 + 32 * 32);  // dense0/conv1-3
  const int side[3] = {28, 14, 7}, in[3] = {32, 64, 128};
  for (int b = 0; b < 3; ++b) {
    const int64_t s2 = int64_t{side[b]} * side[b], c = 2 * in[b];
    macs += s2 * (in[b] * 9 + in[b] * c);  // conv0: stride 2 depthwise, then pointwise
    macs += 3 * s2 * (c * 9 + c * c);
  }
  macs += int64_t{49} * 256 * 136;  // the dense layer on every cell
  EXPECT_EQ(plan->total_macs(), macs);
  EXPECT_NEAR(static_cast<double>(macs), 53e6, 3e6);
}

TEST(FaceLandmark68, PointsAreTheMeanOfTheCellsAndFiveComeFromTheirIndices) {
  std::vector<float> raw(49 * 136);
  for (int cell = 0; cell < 49; ++cell) {
    for (int v = 0; v < 136; ++v) {
      // Cell-dependent noise that averages to zero, on top of v / 1000.
      raw[cell * 136 + v] = v / 1000.0f + static_cast<float>(cell - 24) * 0.01f;
    }
  }
  const std::vector<Point> p = Points68(raw);
  ASSERT_EQ(p.size(), 68u);
  for (int i = 0; i < 68; ++i) {
    EXPECT_NEAR(p[i].x, 2 * i / 1000.0, 1e-6) << i;
    EXPECT_NEAR(p[i].y, (2 * i + 1) / 1000.0, 1e-6) << i;
  }
  EXPECT_TRUE(Points68(std::vector<float>(136)).empty());  // not 49 cells

  std::vector<Point> pts(68);
  for (int i = 0; i < 68; ++i) pts[i] = {static_cast<float>(i), static_cast<float>(100 + i)};
  const std::vector<Point> five = FivePointsOf68(pts);
  ASSERT_EQ(five.size(), 5u);
  EXPECT_FLOAT_EQ(five[kLeftEye].x, 38.5f);   // mean of 36..41
  EXPECT_FLOAT_EQ(five[kRightEye].x, 44.5f);  // mean of 42..47
  EXPECT_FLOAT_EQ(five[kRightEye].y, 144.5f);
  EXPECT_EQ(five[kNose].x, 30);
  EXPECT_EQ(five[kLeftMouth].x, 48);
  EXPECT_EQ(five[kRightMouth].x, 54);
}

}  // namespace
}  // namespace mogserve::model
