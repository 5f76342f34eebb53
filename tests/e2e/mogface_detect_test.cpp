// End-to-end tests of `mogserve detect --model mogface`: the real binary with deterministic
// synthetic weights (no checkpoint can be downloaded here), its input policies, and the errors
// of every MogFace flag.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "e2e_support.h"
#include "image/decode.h"
#include "image/encode.h"
#include "image/resize.h"

namespace mogserve::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A real photo scaled to width x height, written as PNG under `dir`.
std::string SmallPhoto(const TempDir& dir, const std::string& name, int width, int height) {
  auto decoded = image::Decode(ReadBytes(PhotoPath(name)));
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  auto png = image::EncodePng(image::Resize(decoded->image, width, height));
  EXPECT_TRUE(png.ok());
  const fs::path path = dir.path() / (fs::path(name).stem().string() + ".png");
  WriteBytes(path, *png);
  return path.string();
}

ProcessResult RunMogFace(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"detect", "--model", "mogface", "--synthetic-weights", "r50"};
  all.insert(all.end(), args.begin(), args.end());
  return RunMogserve(all);
}

TEST(MogFaceDetectE2E, BucketPolicyReportsFacesInOriginalPixels) {
  TempDir tmp;
  const std::string landscape = SmallPhoto(tmp, "sample1.jpg", 300, 200);
  const std::string portrait = SmallPhoto(tmp, "grace_hopper.jpg", 120, 140);
  const ProcessResult r =
      RunMogFace({landscape, portrait, "--target-size", "128", "--score-threshold", "0",
                  "--max-faces", "7", "--timing", "--batch-size", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "random weights (seed 1), so the detections are meaningless"))
      << r.err;
  const std::vector<json> lines = ParseJsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const std::pair<int, int> sizes[2] = {{300, 200}, {120, 140}};
  for (int i = 0; i < 2; ++i) {
    const json& line = lines[i];
    SCOPED_TRACE(line.dump());
    EXPECT_EQ(line["width"], sizes[i].first);
    EXPECT_EQ(line["height"], sizes[i].second);
    ASSERT_EQ(line["faces"].size(), 7u);  // threshold 0: max_faces decides
    double max_x2 = 0;
    for (const json& face : line["faces"]) {
      const json& b = face["box"];
      EXPECT_GE(b[0].get<double>(), 0.0);
      EXPECT_LT(b[0].get<double>(), b[2].get<double>());
      EXPECT_LE(b[2].get<double>(), sizes[i].first);
      EXPECT_LE(b[3].get<double>(), sizes[i].second);
      max_x2 = std::max(max_x2, b[2].get<double>());
    }
    // The landscape picture ran at 128 px wide: boxes are mapped back beyond that.
    if (i == 0) {
      EXPECT_GT(max_x2, 128.0);
    }
    // Two different buckets (128x96 and 96x128): each image ran alone.
    EXPECT_EQ(line["timing"]["batch_size"], 1);
  }
}

// A picture whose size already is a bucket runs unchanged under both policies: the same canvas,
// so the same detections, to the last digit.
TEST(MogFaceDetectE2E, ModelScopeAndBucketAgreeWhenNothingIsResized) {
  TempDir tmp;
  const std::string photo = SmallPhoto(tmp, "sample2.jpg", 160, 128);
  const std::vector<std::string> common = {photo, "--score-threshold", "0.1", "--max-faces", "20"};
  std::vector<std::string> modelscope = common, bucket = common;
  modelscope.insert(modelscope.end(), {"--input-policy", "modelscope"});
  bucket.insert(bucket.end(), {"--input-policy", "bucket", "--target-size", "160"});
  const ProcessResult a = RunMogFace(modelscope);
  const ProcessResult b = RunMogFace(bucket);
  ASSERT_EQ(a.exit_code, 0) << a.Describe();
  ASSERT_EQ(b.exit_code, 0) << b.Describe();
  const std::vector<json> la = ParseJsonLines(a.out), lb = ParseJsonLines(b.out);
  ASSERT_EQ(la.size(), 1u);
  ASSERT_EQ(lb.size(), 1u);
  EXPECT_FALSE(la[0]["faces"].empty());
  EXPECT_EQ(la[0]["faces"], lb[0]["faces"]);

  // A different target changes the input, and so the detections.
  bucket.back() = "128";
  const ProcessResult c = RunMogFace(bucket);
  ASSERT_EQ(c.exit_code, 0) << c.Describe();
  const std::vector<json> lc = ParseJsonLines(c.out);
  ASSERT_EQ(lc.size(), 1u);
  EXPECT_NE(la[0]["faces"], lc[0]["faces"]);
}

// Flip test-time augmentation pools the picture and its mirror image, so a mirrored input must
// give the mirrored faces: the un-flip convention (x' = W - 1 - x, inclusive corners) is right.
TEST(MogFaceDetectE2E, FlipTtaOfAMirroredPictureGivesMirroredFaces) {
  TempDir tmp;
  auto decoded = image::Decode(ReadBytes(PhotoPath("sample3.jpg")));
  ASSERT_TRUE(decoded.ok());
  const image::Image picture = image::Resize(decoded->image, 96, 64);
  image::Image mirror(picture.width, picture.height);
  for (int y = 0; y < picture.height; ++y) {
    for (int x = 0; x < picture.width; ++x) {
      std::copy_n(picture.pixel(picture.width - 1 - x, y), 3, mirror.pixel(x, y));
    }
  }
  const fs::path a = tmp.path() / "a.png", b = tmp.path() / "b.png";
  WriteBytes(a, *image::EncodePng(picture));
  WriteBytes(b, *image::EncodePng(mirror));
  const ProcessResult r = RunMogFace(
      {a.string(), b.string(), "--tta", "flip", "--score-threshold", "0.3", "--max-faces", "15"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::vector<json> lines = ParseJsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  const json& fa = lines[0]["faces"];
  const json& fb = lines[1]["faces"];
  ASSERT_EQ(fa.size(), 15u);
  ASSERT_EQ(fb.size(), fa.size());
  // The 68-point net (--landmarks auto) ran on the voted faces too.
  for (const json& f : fa) EXPECT_EQ(f.value("landmarks", json::array()).size(), 5u) << f.dump();
  int mirrored = 0;
  for (const json& f : fa) {
    const double x1 = 95.0 - f["box"][2].get<double>(), x2 = 95.0 - f["box"][0].get<double>();
    for (const json& g : fb) {
      if (std::abs(g["box"][0].get<double>() - x1) <= 0.01 &&
          std::abs(g["box"][2].get<double>() - x2) <= 0.01 && g["box"][1] == f["box"][1] &&
          g["box"][3] == f["box"][3] && g["score"] == f["score"]) {
        ++mirrored;
        break;
      }
    }
  }
  // Score ties at the 15th place may pick different boxes; everything above must mirror.
  EXPECT_GE(mirrored, 13) << lines[0].dump() << "\n" << lines[1].dump();

  const ProcessResult ssd = RunDetect({a.string(), "--tta", "flip"});
  EXPECT_EQ(ssd.exit_code, 2) << ssd.Describe();
  EXPECT_NE(ssd.err.find("--tta needs a model that takes any input size"), std::string::npos)
      << ssd.err;
}

TEST(MogFaceDetectE2E, BadFlagsAreUsageErrorsNamingTheFlag) {
  const std::string photo = PhotoPath("astronaut.png").string();
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"detect", "--model", "mogface", photo}, 2, "exactly one of --weights FILE"},
      {{"detect", "--model", "yolo", photo},
       2,
       "--model: model 'yolo' is not known; allowed: ssd, blazeface, mogface"},
      {{"detect", "--model", "mogface", "--synthetic-weights", "r50", "--precision", "fp16", photo},
       2,
       "it needs the CUDA backend (--device cuda)"},
      {{"detect", "--model", "mogface", "--synthetic-weights", "r50", "--precision", "int4", photo},
       2,
       "--precision: precision 'int4' is not known; allowed: fp32, bf16, fp16, tf32, int8"},
      {{"detect", "--model", "mogface", "--synthetic-weights", "r50", "--precision", "int8", photo},
       2,
       "precision int8 needs activation scales: pass --calibration FILE"},
      {{"detect", "--model", "mogface", "--synthetic-weights", "r18", photo}, 2, "r18"},
      {{"detect", "--model", "mogface", "--synthetic-weights", "r50", "--input-policy", "crop",
        photo},
       2,
       "--input-policy: input policy 'crop' is not known; allowed: bucket, modelscope"},
      {{"detect", "--model", "mogface", "--synthetic-weights", "r50", "--target-size", "100",
        photo},
       2,
       "--target-size: target size 100 must be a multiple of 32"},
      {{"detect", "--weights", "x.pt", photo},
       2,
       "--weights and --synthetic-weights are for --model mogface"},
      {{"detect", "--model", "mogface", "--weights", "/nonexistent/model_140000.pth", photo},
       3,
       "/nonexistent/model_140000.pth"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = RunMogserve(c.args);
    SCOPED_TRACE(r.Describe());
    EXPECT_EQ(r.exit_code, c.exit_code);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "expected: " << c.message;
    EXPECT_TRUE(r.out.empty());
  }
}

}  // namespace
}  // namespace mogserve::e2e
