// The CPU engine's MogFace (the plan-based LibTorch backend) against the independent Python
// reference (tests/reference/), on seeded synthetic checkpoints and images that
// tests/reference/make_golden.sh writes before these tests run.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "api/serving_stack.h"
#include "engine/engine.h"
#include "golden.h"
#include "image/decode.h"
#include "model/mogface/mogface_postprocess.h"
#include "pipeline/prepared_image.h"
#include "pipeline/shape_buckets.h"

#include "support/cpu_skip.h"

namespace mogserve::model::mogface {
namespace {

using engine::BatchOutputs;
using engine::Precision;
using golden::Golden;
using golden::GoldenPath;
using golden::ReadGolden;

// FP32 parity bound on conf and loc. The reference's own FP32-vs-FP64 error is 3.4e-6
// (tests/reference/README.md); oneDNN's channels-last summation order adds about as much.
constexpr float kFp32Tolerance = 1e-4f;
// BF16 keeps 8 mantissa bits. Measured max |Δ| vs the FP32 reference on these synthetic
// networks (2026-12-02): conf 0.015-0.037, loc 0.006-0.022 (R50 worst); bounds ~1.6x that.
constexpr float kBf16ConfTolerance = 0.06f;
constexpr float kBf16LocTolerance = 0.035f;

float MaxAbsDiff(const std::vector<float>& got, const std::vector<float>& expected) {
  EXPECT_EQ(got.size(), expected.size());
  if (got.size() != expected.size()) return INFINITY;
  float worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - expected[i]));
  }
  return worst;
}

// The golden picture at the top-left of its padded input, through the engine (which zeroes the
// padding after normalisation, as the reference pads its normalised tensor).
BatchOutputs RunEngine(engine::Engine& e, const Golden& g) {
  const image::Letterbox box =
      image::PlaceLetterbox(g.width, g.height, g.width, g.height, g.padded_width, g.padded_height);
  const image::Image canvas = image::RenderLetterbox(g.picture, box);
  engine::CanvasBatch batch;
  batch.width = g.padded_width;
  batch.height = g.padded_height;
  batch.canvases = {canvas.data.data()};
  batch.geometry = {box};
  auto out = e.Forward(batch);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? std::move(out).value() : BatchOutputs{};
}

std::unique_ptr<engine::Engine> Load(const std::string& file, Precision precision) {
  api::EngineSetup options;
  options.model.spec = model::FindModel("mogface").value();
  options.model.source.weights = GoldenPath(file);
  options.engine.precision = precision;
  auto e = api::LoadEngine(options.model, options.engine);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e).value() : nullptr;
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

// FP32 within kFp32Tolerance at an even padded size and an odd unpadded one (the FPN's crop);
// BF16 within its bounds; prints the measured differences.
void CheckVariant(const std::string& variant) {
  const std::unique_ptr<engine::Engine> fp32 = Load(variant + ".safetensors", Precision::kFp32);
  // BF16 where the CPU runs it (the FP32 checks run everywhere; the test is then marked
  // skipped, naming what the CPU lacks).
  const std::string no_bf16 = ::mogserve::testing::NoBf16Reason();
  const std::unique_ptr<engine::Engine> bf16 =
      no_bf16.empty() ? Load(variant + ".safetensors", Precision::kBf16) : nullptr;
  ASSERT_TRUE(fp32 && (bf16 || !no_bf16.empty()));
  for (const std::string suffix : {"_64x96", "_65x97_nopad"}) {
    SCOPED_TRACE(variant + suffix);
    const Golden g = ReadGolden(variant + suffix);
    const BatchOutputs a = RunEngine(*fp32, g);
    const float conf = MaxAbsDiff(a.scores, g.conf), loc = MaxAbsDiff(a.box_encodings, g.loc);
    EXPECT_LE(conf, kFp32Tolerance);
    EXPECT_LE(loc, kFp32Tolerance);
    // End to end in C++ (network + post-processing): the reference's detections.
    const std::vector<float> anchors =
        MogFaceAnchors(g.padded_height, g.padded_width, *ParseVariant(variant));
    golden::ExpectReferenceFaces(
        g,
        PostprocessMogFace(a.scores, a.box_encodings, anchors, g.meta["resize_scale"].get<float>(),
                           PostOptions(g)),
        /*box_px=*/0.01f, /*score=*/1e-4f);
    if (!bf16) {
      std::printf("%s%s: fp32 max|dconf| %.2e max|dloc| %.2e\n", variant.c_str(), suffix.c_str(),
                  conf, loc);
      continue;
    }
    const BatchOutputs b = RunEngine(*bf16, g);
    const float conf16 = MaxAbsDiff(b.scores, g.conf), loc16 = MaxAbsDiff(b.box_encodings, g.loc);
    EXPECT_LE(conf16, kBf16ConfTolerance);
    EXPECT_LE(loc16, kBf16LocTolerance);
    std::printf("%s%s: fp32 max|dconf| %.2e max|dloc| %.2e; bf16 %.2e %.2e\n", variant.c_str(),
                suffix.c_str(), conf, loc, conf16, loc16);
  }
  if (!bf16) GTEST_SKIP() << "FP32 checked; the BF16 part skipped: " << no_bf16;
}

// Anchors, decoding, threshold, top-k, +1-area NMS and the cap, on the reference's own conf/loc:
// the C++ post-processing must keep the same faces in the same order with the same boxes.
void CheckPostprocess(const std::string& stem, Variant variant) {
  SCOPED_TRACE(stem);
  const Golden g = ReadGolden(stem);
  const std::vector<float> anchors = MogFaceAnchors(g.padded_height, g.padded_width, variant);
  ASSERT_EQ(anchors.size(), g.conf.size() * 4);
  // Same inputs as the reference: only exp() and NMS order could differ, and must not.
  golden::ExpectReferenceFaces(
      g,
      PostprocessMogFace(g.conf, g.loc, anchors, g.meta["resize_scale"].get<float>(),
                         PostOptions(g)),
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
  std::vector<BatchOutputs> outs;
  for (const char* file : {"R50.safetensors", "R50.pt", "R50_wrapped.pt"}) {
    SCOPED_TRACE(file);
    const std::unique_ptr<engine::Engine> e = Load(file, Precision::kFp32);
    ASSERT_TRUE(e);
    outs.push_back(RunEngine(*e, g));
  }
  for (size_t i = 1; i < outs.size(); ++i) {
    EXPECT_EQ(outs[0].scores, outs[i].scores);
    EXPECT_EQ(outs[0].box_encodings, outs[i].box_encodings);
  }
}

// --input-policy modelscope against ModelScope's steps in the reference (modelscope_golden.py):
// exact size, cv2.resize over 1500 px, boxes divided by its factor. mogserve clips boxes to the
// picture (ModelScope does not): the reference's are clipped the same way here.
void CheckModelScopePolicy(const std::string& stem, const std::string& photo, int crop_x,
                           int crop_y) {
  SCOPED_TRACE(stem);
  std::ifstream json_file(GoldenPath(stem + ".json"));
  nlohmann::json meta = nlohmann::json::parse(json_file);
  const int width = meta["image"]["width"], height = meta["image"]["height"];
  auto bytes = ReadFileBytes(std::string(MOGSERVE_TEST_DATA_DIR) + "/photos/" + photo);
  ASSERT_TRUE(bytes.ok());
  const pipeline::ShapeBuckets buckets = pipeline::ShapeBuckets::ModelScope(32);
  pipeline::PreparedImage prepared;
  if (crop_x < 0) {  // the whole photo, bytes to canvas as the pipeline prepares it
    auto p = pipeline::PrepareImage(*bytes, buckets, {});
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    prepared = std::move(*p);
  } else {  // a crop of the decoded photo: an odd size
    auto decoded = image::Decode(*bytes, {});
    ASSERT_TRUE(decoded.ok());
    image::Image crop(width, height);
    for (int y = 0; y < height; ++y) {
      std::memcpy(crop.pixel(0, y), decoded->image.pixel(crop_x, crop_y + y), width * 3);
    }
    const pipeline::ShapeBuckets::Placement placed = buckets.Place(width, height);
    prepared.bucket = placed.bucket;
    prepared.letterbox = placed.letterbox;
    prepared.canvas = image::RenderLetterbox(crop, placed.letterbox);
  }
  EXPECT_EQ(prepared.canvas.width, meta["input_hw"][1].get<int>());
  EXPECT_EQ(prepared.canvas.height, meta["input_hw"][0].get<int>());
  const std::unique_ptr<engine::Engine> e = Load("R50.safetensors", Precision::kFp32);
  ASSERT_TRUE(e);
  engine::CanvasBatch batch;
  batch.width = buckets.shape(prepared.bucket).width;
  batch.height = buckets.shape(prepared.bucket).height;
  batch.canvases = {prepared.canvas.data.data()};
  batch.geometry = {prepared.letterbox};
  auto out = e->Forward(batch);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  DetectOptions options = e->model()->default_detect_options();
  options.score_threshold = meta["postprocess"]["score_threshold"];
  const std::vector<Detection> faces =
      e->model()->Postprocess(out->rows_of(0, prepared.letterbox), options);
  nlohmann::json& boxes = meta["detections"]["boxes"];
  nlohmann::json kept_boxes = nlohmann::json::array(), kept_scores = nlohmann::json::array();
  for (size_t i = 0; i < boxes.size(); ++i) {
    std::array<float, 4> b;
    for (int k = 0; k < 4; ++k) {
      b[k] = std::clamp(boxes[i][k].get<float>(), 0.0f, static_cast<float>(k % 2 ? height : width));
    }
    if (b[2] > b[0] && b[3] > b[1]) {
      kept_boxes.push_back(b);
      kept_scores.push_back(meta["detections"]["scores"][i]);
    }
  }
  Golden g;
  g.meta["detections"] = {{"boxes", kept_boxes}, {"scores", kept_scores}};
  std::printf("%s: %zu faces (reference %zu before clipping)\n", stem.c_str(), faces.size(),
              boxes.size());
  golden::ExpectReferenceFaces(g, faces, /*box_px=*/0.01f, /*score=*/1e-4f);
}

TEST(MogFaceParity, ModelScopePolicyOnAnOddSizedPicture) {
  CheckModelScopePolicy("modelscope_odd", "grace_hopper.jpg", 3, 1);
}

TEST(MogFaceParity, ModelScopePolicyOnAPhotoResizedByCv2) {
  CheckModelScopePolicy("modelscope_resized", "sample1.jpg", -1, -1);
}

}  // namespace
}  // namespace mogserve::model::mogface
