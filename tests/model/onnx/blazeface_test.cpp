// MediaPipe BlazeFace's post-processing (model/onnx/blazeface.h): the anchor grids and their
// order, the weighted NMS worked out by hand, and the whole path on real photos — the npm files
// imported into the network plan, run by the FP64 reference executor, decoded, mapped back to
// the photo — against the hand-checked faces of tests/data.
#include "model/onnx/blazeface.h"

#include <gtest/gtest.h>

#include "model/onnx/blazeface_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "image/decode.h"
#include "image/resize.h"
#include "model/input_normalization.h"
#include "model/layer_plan.h"
#include "model/onnx/onnx_network.h"
#include "model/prepared_weights.h"
#include "model/reference/reference_executor.h"

namespace mogserve::model::onnx {
namespace {

TEST(BlazeFace, AnchorGridsInTheModelsRowOrder) {
  for (const BlazeFaceConfig& c : {BlazeFaceFront(), BlazeFaceBack()}) {
    const auto anchors = BlazeFaceAnchors(c);
    ASSERT_EQ(anchors.size(), 896u);  // 16 x 16 x 2 + 8 x 8 x 6
    // Cell (0, 0) of the 16 x 16 grid twice, then cell (0, 1).
    EXPECT_FLOAT_EQ(anchors[0][0], 0.5f / 16);
    EXPECT_EQ(anchors[1], anchors[0]);
    EXPECT_FLOAT_EQ(anchors[2][0], 1.5f / 16);
    EXPECT_FLOAT_EQ(anchors[2][1], 0.5f / 16);
    // The last cell of the 16 x 16 grid, then six anchors per cell of the 8 x 8 one.
    EXPECT_FLOAT_EQ(anchors[511][0], 15.5f / 16);
    EXPECT_FLOAT_EQ(anchors[511][1], 15.5f / 16);
    for (int a = 512; a < 518; ++a)
      EXPECT_EQ(anchors[a], (std::array<float, 2>{0.5f / 8, 0.5f / 8}));
    EXPECT_FLOAT_EQ(anchors[518][0], 1.5f / 8);
  }
}

// Regressors of anchor i: a box of w x h pixels centred dx, dy pixels off the anchor, keypoint k
// at (k, −k) pixels off it.
void SetBox(std::vector<float>& r, int i, float dx, float dy, float w, float h) {
  float* p = r.data() + i * 16;
  p[0] = dx;
  p[1] = dy;
  p[2] = w;
  p[3] = h;
  for (int k = 0; k < kBlazeFaceKeypoints; ++k) {
    p[4 + 2 * k] = static_cast<float>(k);
    p[5 + 2 * k] = -static_cast<float>(k);
  }
}

TEST(BlazeFace, WeightedNmsAveragesEachClusterByScore) {
  const BlazeFaceConfig c = BlazeFaceFront();
  std::vector<float> logits(896, -10.0f), regressors(896 * 16, 0.0f);
  // Anchors 0 and 1 share the centre (4, 4) px: boxes 20 x 20 at x = 4 and x = 6 (IoU 0.82),
  // scores sigmoid(2) = 0.881 and sigmoid(1) = 0.731; anchor 600 a lone 10 x 10 face.
  logits[0] = 2;
  SetBox(regressors, 0, 0, 0, 20, 20);
  logits[1] = 1;
  SetBox(regressors, 1, 2, 0, 20, 20);
  logits[600] = 0.5f;  // 0.622
  SetBox(regressors, 600, 0, 0, 10, 10);
  logits[700] = 0.2f;  // 0.550: below a 0.6 threshold
  const auto faces = DecodeBlazeFace(c, logits, regressors, 0.6f, 0.3f);
  ASSERT_EQ(faces.size(), 2u);
  const float s0 = 1 / (1 + std::exp(-2.0f)), s1 = 1 / (1 + std::exp(-1.0f));
  const float x_mean = (s0 * 4 + s1 * 6) / (s0 + s1);  // the centres, weighted
  EXPECT_NEAR(faces[0].score, s0, 1e-6);               // the best score stays
  EXPECT_NEAR(faces[0].x1, x_mean - 10, 1e-4);
  EXPECT_NEAR(faces[0].x2, x_mean + 10, 1e-4);
  EXPECT_NEAR(faces[0].y1, 4 - 10, 1e-4);
  EXPECT_NEAR(faces[0].keypoints[2][0], 4 + 2, 1e-4);  // both clusters' keypoint 2 at +2, −2
  EXPECT_NEAR(faces[0].keypoints[2][1], 4 - 2, 1e-4);
  // Anchor 600: the 8 x 8 grid's cell 88 / 6 = 14 (row 1, column 6), centre (104, 24) px.
  EXPECT_NEAR(faces[1].x1, 104 - 5, 1e-4);
  EXPECT_NEAR(faces[1].y1, 24 - 5, 1e-4);
  // With NMS at 0.9 the two overlapping boxes stay apart.
  EXPECT_EQ(DecodeBlazeFace(c, logits, regressors, 0.6f, 0.9f).size(), 3u);
  EXPECT_EQ(DecodeBlazeFace(c, logits, regressors, 0.6f, 0.9f, 1).size(), 1u);
}

// The five landmarks: BlazeFace's eyes (its right eye is the picture's left) and nose tip, and
// mouth corners on the eye line's direction through its mouth centre, 0.828 eye distances apart
// (ArcFace's template), whatever the face's roll.
TEST(BlazeFace, FiveLandmarksFromTheSixKeypoints) {
  BlazeFaceDetection face;
  // A face rolled by 90 degrees: the eyes one above the other.
  face.keypoints = {{{40, 10}, {40, 30}, {30, 20}, {20, 20}, {45, 0}, {45, 40}}};
  const std::vector<Point> p = FiveLandmarks(face);
  ASSERT_EQ(p.size(), static_cast<size_t>(kNumLandmarks));
  EXPECT_EQ(p[kLeftEye].x, 40);
  EXPECT_EQ(p[kLeftEye].y, 10);
  EXPECT_EQ(p[kRightEye].y, 30);
  EXPECT_EQ(p[kNose].x, 30);
  const float half = 0.5f * 29.1806f / 35.2372f * 20;  // eye distance 20
  EXPECT_FLOAT_EQ(p[kLeftMouth].x, 20);
  EXPECT_FLOAT_EQ(p[kLeftMouth].y, 20 - half);
  EXPECT_FLOAT_EQ(p[kRightMouth].x, 20);
  EXPECT_FLOAT_EQ(p[kRightMouth].y, 20 + half);
}

struct Truth {
  std::string photo;
  std::vector<std::array<float, 4>> faces;
};

std::vector<Truth> GroundTruth() {
  std::ifstream in(std::string(MOGSERVE_TEST_DATA_DIR) + "/ground_truth.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<Truth> truths;
  for (const auto& [photo, boxes] : j.items()) {
    if (photo.front() == '_') continue;
    Truth t{photo, {}};
    for (const auto& b : boxes) t.faces.push_back(b.get<std::array<float, 4>>());
    truths.push_back(std::move(t));
  }
  return truths;
}

float BoxIoU(const std::array<float, 4>& a, const std::array<float, 4>& b) {
  const float w = std::min(a[2], b[2]) - std::max(a[0], b[0]);
  const float h = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  if (w <= 0 || h <= 0) return 0;
  const float inter = w * h;
  return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter);
}

// The back model on every test photo, letterboxed into 256 x 256 as mogserve's pipeline does,
// run by the reference executor, decoded at MediaPipe's thresholds and mapped back.
TEST(BlazeFace, BackModelFindsTheFacesOfTheTestPhotos) {
  auto graph = ReadModel(std::string(MOGSERVE_MODELS_DIR) +
                         "/blazeface/face_detection_back_256x256_barracuda.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  auto sg = StaticGraph::Infer(std::make_shared<const Graph>(std::move(*graph)), 1, 256, 256);
  ASSERT_TRUE(sg.ok()) << sg.status().ToString();
  InputNormalization norm;
  for (int c = 0; c < 3; ++c) norm.mean[c] = norm.divisor[c] = 127.5;
  auto imported = ImportNetwork(*sg, "blazeface", norm);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  auto plan = LayerPlan::Create(imported->network, 256, 256);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto weights = PrepareWeights(*imported->network, imported->weights, "blazeface");
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  const BlazeFaceConfig config = BlazeFaceBack();
  int found = 0, truths = 0, false_faces = 0;
  for (const Truth& t : GroundTruth()) {
    std::ifstream in(std::string(MOGSERVE_TEST_DATA_DIR) + "/photos/" + t.photo, std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    auto decoded = image::Decode(bytes);
    ASSERT_TRUE(decoded.ok()) << t.photo;
    const image::Image& photo = decoded->image;
    const image::Letterbox box = image::FitLetterbox(photo.width, photo.height, 256, 256);
    const image::Image canvas = image::RenderLetterbox(photo, box);
    auto out = RunReference(*plan, *weights, NormalizePlanar(norm, canvas, 256, 256));
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const std::vector<float> raw(out->raw.begin(), out->raw.end());
    const auto bounds = plan->raw_bounds();
    // Outputs: logits of the 16 x 16 and 8 x 8 grids, then their regressors.
    std::vector<float> logits = GraphOutput(imported->outputs[0], raw, bounds);
    const std::vector<float> logits8 = GraphOutput(imported->outputs[1], raw, bounds);
    logits.insert(logits.end(), logits8.begin(), logits8.end());
    std::vector<float> regressors = GraphOutput(imported->outputs[2], raw, bounds);
    const std::vector<float> regressors8 = GraphOutput(imported->outputs[3], raw, bounds);
    regressors.insert(regressors.end(), regressors8.begin(), regressors8.end());
    const auto faces =
        DecodeBlazeFace(config, logits, regressors, config.score_threshold, config.nms_iou);
    std::vector<bool> matched(t.faces.size(), false);
    for (const BlazeFaceDetection& f : faces) {
      const std::array<float, 4> b = {
          static_cast<float>(f.x1 * box.to_source_x), static_cast<float>(f.y1 * box.to_source_y),
          static_cast<float>(f.x2 * box.to_source_x), static_cast<float>(f.y2 * box.to_source_y)};
      bool hit = false;
      for (size_t g = 0; g < t.faces.size(); ++g) {
        if (!matched[g] && BoxIoU(b, t.faces[g]) >= 0.3f) matched[g] = hit = true;
      }
      false_faces += !hit;
      std::printf("%s: face %.0f,%.0f,%.0f,%.0f score %.3f %s\n", t.photo.c_str(), b[0], b[1], b[2],
                  b[3], f.score, hit ? "matches" : "FALSE");
    }
    truths += static_cast<int>(t.faces.size());
    found += static_cast<int>(std::count(matched.begin(), matched.end(), true));
  }
  std::printf("blazeface back: %d of %d faces, %d false\n", found, truths, false_faces);
  // Measured: 23 of 25 (the two missed are among the smallest, ~150 px wide in a 1920 px photo:
  // ~20 px in the 256² canvas), none false.
  EXPECT_EQ(truths, 25);
  EXPECT_GE(found, 22);
  EXPECT_LE(false_faces, 1);
}

}  // namespace
}  // namespace mogserve::model::onnx
