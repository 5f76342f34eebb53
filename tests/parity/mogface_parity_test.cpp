// C++ MogFace against the independent Python reference (tests/reference/), on seeded synthetic
// checkpoints and images that tests/reference/make_golden.sh writes before these tests run.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "model/checkpoint_loader.h"
#include "model/mogface/mogface_net.h"
#include "model/mogface/mogface_postprocess.h"
#include "model/mogface/mogface_preprocess.h"

namespace mogserve::model::mogface {
namespace {

// FP32 parity bound on conf and loc. The reference's own FP32-vs-FP64 error is 3.4e-6
// (tests/reference/README.md); oneDNN's channels-last summation order adds about as much.
constexpr float kFp32Tolerance = 1e-4f;
// BF16 keeps 8 mantissa bits. Measured max |Δ| vs the FP32 reference on these synthetic
// networks (2026-12-02): conf 0.015-0.037, loc 0.006-0.022 (R50 worst); bounds ~1.6x that.
constexpr float kBf16ConfTolerance = 0.06f;
constexpr float kBf16LocTolerance = 0.035f;

std::string GoldenPath(const std::string& name) {
  return std::string(MOGSERVE_GOLDEN_DIR) + "/" + name;
}

struct Golden {
  int height = 0, width = 0;                // the picture
  int padded_height = 0, padded_width = 0;  // the network input
  image::Image picture;
  std::vector<float> conf, loc;
  nlohmann::json meta;  // the sidecar: post-processing options and the reference's detections
};

Golden ReadGolden(const std::string& stem) {
  Golden g;
  std::ifstream json_file(GoldenPath(stem + ".json"));
  g.meta = nlohmann::json::parse(json_file);
  const nlohmann::json& meta = g.meta;
  g.height = meta["image"]["height"];
  g.width = meta["image"]["width"];
  g.padded_height = meta["input_shape"][2];
  g.padded_width = meta["input_shape"][3];
  auto rgb = ReadFileBytes(GoldenPath(stem + ".rgb"));
  EXPECT_TRUE(rgb.ok()) << rgb.status().ToString();
  g.picture = image::Image(g.width, g.height);
  if (rgb.ok()) g.picture.data = *rgb;
  auto bin = ReadFileBytes(GoldenPath(stem + ".bin"));
  EXPECT_TRUE(bin.ok()) << bin.status().ToString();
  if (!bin.ok()) return g;
  std::vector<float> all(bin->size() / 4);
  std::memcpy(all.data(), bin->data(), all.size() * 4);
  const size_t anchors = all.size() / 5;  // conf (S x 1) then loc (S x 4)
  g.conf.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(anchors));
  g.loc.assign(all.begin() + static_cast<std::ptrdiff_t>(anchors), all.end());
  return g;
}

float MaxAbsDiff(const at::Tensor& t, const std::vector<float>& expected) {
  const at::Tensor flat = t.contiguous().view({-1});
  EXPECT_EQ(static_cast<size_t>(flat.numel()), expected.size());
  if (static_cast<size_t>(flat.numel()) != expected.size()) return INFINITY;
  const float* p = flat.data_ptr<float>();
  float worst = 0;
  for (size_t i = 0; i < expected.size(); ++i)
    worst = std::max(worst, std::abs(p[i] - expected[i]));
  return worst;
}

MogFaceOutputs RunNet(const MogFaceNet& net, const Golden& g) {
  std::vector<float> input = NormalizeAndPad(g.picture, g.padded_width, g.padded_height);
  const at::Tensor x =
      at::from_blob(input.data(), {1, 3, g.padded_height, g.padded_width}, at::kFloat).clone();
  auto out = net.Forward(x);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : MogFaceOutputs{};
}

std::unique_ptr<MogFaceNet> Load(const std::string& file, at::ScalarType dtype) {
  auto weights = LoadCheckpoint(GoldenPath(file));
  EXPECT_TRUE(weights.ok()) << weights.status().ToString();
  if (!weights.ok()) return nullptr;
  MogFaceOptions options;
  options.dtype = dtype;
  auto net = MogFaceNet::Create(*weights, options);
  EXPECT_TRUE(net.ok()) << net.status().ToString();
  return net.ok() ? std::move(net).value() : nullptr;
}

MogFacePostOptions PostOptions(const Golden& g) {
  const nlohmann::json& post = g.meta["postprocess"];
  MogFacePostOptions options;
  options.score_threshold = post["score_threshold"];
  options.top_k = post["top_k"];
  options.nms_iou = post["nms_iou"];
  options.max_faces = post["max_detections"];
  return options;
}

// The reference's post-processed faces, in order, within the given tolerances.
void ExpectReferenceFaces(const Golden& g, const std::vector<Detection>& faces, float box_px,
                          float score) {
  const nlohmann::json& boxes = g.meta["detections"]["boxes"];
  const nlohmann::json& scores = g.meta["detections"]["scores"];
  ASSERT_EQ(faces.size(), boxes.size());
  ASSERT_GT(faces.size(), 0u);
  for (size_t i = 0; i < faces.size(); ++i) {
    EXPECT_NEAR(faces[i].score, scores[i].get<float>(), score) << "face " << i;
    const float expected[4] = {boxes[i][0], boxes[i][1], boxes[i][2], boxes[i][3]};
    const float got[4] = {faces[i].x1, faces[i].y1, faces[i].x2, faces[i].y2};
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(got[k], expected[k], box_px) << "face " << i;
  }
}

// FP32 within kFp32Tolerance at an even padded size and an odd unpadded one (the FPN's crop);
// BF16 within its bounds; prints the measured differences.
void CheckVariant(const std::string& variant) {
  const std::unique_ptr<MogFaceNet> fp32 = Load(variant + ".safetensors", at::kFloat);
  const std::unique_ptr<MogFaceNet> bf16 = Load(variant + ".safetensors", at::kBFloat16);
  ASSERT_TRUE(fp32 && bf16);
  for (const std::string suffix : {"_64x96", "_65x97_nopad"}) {
    SCOPED_TRACE(variant + suffix);
    const Golden g = ReadGolden(variant + suffix);
    const MogFaceOutputs a = RunNet(*fp32, g);
    const float conf = MaxAbsDiff(a.conf, g.conf), loc = MaxAbsDiff(a.loc, g.loc);
    EXPECT_LE(conf, kFp32Tolerance);
    EXPECT_LE(loc, kFp32Tolerance);
    // End to end in C++ (network + post-processing): the reference's detections.
    const std::vector<float> anchors =
        MogFaceAnchors(g.padded_height, g.padded_width, fp32->variant());
    const at::Tensor c = a.conf.contiguous(), l = a.loc.contiguous();
    ExpectReferenceFaces(
        g,
        PostprocessMogFace({c.data_ptr<float>(), static_cast<size_t>(c.numel())},
                           {l.data_ptr<float>(), static_cast<size_t>(l.numel())}, anchors,
                           g.meta["resize_scale"].get<float>(), PostOptions(g)),
        /*box_px=*/0.01f, /*score=*/1e-4f);
    const MogFaceOutputs b = RunNet(*bf16, g);
    const float conf16 = MaxAbsDiff(b.conf, g.conf), loc16 = MaxAbsDiff(b.loc, g.loc);
    EXPECT_LE(conf16, kBf16ConfTolerance);
    EXPECT_LE(loc16, kBf16LocTolerance);
    std::printf("%s%s: fp32 max|dconf| %.2e max|dloc| %.2e; bf16 %.2e %.2e\n", variant.c_str(),
                suffix.c_str(), conf, loc, conf16, loc16);
  }
}

// Anchors, decoding, threshold, top-k, +1-area NMS and the cap, on the reference's own conf/loc:
// the C++ post-processing must keep the same faces in the same order with the same boxes.
void CheckPostprocess(const std::string& stem, Variant variant) {
  SCOPED_TRACE(stem);
  const Golden g = ReadGolden(stem);
  const std::vector<float> anchors = MogFaceAnchors(g.padded_height, g.padded_width, variant);
  ASSERT_EQ(anchors.size(), g.conf.size() * 4);
  // Same inputs as the reference: only exp() and NMS order could differ, and must not.
  ExpectReferenceFaces(g,
                       PostprocessMogFace(g.conf, g.loc, anchors,
                                          g.meta["resize_scale"].get<float>(), PostOptions(g)),
                       /*box_px=*/1e-3f, /*score=*/0.0f);
}

TEST(MogFaceParity, PostprocessingMatchesTheReference) {
  for (const auto& [name, variant] :
       {std::pair{"R101", Variant::kR101}, std::pair{"E", Variant::kE},
        std::pair{"R50", Variant::kR50}}) {
    CheckPostprocess(std::string(name) + "_64x96", variant);
    CheckPostprocess(std::string(name) + "_65x97_nopad", variant);
  }
}

TEST(MogFaceParity, R101MatchesTheReference) {
  CheckVariant("R101");
}
TEST(MogFaceParity, EMatchesTheReference) {
  CheckVariant("E");
}
TEST(MogFaceParity, R50MatchesTheReference) {
  CheckVariant("R50");
}

// The same weights through every checkpoint form give the same network: safetensors, a plain
// torch.save zip, and a zip wrapped under "net" with "module." keys (as DataParallel saves).
TEST(MogFaceParity, CheckpointFormatsGiveIdenticalOutputs) {
  const Golden g = ReadGolden("R50_64x96");
  std::vector<MogFaceOutputs> outs;
  for (const char* file : {"R50.safetensors", "R50.pt", "R50_wrapped.pt"}) {
    SCOPED_TRACE(file);
    const std::unique_ptr<MogFaceNet> net = Load(file, at::kFloat);
    ASSERT_TRUE(net);
    outs.push_back(RunNet(*net, g));
  }
  for (size_t i = 1; i < outs.size(); ++i) {
    EXPECT_TRUE(at::equal(outs[0].conf, outs[i].conf));
    EXPECT_TRUE(at::equal(outs[0].loc, outs[i].loc));
  }
}

}  // namespace
}  // namespace mogserve::model::mogface
