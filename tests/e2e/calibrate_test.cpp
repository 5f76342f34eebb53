// End-to-end tests of INT8 calibration through the real binary: `mogserve calibrate` over the
// real test photos is deterministic (byte-identical files, whatever the photos' order), the
// build's default SSD calibration is exactly what the command writes, `--precision int8` uses
// it, and int8 without usable calibration data fails naming the flag or the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e_support.h"

namespace mogserve::e2e {
namespace {

namespace fs = std::filesystem;

ProcessResult Calibrate(const std::string& images, const std::string& out) {
  return RunMogserve({"calibrate", "--model", "ssd", "--model-dir", TestModelDir(), "--threads",
                      "1", "--images", images, "-o", out});
}

TEST(CalibrateE2E, SamePhotosGiveTheSameBytesInAnyOrder) {
  TempDir dir;
  const ProcessResult a = Calibrate(PhotosDir().string(), dir / "a.json");
  ASSERT_EQ(a.exit_code, 0) << a.Describe();
  const ProcessResult b = Calibrate(PhotosDir().string(), dir / "b.json");
  ASSERT_EQ(b.exit_code, 0) << b.Describe();
  const std::string first = ReadText(dir / "a.json");
  EXPECT_EQ(first, ReadText(dir / "b.json"));

  // The same photos renamed so that name order reverses: the histograms count values, so the
  // order the photos come in must not matter.
  std::vector<fs::path> photos;
  for (const auto& e : fs::directory_iterator(PhotosDir())) photos.push_back(e.path());
  std::sort(photos.begin(), photos.end());
  ASSERT_GE(photos.size(), 6u);
  for (size_t i = 0; i < photos.size(); ++i) {
    const std::string name = std::to_string(100 - i) + photos[i].extension().string();
    WriteBytes(dir.path() / "reversed" / name, ReadBytes(photos[i]));
  }
  const ProcessResult c = Calibrate(dir / "reversed", dir / "c.json");
  ASSERT_EQ(c.exit_code, 0) << c.Describe();
  EXPECT_EQ(first, ReadText(dir / "c.json"));

  // What the file says: the SSD, the percentile method, one entry per tensor a convolution
  // reads or writes (the input and the 41 convolutions' outputs), each range > 0; ReLU6 maps
  // non-negative and within 6 (the bin edge above 6 at most).
  const nlohmann::json j = nlohmann::json::parse(first);
  EXPECT_EQ(j["network"], "SSD-MobileNetV1");
  EXPECT_EQ(j["method"], "percentile");
  EXPECT_EQ(j["percentile"], 99.99);
  EXPECT_EQ(j["images"], static_cast<int>(photos.size()));
  ASSERT_EQ(j["tensors"].size(), 42u);
  EXPECT_EQ(j["tensors"][0]["name"], "input");
  EXPECT_FALSE(j["tensors"][0]["non_negative"].get<bool>());
  EXPECT_NEAR(j["tensors"][0]["range"].get<double>(), 1.0, 0.01);  // pixels / 127.5 - 1
  for (const nlohmann::json& t : j["tensors"]) {
    EXPECT_GT(t["range"].get<double>(), 0.0) << t.dump();
    if (t["tensor"].get<int>() >= 1 && t["tensor"].get<int>() <= 34) {  // ReLU6 convolutions
      EXPECT_TRUE(t["non_negative"].get<bool>()) << t.dump();
      EXPECT_LE(t["range"].get<double>(), 6.05) << t.dump();
    }
  }

  // The build's default calibration is this command's output on the same photos.
  const fs::path built = fs::path(MogserveBinary()).parent_path() / "calibration" /
                         "ssd_mobilenetv1_int8.json";
  ASSERT_TRUE(fs::exists(built)) << built;
  EXPECT_EQ(first, ReadText(built));
}

TEST(CalibrateE2E, Int8FindsGraceHopperWithTheBuildsCalibration) {
  const ProcessResult r =
      RunDetect({"--precision", "int8", "--threads", "1", PhotoPath("grace_hopper.jpg").string()});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::vector<nlohmann::json> lines = ParseJsonLines(r.out);
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0]["faces"].size(), 1u) << r.out;
  EXPECT_GT(lines[0]["faces"][0]["score"].get<double>(), 0.9);
}

TEST(CalibrateE2E, Int8WithoutCalibrationDataFailsNamingTheFlagOrFile) {
  const std::string photo = PhotoPath("grace_hopper.jpg").string();
  {
    SCOPED_TRACE("no calibration at all (MogFace has no default)");
    const ProcessResult r =
        RunMogserve({"detect", "--model", "mogface", "--synthetic-weights", "r50", "--precision",
                     "int8", photo});
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "--calibration")) << r.err;
    EXPECT_TRUE(Contains(r.err, "mogserve calibrate")) << r.err;
    EXPECT_EQ(r.out, "");
  }
  {
    SCOPED_TRACE("a file that does not exist");
    const ProcessResult r =
        RunDetect({"--precision", "int8", "--calibration", "/nonexistent/scales.json", photo});
    EXPECT_EQ(r.exit_code, 3) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "/nonexistent/scales.json")) << r.err;
    EXPECT_EQ(r.out, "");
  }
  TempDir dir;
  {
    SCOPED_TRACE("a file made for another network");
    const ProcessResult made = Calibrate(PhotosDir().string(), dir / "ssd.json");
    ASSERT_EQ(made.exit_code, 0) << made.Describe();
    const ProcessResult r =
        RunMogserve({"detect", "--model", "mogface", "--synthetic-weights", "r50", "--precision",
                     "int8", "--calibration", dir / "ssd.json", photo});
    EXPECT_NE(r.exit_code, 0) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "SSD-MobileNetV1")) << r.err;
    EXPECT_TRUE(Contains(r.err, dir / "ssd.json")) << r.err;
  }
  {
    SCOPED_TRACE("a range that is not a positive number");
    std::string text = ReadText(dir / "ssd.json");
    const size_t at = text.find("\"range\": ");
    ASSERT_NE(at, std::string::npos);
    text = text.substr(0, at + 9) + "-" + text.substr(at + 9);  // the first range negated
    WriteBytes(dir.path() / "bad.json", std::vector<uint8_t>(text.begin(), text.end()));
    const ProcessResult r =
        RunDetect({"--precision", "int8", "--calibration", dir / "bad.json", photo});
    EXPECT_NE(r.exit_code, 0) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "'range' must be a finite number > 0")) << r.err;
  }
  {
    SCOPED_TRACE("int8 on cuda");
    const ProcessResult r = RunDetect({"--precision", "int8", "--device", "cuda", photo});
    EXPECT_NE(r.exit_code, 0) << r.Describe();
    EXPECT_EQ(r.out, "");
  }
}

// A mogserve with no build calibration beside it (a copy in a fresh folder): the SSD at int8
// refuses to start naming --calibration, and uses int8_calibration.json in the model folder when
// one is installed there (the container image's layout).
TEST(CalibrateE2E, SsdWithoutBuildCalibrationNeedsOneBesideTheModel) {
  TempDir dir;
  const fs::path binary = dir.path() / "bin" / "mogserve";
  fs::create_directories(binary.parent_path());
  fs::copy_file(MogserveBinary(), binary);
  fs::permissions(binary, fs::perms::owner_all);
  const fs::path model = dir.path() / "model";
  fs::create_directories(model);
  for (const auto& e : fs::directory_iterator(TestModelDir())) {
    if (e.is_regular_file()) fs::copy_file(e.path(), model / e.path().filename());
  }
  const std::string photo = PhotoPath("grace_hopper.jpg").string();
  const std::vector<std::string> args = {"detect", "--model-dir", model.string(), "--precision",
                                         "int8", "--threads", "1", photo};
  const ProcessResult refused = RunProcess(binary.string(), args);
  EXPECT_EQ(refused.exit_code, 2) << refused.Describe();
  EXPECT_TRUE(Contains(refused.err, "--calibration")) << refused.err;
  EXPECT_EQ(refused.out, "");

  const fs::path built = fs::path(MogserveBinary()).parent_path() / "calibration" /
                         "ssd_mobilenetv1_int8.json";
  fs::copy_file(built, model / "int8_calibration.json");
  const ProcessResult r = RunProcess(binary.string(), args);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::vector<nlohmann::json> lines = ParseJsonLines(r.out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["faces"].size(), 1u) << r.out;
}

}  // namespace
}  // namespace mogserve::e2e
