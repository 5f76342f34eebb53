// `mogserve detect --model FILE.onnx` end to end, against each family's own detection path.
// SCRFD against insightface's:
// tests/reference/scrfd_ref.py is SCRFD.detect/forward/nms written from insightface's scrfd.py
// (cv2.imread, cv2.resize into the top-left of a zero 640² canvas, cv2.dnn.blobFromImage, the
// model run by ONNX Runtime, numpy decoding and NMS). The SCRFD-shaped exports of
// tests/onnx/make_models.py (random weights: hundreds of faces an image, which tests every
// anchor's decoding) on photos of odd sizes, portrait and landscape, enlarged and reduced. The
// reference's faces are clipped to the picture as mogserve's are (FaceModel::Decode).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "e2e/e2e_support.h"

namespace mogserve::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kModels = MOGSERVE_ONNX_MODELS_DIR;

struct Face {
  float box[4];
  float score;
  std::vector<std::array<float, 2>> landmarks;
};

float IoU(const Face& a, const Face& b) {
  const float w = std::max(0.0f, std::min(a.box[2], b.box[2]) - std::max(a.box[0], b.box[0]));
  const float h = std::max(0.0f, std::min(a.box[3], b.box[3]) - std::max(a.box[1], b.box[1]));
  const float inter = w * h;
  const float area_a = (a.box[2] - a.box[0]) * (a.box[3] - a.box[1]);
  const float area_b = (b.box[2] - b.box[0]) * (b.box[3] - b.box[1]);
  return inter / (area_a + area_b - inter);
}

std::vector<Face> Faces(const json& j, float width, float height, bool clip) {
  std::vector<Face> out;
  for (const json& f : j.at("faces")) {
    Face face;
    for (int k = 0; k < 4; ++k) face.box[k] = f.at("box")[k];
    if (clip) {
      face.box[0] = std::clamp(face.box[0], 0.0f, width);
      face.box[2] = std::clamp(face.box[2], 0.0f, width);
      face.box[1] = std::clamp(face.box[1], 0.0f, height);
      face.box[3] = std::clamp(face.box[3], 0.0f, height);
      if (!(face.box[2] > face.box[0] && face.box[3] > face.box[1])) continue;
      // To mogserve's printed 0.01 px: clipped boxes can be a fraction of a pixel wide, where
      // the printing alone would cost IoU.
      for (float& v : face.box) v = std::round(v * 100.0f) / 100.0f;
    }
    face.score = f.at("score");
    for (const json& p : f.value("landmarks", json::array())) face.landmarks.push_back({p[0], p[1]});
    out.push_back(face);
  }
  return out;
}

// The reference's faces (`ref`, clipped here as mogserve clips) and mogserve's (`got`): as many,
// and each reference face has its own mogserve face (ties in score may order them apart) with
// IoU >= 0.99, |Δscore| <= 1e-3, corners and five points within 0.5 px.
void ExpectSameFaces(const json& ref, const json& got) {
  const float width = got.at("width"), height = got.at("height");
  const std::vector<Face> want = Faces(ref, width, height, true);
  const std::vector<Face> have = Faces(got, width, height, false);
  ASSERT_GE(want.size(), 5u) << "the reference found too few faces to compare";
  ASSERT_EQ(have.size(), want.size());
  std::vector<bool> used(have.size(), false);
  for (size_t i = 0; i < want.size(); ++i) {
    int best = -1;
    float best_iou = 0;
    for (size_t k = 0; k < have.size(); ++k) {
      if (used[k] || std::abs(have[k].score - want[i].score) > 1e-3f) continue;
      const float iou = IoU(have[k], want[i]);
      if (iou > best_iou) best_iou = iou, best = static_cast<int>(k);
    }
    ASSERT_GE(best, 0) << "reference face " << i << " (score " << want[i].score
                       << ") has no mogserve face";
    used[best] = true;
    const Face& h = have[best];
    EXPECT_GE(best_iou, 0.99f) << "face " << i;
    // Coordinates are printed to 0.01 px.
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(h.box[k], want[i].box[k], 0.5f) << "face " << i;
    ASSERT_EQ(h.landmarks.size(), 5u);
    ASSERT_EQ(want[i].landmarks.size(), 5u);
    for (int p = 0; p < 5; ++p) {
      EXPECT_NEAR(h.landmarks[p][0], want[i].landmarks[p][0], 0.5f) << "face " << i;
      EXPECT_NEAR(h.landmarks[p][1], want[i].landmarks[p][1], 0.5f) << "face " << i;
    }
  }
}

// The family's reference script and `mogserve detect` (with `extra` arguments) on one photo,
// both at `threshold`.
void ExpectReferenceFaces(const std::string& script, const std::string& file,
                          const std::string& photo, const std::string& threshold,
                          const std::vector<std::string>& extra = {}) {
  SCOPED_TRACE(file + " on " + photo);
  const ProcessResult ref = RunProcess(
      "/usr/bin/python3", {MOGSERVE_SOURCE_DIR "/tests/reference/" + script,
                           (kModels / file).string(), photo, "--modules",
                           MOGSERVE_SOURCE_DIR "/node_modules", "--thresh", threshold});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  std::vector<std::string> args = {"detect", "--model", (kModels / file).string(), "--max-faces",
                                   "10000", "--score-threshold", threshold, photo};
  args.insert(args.end(), extra.begin(), extra.end());
  const ProcessResult got = RunMogserve(args);
  ASSERT_EQ(got.exit_code, 0) << got.err;
  ExpectSameFaces(ParseJsonLines(ref.out).at(0), ParseJsonLines(got.out).at(0));
}

TEST(OnnxDetect, ScrfdFacesMatchInsightFacesOwnPath) {
  // 1920x1367 reduced, 600x400 landscape and 512x600 portrait enlarged.
  for (const char* photo : {"sample2.jpg", "coffee.png", "grace_hopper.jpg"}) {
    for (const char* file : {"scrfd_opset11.onnx", "scrfd_opset13_2d.onnx"}) {
      ExpectReferenceFaces("scrfd_ref.py", file, PhotoPath(photo).string(), "0.3");
    }
  }
  // insightface's RetinaFace files have SCRFD's outputs without the batch axis, and its
  // model_zoo/retinaface.py detects exactly as scrfd.py: the same path, named retinaface.
  ExpectReferenceFaces("scrfd_ref.py", "scrfd_opset13_2d.onnx", PhotoPath("coffee.png").string(),
                       "0.3", {"--model-family", "retinaface"});
}

// tests/reference/yunet_ref.py is OpenCV's FaceDetectorYN (face_detect.cpp) and NMSBoxes written
// in numpy: the picture at its own size padded bottom-right to multiples of 32, B, G, R planes,
// the model run by ONNX Runtime. Photos whose sides are not multiples of 32 (1920x1367: 1920x1376
// padded; 600x400; 512x600), so padding, the grid of each stride and the channel order all count.
TEST(OnnxDetect, YunetFacesMatchOpenCvsOwnPath) {
  for (const char* photo : {"sample2.jpg", "coffee.png", "grace_hopper.jpg"}) {
    ExpectReferenceFaces("yunet_ref.py", "yunet_opset11.onnx", PhotoPath(photo).string(), "0.4");
  }
}

// A fixed-size file runs at the picture's own size as OpenCV runs it (setInputShape); ONNX
// Runtime can run it only at its own 160x128, so the picture is made that size (lossless PNG).
TEST(OnnxDetect, FixedSizeYunetFileMatchesOpenCvsPathAtItsSize) {
  const fs::path dir = fs::path(::testing::TempDir()) / "yunet_fixed";
  fs::create_directories(dir);
  const std::string photo = (dir / "coffee_160x128.png").string();
  const ProcessResult made = RunProcess(
      "/usr/bin/python3",
      {"-c", "import cv2, sys; cv2.imwrite(sys.argv[2], cv2.resize(cv2.imread(sys.argv[1]), "
             "(160, 128), interpolation=cv2.INTER_AREA))",
       PhotoPath("coffee.png").string(), photo});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ExpectReferenceFaces("yunet_ref.py", "yunet_fixed_opset13.onnx", photo, "0.4");
  // Other sizes run too (no reference can run them): faces inside the picture.
  const ProcessResult other =
      RunMogserve({"detect", "--model", (kModels / "yunet_fixed_opset13.onnx").string(),
                   "--score-threshold", "0.4", PhotoPath("grace_hopper.jpg").string()});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  const json g = ParseJsonLines(other.out).at(0);
  EXPECT_FALSE(g.at("faces").empty());
  for (const json& f : g.at("faces")) {
    EXPECT_LE(f.at("box")[2].get<float>(), 512.0f);
    EXPECT_LE(f.at("box")[3].get<float>(), 600.0f);
  }
}

// INT8 for an imported model: `mogserve calibrate` over the test photos writes its activation
// scales, and `detect --precision int8 --calibration` finds the FP32 faces again. Bounds from
// the measurement on AMD EPYC Zen 3 (docs/ACCURACY.md: every face matched at IoU >= 0.9,
// |Δscore| <= 0.02): at least 95 % of them, |Δscore| <= 0.05.
TEST(OnnxDetect, Int8OfAnImportedModelAfterCalibrationFindsTheFp32Faces) {
  const fs::path dir = fs::path(::testing::TempDir()) / "yunet_int8";
  fs::create_directories(dir);
  const std::string model = (kModels / "yunet_opset11.onnx").string();
  const std::string scales = (dir / "yunet_int8.json").string();
  const ProcessResult calibrated = RunMogserve(
      {"calibrate", "--model", model, "--images", MOGSERVE_TEST_DATA_DIR "/photos", "-o", scales});
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.err;
  for (const char* photo : {"coffee.png", "grace_hopper.jpg"}) {
    SCOPED_TRACE(photo);
    std::vector<json> runs;
    for (const bool int8 : {false, true}) {
      std::vector<std::string> args = {"detect", "--model", model, "--score-threshold", "0.4",
                                       "--max-faces", "10000"};
      if (int8) args.insert(args.end(), {"--precision", "int8", "--calibration", scales});
      args.push_back(PhotoPath(photo).string());
      const ProcessResult r = RunMogserve(args);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      runs.push_back(ParseJsonLines(r.out).at(0));
    }
    const std::vector<Face> fp32 = Faces(runs[0], 0, 0, false);
    const std::vector<Face> int8 = Faces(runs[1], 0, 0, false);
    ASSERT_GE(fp32.size(), 100u);
    size_t matched = 0;
    for (const Face& f : fp32) {
      float best_iou = 0, score_gap = 1;
      for (const Face& g : int8) {
        const float iou = IoU(f, g);
        if (iou > best_iou) best_iou = iou, score_gap = std::abs(f.score - g.score);
      }
      if (best_iou >= 0.9f && score_gap <= 0.05f) ++matched;
    }
    EXPECT_GE(matched, fp32.size() * 95 / 100) << matched << " of " << fp32.size();
  }
}

TEST(OnnxDetect, FilesAndFamiliesThatDoNotDecodeAreRefused) {
  // Exit 3: the model cannot load; 2: the options are wrong.
  const struct {
    std::vector<std::string> args;
    int code;
    std::string message;
  } cases[] = {
      {{"--model", (kModels / "retinaface_opset11.onnx").string()}, 3,
       "a retinaface (Pytorch_Retinaface's loc, conf, landms layout) model; its decoder is not "
       "built yet (decoders from a file: scrfd, yunet, insightface's retinaface"},
      {{"--model", (kModels / "yunet_opset11.onnx").string(), "--model-family", "scrfd"}, 2,
       "its outputs are not SCRFD's"},
      {{"--model", (kModels / "yunet_opset11.onnx").string(), "--model-family", "retinaface"},
       2, "its outputs are not insightface RetinaFace's"},
      {{"--model", (kModels / "retinaface_opset11.onnx").string(), "--model-family",
        "retinaface"},
       3, "a retinaface (Pytorch_Retinaface's loc, conf, landms layout) model; its decoder is not"},
      {{"--model", (kModels / "scrfd_opset11.onnx").string(), "--model-family", "yunet"}, 2,
       "its outputs are not YuNet's"},
      {{"--model", (kModels / "unsupported_erf.onnx").string()}, 3,
       "Erf, an operator mogserve does not import"},
      {{"--model", (kModels / "scrfd_opset11.onnx").string(), "--model-family", "ultraface"}, 3,
       "a ultraface model; its decoder is not built yet"},
      {{"--model", (kModels / "scrfd_opset11.onnx").string(), "--model-family", "yolo"}, 2,
       "--model-family: 'yolo' is not known; allowed: auto, scrfd"},
      {{"--model", "absent.onnx"}, 3, "absent.onnx: no such file"},
      {{"--model", "onnx"}, 2, "an ONNX model needs its file"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"detect"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.push_back(PhotoPath("coffee.png").string());
    const ProcessResult r = RunMogserve(args);
    EXPECT_EQ(r.exit_code, c.code) << r.err;
    EXPECT_TRUE(Contains(r.err, c.message)) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace mogserve::e2e
