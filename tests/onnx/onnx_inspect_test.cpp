// `mogserve model inspect` on real ONNX files: the family-shaped networks torch exported
// (tests/onnx/make_models.py, the onnx_models fixture) at several operator sets and input sizes,
// and MediaPipe's BlazeFace files from npm. Every output shape mogserve infers must equal the one
// ONNX Runtime (onnxruntime-node, tests/onnx/ort_outputs.js) produces running the model at that
// size, and the family must be the exporter's; files that are not models, truncated or with an
// operator mogserve lacks get a clear error and exit status.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e/e2e_support.h"

namespace mogserve::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kModels = MOGSERVE_ONNX_MODELS_DIR;
const fs::path kBlazeFace = fs::path(MOGSERVE_MODELS_DIR) / "blazeface";

json OrtOutputs(const fs::path& model, int64_t h, int64_t w) {
  const ProcessResult r = RunProcess(
      "node", {MOGSERVE_SOURCE_DIR "/tests/onnx/ort_outputs.js", model.string(), std::to_string(h),
               std::to_string(w), "--modules", MOGSERVE_SOURCE_DIR "/node_modules"});
  const std::vector<json> lines = ParseJsonLines(r.out);
  return lines.empty() ? json{{"error", r.err}} : lines.back();
}

json Inspect(const fs::path& model, int64_t h, int64_t w, int* exit_code) {
  const ProcessResult r = RunMogserve({"model", "inspect", "--json", "--height", std::to_string(h),
                                       "--width", std::to_string(w), model.string()});
  *exit_code = r.exit_code;
  const std::vector<json> lines = ParseJsonLines(r.out);
  return lines.empty() ? json{{"stderr", r.err}} : lines.back();
}

// mogserve's inferred output shapes against ONNX Runtime's, output by output.
void ExpectSameOutputs(const fs::path& model, int64_t h, int64_t w, const json& expected_family) {
  SCOPED_TRACE(model.filename().string() + " at " + std::to_string(h) + "x" + std::to_string(w));
  const json ort = OrtOutputs(model, h, w);
  ASSERT_FALSE(ort.contains("error")) << ort.dump();
  int code = -1;
  const json j = Inspect(model, h, w, &code);
  ASSERT_EQ(code, 0) << j.dump();
  EXPECT_TRUE(j.at("reads").get<bool>()) << j.dump();
  EXPECT_EQ(j.at("family"), expected_family) << j.at("family_reason");
  ASSERT_EQ(j.at("outputs").size(), ort.at("outputs").size());
  for (size_t i = 0; i < ort.at("outputs").size(); ++i) {
    EXPECT_EQ(j["outputs"][i]["name"], ort["outputs"][i]["name"]);
    EXPECT_EQ(j["outputs"][i]["shape"], ort["outputs"][i]["dims"]) << j["outputs"][i]["name"];
  }
  EXPECT_GT(j.at("macs").get<int64_t>(), 0);
  // The FPN families run on the plan: their top-down Resize + Add is an upsample-add.
  if (expected_family == "scrfd" || expected_family == "yunet") {
    const json& plan = j.at("plan");
    EXPECT_TRUE(plan.at("maps").get<bool>()) << plan.dump();
    EXPECT_EQ(plan.at("ops").value("upsample_add", 0), 2) << plan.dump();
  }
}

json Manifest() {
  std::ifstream in(kModels / "manifest.json");
  EXPECT_TRUE(in) << kModels / "manifest.json"
                  << " (the onnx_models fixture writes it)";
  return in ? json::parse(in) : json::array();
}

TEST(OnnxInspect, ExportedFamiliesMatchOnnxRuntime) {
  const json manifest = Manifest();
  ASSERT_GE(manifest.size(), 9u);
  int checked = 0;
  for (const json& m : manifest) {
    if (m.at("family").is_null()) continue;
    for (const json& size : m.at("sizes")) {
      ExpectSameOutputs(kModels / m.at("file").get<std::string>(), size[0].get<int64_t>(),
                        size[1].get<int64_t>(), m.at("family"));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 13);
}

TEST(OnnxInspect, BlazeFaceFromNpm) {
  ExpectSameOutputs(kBlazeFace / "face_detection_front_128x128_barracuda.onnx", 128, 128,
                    "blazeface");
  ExpectSameOutputs(kBlazeFace / "face_detection_back_256x256_barracuda.onnx", 256, 256,
                    "blazeface");
  int code = -1;
  const json j =
      Inspect(kBlazeFace / "face_detection_front_128x128_barracuda.onnx", 128, 128, &code);
  EXPECT_EQ(j.at("input").at("layout"), "NHWC");
  EXPECT_FALSE(j.at("input").at("dynamic_size").get<bool>());
  // It maps onto the network plan: convolutions, channel padding, pools, four raw outputs.
  const json& plan = j.at("plan");
  EXPECT_TRUE(plan.at("maps").get<bool>()) << plan.dump();
  EXPECT_EQ(plan.at("ops").at("conv"), 37);
  EXPECT_EQ(plan.at("ops").at("pad_channels"), 11);
  EXPECT_EQ(plan.at("ops").at("max_pool"), 3);
  EXPECT_EQ(plan.at("raw_outputs"), 4);
}

// A family-shaped network the plan cannot run yet says which node stops it.
TEST(OnnxInspect, WhatDoesNotMapOntoThePlanIsNamed) {
  int code = -1;
  const json j = Inspect(kModels / "retinaface_opset11.onnx", 64, 64, &code);
  EXPECT_EQ(code, 0);  // it reads
  const json& plan = j.at("plan");
  EXPECT_FALSE(plan.at("maps").get<bool>());
  EXPECT_NE(plan.at("problem").get<std::string>().find("(LeakyRelu)"), std::string::npos)
      << plan.dump();
}

// A size the network cannot take (SCRFD's upsampled maps no longer line up with the laterals):
// ONNX Runtime fails to run it, and mogserve says why at load time.
TEST(OnnxInspect, SizesTheNetworkCannotTakeAreRefusedLikeOnnxRuntime) {
  const fs::path model = kModels / "scrfd_opset11.onnx";
  EXPECT_TRUE(OrtOutputs(model, 100, 100).contains("error"));
  int code = -1;
  const json j = Inspect(model, 100, 100, &code);
  EXPECT_EQ(code, 1);
  EXPECT_FALSE(j.at("reads").get<bool>());
  EXPECT_NE(j.at("problem").get<std::string>().find("do not broadcast"), std::string::npos)
      << j.dump();
}

TEST(OnnxInspect, UnsupportedOperatorIsNamed) {
  int code = -1;
  const json j = Inspect(kModels / "unsupported_erf.onnx", 32, 32, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(j.at("unsupported_operators"), json::array({"Erf"}));
  const std::string problem = j.at("problem");
  EXPECT_NE(problem.find("is Erf, an operator mogserve does not import; supported: Add,"),
            std::string::npos)
      << problem;
  EXPECT_NE(problem.find("unsupported_erf.onnx"), std::string::npos) << problem;
}

TEST(OnnxInspect, FilesThatAreNotModels) {
  TempDir tmp;
  const std::vector<uint8_t> model = ReadBytes(kModels / "retinaface_opset11.onnx");
  WriteBytes(tmp.path() / "half.onnx",
             std::vector<uint8_t>(model.begin(), model.begin() + model.size() / 2));
  const struct {
    std::string file, message;
  } cases[] = {{PhotoPath("grace_hopper.jpg").string(), "not an ONNX model"},
               {tmp / "half.onnx", "not an ONNX model"},
               {tmp / "absent.onnx", "no such ONNX file"}};
  for (const auto& c : cases) {
    const ProcessResult r = RunMogserve({"model", "inspect", c.file});
    EXPECT_EQ(r.exit_code, 3) << c.file << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, c.file + ": " + c.message)) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace mogserve::e2e
