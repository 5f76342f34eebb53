// End-to-end tests of `mogserve eval`: WIDER FACE evaluation of prediction files in a tiny
// WIDER-style tree written by the test (MAT files included), the same tree built from real
// photos and run through the SSD, and the FP32 vs BF16 comparison of MogFace on real photos.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "../eval/mat_test_writer.h"
#include "e2e_support.h"

#include "support/cpu_skip.h"

namespace mogserve::e2e {
namespace {

namespace fs = std::filesystem;
using eval::testing::TestEvent;
using eval::testing::TestImage;
using nlohmann::json;

// Writes the four ground-truth files of `events` (compressed, as the official ones) into `dir`.
void WriteGroundTruth(const fs::path& dir, const std::vector<TestEvent>& events) {
  const auto files = eval::testing::WiderMatFiles(events, true);
  const char* names[4] = {"wider_face_val.mat", "wider_easy_val.mat", "wider_medium_val.mat",
                          "wider_hard_val.mat"};
  for (int i = 0; i < 4; ++i) WriteBytes(dir / names[i], files[i]);
}

void WriteText(const fs::path& path, const std::string& text) {
  WriteBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

// Two events. Image a: faces A (kept everywhere) and B (hard only); image b: face C (kept in
// medium and hard); image c: one face D, kept in hard, whose prediction file is missing.
// Predictions, unsorted in the file: on A 0.9, on B 0.5, a miss 0.7 (in image b), on C 0.1.
// Normalised (min .1, max .9): A 1, miss .75, B .5, C 0.
//   easy (A; B and C don't care): thr > 0.75: P 1/1 R 1 -> AP 1.
//   medium (A, C; B don't care): thr > .75: P 1/1 R 1/2; .75-.001: P 1/2 (B leaves P);
//     thr 0: P 2/3 R 1 -> AP .5 + .5 * 2/3 = 5/6.
//   hard (A, B, C, D): thr > .75: P 1 R 1/4; then P 1/2; thr <= .5: P 2/3 R 2/4; thr 0: P 3/4
//     R 3/4 -> AP .25 + .25 * 3/4 + .25 * 3/4 = 5/8.
TEST(EvalWiderE2E, EvaluatesPredictionFilesOfAnyDetector) {
  TempDir tmp;
  const fs::path gt = tmp.path() / "gt", pred = tmp.path() / "pred", out = tmp.path() / "out";
  fs::create_directories(gt);
  WriteGroundTruth(gt, {{"0--Parade",
                         {{"0_Parade_a", {{10, 10, 40, 40}, {100, 10, 40, 40}}, {1}, {1}, {1, 2}},
                          {"0_Parade_b", {{10, 200, 30, 30}}, {}, {1}, {1}}}},
                        {"1--Handshaking", {{"1_Handshaking_c", {{5, 5, 50, 50}}, {}, {}, {1}}}}});
  WriteText(pred / "0--Parade/0_Parade_a.txt",
            "0_Parade_a\n2\n100 10 40 40 0.5\n10 10 40 40 0.9\n");
  WriteText(pred / "0--Parade/0_Parade_b.txt",
            "0_Parade_b\n2\n10 200 30 30 0.1\n400 400 9 9 0.7\n");
  const std::string json_path = tmp / "result.json";
  const ProcessResult r =
      RunMogserve({"eval", "widerface", "--gt", gt.string(), "--predictions", pred.string(),
                   "--out", out.string(), "--json", json_path, "--label", "hand"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const json j = json::parse(ReadText(json_path));
  EXPECT_DOUBLE_EQ(j["ap"]["easy"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["ap"]["medium"].get<double>(), 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(j["ap"]["hard"].get<double>(), 5.0 / 8.0);
  EXPECT_EQ(j["faces"]["hard"], 4);
  EXPECT_EQ(j["missing_files"], 1);
  EXPECT_EQ(j["detections"], 4);
  // The table, and the missing file named on stderr.
  EXPECT_NE(r.out.find("WIDER FACE val, hand"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("medium     0.8333"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hard       0.6250"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("1--Handshaking/1_Handshaking_c.txt"), std::string::npos) << r.err;
  // PR curves: a header and 1000 thresholds per subset; the last row (thr 0) of hard is
  // P 3/4, R 3/4, TP 3, P 4.
  for (const char* s : {"easy", "medium", "hard"}) {
    const std::vector<std::string> rows =
        SplitLines(ReadText(out / (std::string("pr_curve_") + s + ".csv")));
    ASSERT_EQ(rows.size(), 1001u) << s;
    EXPECT_EQ(rows[0], "threshold,precision,recall,true_positives,proposals");
    if (std::string(s) == "hard") {
      EXPECT_EQ(rows[1000], "0.000,0.750000,0.750000,3,4");
    }
  }
  EXPECT_TRUE(fs::exists(out / "pr_curves.gp"));
  // With gnuplot installed (scripts/setup.sh installs it) the plot is drawn in the folder.
  if (RunProcess("/bin/sh", {"-c", "command -v gnuplot"}).exit_code == 0) {
    EXPECT_GT(fs::file_size(out / "pr_curves.svg"), 0u) << r.Describe();
    EXPECT_GT(fs::file_size(out / "pr_curves.png"), 0u) << r.Describe();
  }
}

TEST(EvalWiderE2E, UsageErrors) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "gt");
  WriteGroundTruth(tmp.path() / "gt", {{"0--E", {{"i", {{1, 1, 9, 9}}, {1}, {1}, {1}}}}});
  const std::string gt = tmp / "gt";
  ProcessResult r = RunMogserve({"eval", "widerface", "--gt", gt});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_NE(r.err.find("either --images"), std::string::npos) << r.err;
  r = RunMogserve({"eval", "widerface", "--gt", gt, "--images", gt, "--predictions", gt});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  r = RunMogserve({"eval", "widerface", "--gt", tmp / "nope", "--predictions", gt});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_NE(r.err.find("wider_face_val.mat"), std::string::npos) << r.err;
  r = RunMogserve({"eval", "widerface", "--gt", gt, "--predictions", tmp / "nope"});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  r = RunMogserve({"eval"});
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
}

// tests/data/ground_truth.json: file name -> [x1, y1, x2, y2] boxes.
std::map<std::string, std::vector<std::vector<double>>> PhotoGroundTruth() {
  const json gt = json::parse(ReadText(TestDataDir() / "ground_truth.json"));
  std::map<std::string, std::vector<std::vector<double>>> out;
  for (const auto& [name, boxes] : gt.items()) {
    if (name.front() != '_') out[name] = boxes.get<std::vector<std::vector<double>>>();
  }
  return out;
}

// Real photos in the WIDER layout (images/<event>/<image>.jpg), their hand-checked faces as the
// ground truth (x y w h = x1 y1 x2-x1 y2-y1, all kept), run through the embedded SSD: it finds
// every face at its default threshold, so the AP is high; the prediction files follow the
// official layout, sorted by score.
TEST(EvalWiderE2E, RunsTheSsdOnRealPhotosInTheWiderLayout) {
  TempDir tmp;
  const auto faces = PhotoGroundTruth();
  TestEvent event{"0--Photos", {}};
  for (const std::string photo : {"sample1.jpg", "sample4.jpg", "grace_hopper.jpg"}) {
    const std::string stem = fs::path(photo).stem().string();
    WriteBytes(tmp.path() / "images/0--Photos" / photo, ReadBytes(PhotoPath(photo)));
    TestImage image{stem, {}, {}, {}, {}};
    for (const auto& b : faces.at(photo)) {
      image.boxes.push_back({b[0], b[1], b[2] - b[0], b[3] - b[1]});
      image.hard.push_back(static_cast<int>(image.boxes.size()));
    }
    image.easy = image.medium = image.hard;
    event.images.push_back(image);
  }
  fs::create_directories(tmp.path() / "gt");
  WriteGroundTruth(tmp.path() / "gt", {event});
  const std::string json_path = tmp / "result.json";
  const ProcessResult r = RunMogserve({"eval", "widerface", "--gt", tmp / "gt", "--images",
                                       tmp / "images", "--model-dir", TestModelDir(), "--out",
                                       tmp / "out", "--json", json_path, "--batch-size", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const json j = json::parse(ReadText(json_path));
  EXPECT_EQ(j["faces"]["hard"], 8);
  EXPECT_GE(j["ap"]["hard"].get<double>(), 0.9) << j.dump();
  EXPECT_GT(j["images_per_second"].get<double>(), 0.0);
  const std::vector<std::string> lines =
      SplitLines(ReadText(tmp.path() / "out/predictions/0--Photos/sample4.txt"));
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[0], "sample4");
  EXPECT_EQ(std::stoul(lines[1]), lines.size() - 2);
  double previous = 2;
  for (size_t i = 2; i < lines.size(); ++i) {
    double x, y, w, h, s;
    ASSERT_EQ(std::sscanf(lines[i].c_str(), "%lf %lf %lf %lf %lf", &x, &y, &w, &h, &s), 5);
    EXPECT_LE(s, previous);
    EXPECT_GT(w, 0);
    previous = s;
  }
}

// The shipped SSD at FP32 and BF16 on every ground-truth photo, at the default options: the
// same faces, scores close, AP unchanged. One precision alone is nothing to compare (exit 2).
// Where the CPU has no BF16 (or MOGSERVE_CPU_ISA caps it away), FP32 vs INT8 alone.
TEST(EvalCompareE2E, SsdFp32VsBf16AndInt8OnRealPhotos) {
  TempDir tmp;
  const std::string json_path = tmp / "compare.json";
  const bool bf16 = ::mogserve::testing::NoBf16Reason().empty();
  const ProcessResult r = RunMogserve(
      {"eval", "compare", "--model-dir", TestModelDir(), "--precision",
       bf16 ? "fp32,bf16,int8" : "fp32,int8", "--gt",
       (TestDataDir() / "ground_truth.json").string(), "--json", json_path,
       (TestDataDir() / "photos").string()});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const json j = json::parse(ReadText(json_path));
  SCOPED_TRACE(j.dump());
  EXPECT_EQ(j["runs"]["fp32"]["gt_faces"], 25);
  if (bf16) {
    const json& d = j["diff"]["bf16"];
    EXPECT_EQ(d["reference_faces"].get<double>(), 25);
    EXPECT_EQ(d["lost"].get<double>() + d["gained"].get<double>(), 0);
    EXPECT_GT(d["max_abs_score_diff"].get<double>(), 0.0);  // BF16 did run
    EXPECT_LE(d["max_abs_score_diff"].get<double>(), 0.05);
    EXPECT_GE(d["min_iou"].get<double>(), 0.8);
    EXPECT_LE(
        std::abs(j["runs"]["bf16"]["ap"].get<double>() - j["runs"]["fp32"]["ap"].get<double>()),
        0.01);
  } else {
    EXPECT_FALSE(j["diff"].contains("bf16"));
    std::printf("bf16 left out: %s\n", ::mogserve::testing::NoBf16Reason().c_str());
  }
  // INT8 with the build's calibration (tests/data/photos; docs/ACCURACY.md: max |dscore| 0.090,
  // min IoU 0.916, AP50 and recall unchanged).
  const json& q = j["diff"]["int8"];
  EXPECT_EQ(q["reference_faces"].get<double>(), 25);
  EXPECT_EQ(q["lost"].get<double>() + q["gained"].get<double>(), 0);
  EXPECT_GT(q["max_abs_score_diff"].get<double>(), 0.0);  // INT8 did run
  EXPECT_LE(q["max_abs_score_diff"].get<double>(), 0.12);
  EXPECT_GE(q["min_iou"].get<double>(), 0.85);
  EXPECT_LE(std::abs(j["runs"]["int8"]["ap"].get<double>() - j["runs"]["fp32"]["ap"].get<double>()),
            0.01);
  const ProcessResult one = RunMogserve({"eval", "compare", "--model-dir", TestModelDir(),
                                         "--precision", "fp32", PhotoPath("sample1.jpg")});
  EXPECT_EQ(one.exit_code, 2) << one.Describe();
}

// MogFace (synthetic R50 weights: the only weights here; 128-px canvases keep it quick) on three
// real photos at FP32 and BF16, every anchor kept (threshold 0, no NMS, no cap), so each FP32 box
// has its BF16 twin and the differences are the arithmetic's alone. Measured on the 2-core EPYC
// (docs/ACCURACY.md): 3429 boxes, all paired, mean IoU 0.9998, min 0.9994, max |dscore| 9e-5,
// AP change 2e-4. The bounds leave a wide margin (synthetic weights give logits near 0, where
// BF16's relative error costs little; a trained model's would differ more).
TEST(EvalCompareE2E, MogFaceFp32VsBf16OnRealPhotos) {
  MOGSERVE_SKIP_WITHOUT_BF16();
  TempDir tmp;
  const std::string json_path = tmp / "compare.json";
  const ProcessResult r = RunMogserve({"eval",
                                       "compare",
                                       "--model",
                                       "mogface",
                                       "--synthetic-weights",
                                       "r50",
                                       "--target-size",
                                       "128",
                                       "--score-threshold",
                                       "0",
                                       "--nms-iou",
                                       "1",
                                       "--max-faces",
                                       "10000",
                                       "--top-k",
                                       "100000",
                                       "--precision",
                                       "fp32,bf16",
                                       "--gt",
                                       (TestDataDir() / "ground_truth.json").string(),
                                       "--json",
                                       json_path,
                                       PhotoPath("sample1.jpg"),
                                       PhotoPath("grace_hopper.jpg"),
                                       PhotoPath("astronaut.png")});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const json j = json::parse(ReadText(json_path));
  SCOPED_TRACE(j.dump());
  EXPECT_EQ(j["images"], 3);
  const json& d = j["diff"]["bf16"];
  const double faces = d["reference_faces"].get<double>();
  EXPECT_GE(faces, 1000);  // every anchor of three 128-px canvases
  EXPECT_EQ(d["faces"].get<double>(), faces);
  EXPECT_LE(d["lost"].get<double>() + d["gained"].get<double>(), 0.01 * faces);
  EXPECT_GE(d["mean_iou"].get<double>(), 0.999);
  EXPECT_GE(d["min_iou"].get<double>(), 0.98);
  EXPECT_GT(d["max_abs_score_diff"].get<double>(), 0.0);  // BF16 did run
  EXPECT_LE(d["max_abs_score_diff"].get<double>(), 0.002);
  EXPECT_LE(d["mean_abs_score_diff"].get<double>(), 0.0005);
  EXPECT_EQ(j["runs"]["fp32"]["gt_faces"], 5);
  EXPECT_LE(std::abs(j["runs"]["bf16"]["ap"].get<double>() - j["runs"]["fp32"]["ap"].get<double>()),
            0.01);
  EXPECT_NE(r.out.find("fp32"), std::string::npos);
  EXPECT_NE(r.out.find("bf16"), std::string::npos);
  EXPECT_NE(r.out.find("AP50 (ground truth)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mogserve::e2e
