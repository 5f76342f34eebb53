// The FP64 reference executor of the layer plans against the independent Python reference's
// golden outputs (tests/reference/, FP32): every MogFace variant at an even size padded to 32
// and an odd size without padding (the FPN crop). No LibTorch: this proves the networks'
// wiring as written once in model/, which every backend runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "golden.h"
#include "model/checkpoint_loader.h"
#include "model/face_landmark_68.h"
#include "model/input_normalization.h"
#include "model/layer_plan.h"
#include "model/mogface/mogface_model.h"
#include "model/reference/reference_executor.h"
#include "model/ssd_model.h"

namespace mogserve::model {
namespace {

// FP64 against the reference's FP32 run: its own FP32-vs-FP64 error is 3.4e-6 (conf) and
// 1.6e-6 (loc) at 165x229 (tests/reference/README.md).
constexpr double kTolerance = 1e-5;

double MaxAbsDiff(const std::vector<double>& got, const std::vector<float>& expected) {
  EXPECT_EQ(got.size(), expected.size());
  if (got.size() != expected.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - expected[i]));
  return worst;
}

void CheckVariant(const std::string& variant) {
  auto weights = LoadCheckpoint(golden::GoldenPath(variant + ".safetensors"));
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  auto model = mogface::MogFaceModel::Create(*weights);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  for (const std::string suffix : {"_64x96", "_65x97_nopad"}) {
    SCOPED_TRACE(variant + suffix);
    const golden::Golden g = golden::ReadGolden(variant + suffix);
    auto plan = LayerPlan::Create((*model)->network(), g.padded_height, g.padded_width);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    const std::vector<double> input = NormalizePlanar((*model)->network()->normalization(),
                                                      g.picture, g.padded_width, g.padded_height);
    auto out = RunReference(*plan, (*model)->weights(), input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const double conf = MaxAbsDiff(out->scores, g.conf), loc = MaxAbsDiff(out->boxes, g.loc);
    std::printf("%s%s: FP64 executor vs FP32 reference max|dconf| %.2e max|dloc| %.2e\n",
                variant.c_str(), suffix.c_str(), conf, loc);
    EXPECT_LE(conf, kTolerance);
    EXPECT_LE(loc, kTolerance);
  }
}

TEST(ReferenceExecutorParity, R101MatchesThePythonReference) {
  CheckVariant("R101");
}
TEST(ReferenceExecutorParity, EMatchesThePythonReference) {
  CheckVariant("E");
}
TEST(ReferenceExecutorParity, R50MatchesThePythonReference) {
  CheckVariant("R50");
}

// The SSD's plan against tests/reference/ssd_ref.py (FP64, BatchNorm unfolded, the full class
// head) on the top-left 512x512 of a real photo: the wiring of the SSD as written once.
TEST(ReferenceExecutorParity, SsdMatchesThePythonReference) {
  auto model = SsdModel::Load(MOGSERVE_TEST_MODEL_DIR);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto rgb = ReadFileBytes(golden::GoldenPath("ssd_grace_hopper.rgb"));
  auto bin = ReadFileBytes(golden::GoldenPath("ssd_grace_hopper.bin"));
  ASSERT_TRUE(rgb.ok() && bin.ok());
  image::Image picture(512, 512);
  picture.data = *rgb;
  ASSERT_EQ(bin->size(), size_t{kSsdAnchorCount} * 5 * 8);
  std::vector<double> want(bin->size() / 8);
  std::memcpy(want.data(), bin->data(), bin->size());
  auto plan = LayerPlan::Create((*model)->network(), 512, 512);
  ASSERT_TRUE(plan.ok());
  auto out = RunReference(*plan, (*model)->weights(),
                          NormalizePlanar((*model)->network()->normalization(), picture, 512, 512));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  double scores = 0, boxes = 0;
  for (int i = 0; i < kSsdAnchorCount; ++i) {
    scores = std::max(scores, std::abs(out->scores[i] - want[i]));
    for (int k = 0; k < 4; ++k) {
      boxes = std::max(boxes, std::abs(out->boxes[4 * i + k] - want[kSsdAnchorCount + 4 * i + k]));
    }
  }
  std::printf("SSD: FP64 executor vs FP64 reference max|dscore| %.2e max|dbox| %.2e\n", scores,
              boxes);
  // Both FP64; the executor's BatchNorm is folded into float32 weights, the reference's not.
  EXPECT_LE(scores, 1e-5);
  EXPECT_LE(boxes, 1e-4);
}

// face-api's landmark net as written once in model/face_landmark_68.cpp against
// tests/reference/landmark68_ref.py (FP64, written from face-api's TypeScript: the 7x7 average
// pool before the fully connected layer, the plan's averaging of its 49 cells after it) on
// Grace Hopper's face: the 68 points the two give.
TEST(ReferenceExecutorParity, Landmark68MatchesThePythonReference) {
  auto model = FaceLandmark68Model::Load(std::string(MOGSERVE_MODELS_DIR) + "/" + kLandmark68Folder);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto rgb = ReadFileBytes(golden::GoldenPath("landmark68_grace_hopper.rgb"));
  auto bin = ReadFileBytes(golden::GoldenPath("landmark68_grace_hopper.bin"));
  ASSERT_TRUE(rgb.ok() && bin.ok());
  ASSERT_EQ(bin->size(), size_t{2 * kLandmark68Points} * 8);
  std::vector<double> want(2 * kLandmark68Points);
  std::memcpy(want.data(), bin->data(), bin->size());
  image::Image crop(kLandmark68InputSide, kLandmark68InputSide);
  crop.data = *rgb;
  auto plan = LayerPlan::Create((*model)->network(), kLandmark68InputSide, kLandmark68InputSide);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto out = RunReference(*plan, (*model)->weights(),
                          NormalizePlanar((*model)->network()->normalization(), crop,
                                          kLandmark68InputSide, kLandmark68InputSide));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<float> raw(out->raw.begin(), out->raw.end());
  const std::vector<Point> points = Points68(raw);
  ASSERT_EQ(points.size(), size_t{kLandmark68Points});
  double worst = 0;
  for (int i = 0; i < kLandmark68Points; ++i) {
    worst = std::max({worst, std::abs(points[i].x - want[2 * i]),
                      std::abs(points[i].y - want[2 * i + 1])});
  }
  std::printf("landmark net: FP64 executor vs FP64 reference max|dpoint| %.2e (of the crop)\n",
              worst);
  // Both FP64 over float32 weights; the points are stored as float (1e-7 of a crop).
  EXPECT_LE(worst, 1e-6);
}

}  // namespace
}  // namespace mogserve::model
