// ONNX files imported into the network plan (model/onnx/onnx_network.h) and run by mogserve's own
// executors, against ONNX Runtime (onnxruntime-node, tests/onnx/ort_run.js) running the file on
// the same input, a real photo: MediaPipe's BlazeFace files from npm (front 128², back 256²: NHWC
// input, TF SAME pads written out per side, channel padding through ConstantOfShape + Concat,
// residual Add + Relu, two output levels per output), and the family-shaped networks
// tests/onnx/make_models.py exports whose operators the plan maps (SCRFD: nearest x2 Resize into
// the FPN's sums at opsets 9-17, rows with and without the batch axis; YuNet: bilinear x2), at
// each file's own sizes, not only square ones. Every graph output is rebuilt from the plan's raw
// outputs (onnx::GraphOutput) and compared value by value: the FP64 reference executor, and the
// CPU backend in FP32 in both memory formats.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <fstream>
#include <optional>
#include <set>

#include "e2e/e2e_support.h"
#include "engine/torch/plan_runner.h"
#include "image/decode.h"
#include "image/resize.h"
#include "model/input_normalization.h"
#include "model/layer_plan.h"
#include "model/onnx/onnx_graph.h"
#include "model/onnx/onnx_network.h"
#include "model/prepared_weights.h"
#include "model/reference/reference_executor.h"

namespace mogserve::model::onnx {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kBlazeFace = fs::path(MOGSERVE_MODELS_DIR) / "blazeface";
const fs::path kExported = MOGSERVE_ONNX_MODELS_DIR;

struct OrtOutput {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> values;
};

// ONNX Runtime's outputs for a 1 x 3 x h x w planar input.
std::vector<OrtOutput> RunOrt(const fs::path& model, const std::vector<double>& planar, int h,
                              int w) {
  e2e::TempDir dir;
  std::vector<uint8_t> bytes(planar.size() * sizeof(float));
  for (size_t i = 0; i < planar.size(); ++i) {
    const float v = static_cast<float>(planar[i]);
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
  }
  e2e::WriteBytes(dir.path() / "input.f32", bytes);
  const e2e::ProcessResult r = e2e::RunProcess(
      "node", {MOGSERVE_SOURCE_DIR "/tests/onnx/ort_run.js", model.string(), dir / "input.f32", "1",
               std::to_string(h), std::to_string(w), dir.path().string(), "--modules",
               MOGSERVE_SOURCE_DIR "/node_modules"});
  const std::vector<json> lines = e2e::ParseJsonLines(r.out);
  EXPECT_FALSE(lines.empty()) << r.err;
  if (lines.empty() || lines.back().contains("error")) {
    ADD_FAILURE() << (lines.empty() ? r.err : lines.back().dump());
    return {};
  }
  std::vector<OrtOutput> outputs;
  for (const json& o : lines.back().at("outputs")) {
    OrtOutput out;
    out.name = o.at("name");
    out.dims = o.at("dims").get<std::vector<int64_t>>();
    const std::vector<uint8_t> data = e2e::ReadBytes(o.at("file").get<std::string>());
    out.values.resize(data.size() / sizeof(float));
    std::memcpy(out.values.data(), data.data(), out.values.size() * sizeof(float));
    outputs.push_back(std::move(out));
  }
  return outputs;
}

// The largest difference relative to the output's largest magnitude (at least 1).
double RelativeDiff(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return INFINITY;
  double scale = 1.0, worst = 0.0;
  for (float v : want) scale = std::max(scale, std::abs(static_cast<double>(v)));
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  return worst / scale;
}

struct Imported {
  ImportedNetwork net;
  std::optional<LayerPlan> plan;
  PreparedWeights weights;
  std::vector<int64_t> raw_offsets;
};

Imported Import(const fs::path& file, int height, int width, const InputNormalization& n) {
  Imported m;
  auto graph = ReadModel(file.string());
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  if (!graph.ok()) return m;
  auto shared = std::make_shared<const Graph>(std::move(graph).value());
  auto sg = StaticGraph::Infer(shared, 1, height, width);
  EXPECT_TRUE(sg.ok()) << sg.status().ToString();
  if (!sg.ok()) return m;
  auto net = ImportNetwork(*sg, file.stem().string(), n);
  EXPECT_TRUE(net.ok()) << net.status().ToString();
  if (!net.ok()) return m;
  m.net = std::move(net).value();
  auto plan = LayerPlan::Create(m.net.network, height, width);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return m;
  m.plan.emplace(std::move(plan).value());
  auto weights = PrepareWeights(*m.net.network, m.net.weights, file.filename().string());
  EXPECT_TRUE(weights.ok()) << weights.status().ToString();
  if (weights.ok()) m.weights = std::move(weights).value();
  m.raw_offsets = m.plan->raw_bounds();
  return m;
}

std::vector<double> Photo(const std::string& name, const InputNormalization& n, int height,
                          int width) {
  auto decoded = image::Decode(e2e::ReadBytes(e2e::PhotoPath(name)));
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  if (!decoded.ok()) return {};
  return NormalizePlanar(n, image::Resize(decoded->image, width, height), height, width);
}

// Imports `file` at height x width, runs it on a photo in ONNX Runtime, the FP64 reference
// executor and the CPU backend (FP32, both memory formats) and compares every graph output;
// returns ONNX Runtime's outputs (empty on a failure already reported).
std::vector<OrtOutput> ExpectPlanMatchesOrt(const fs::path& file, int height, int width,
                                            const InputNormalization& normalization,
                                            double tolerance) {
  Imported m = Import(file, height, width, normalization);
  if (!m.plan.has_value()) return {};
  const Network& net = *m.net.network;
  const std::vector<double> input = Photo("sample2.jpg", net.normalization(), height, width);
  std::vector<OrtOutput> ort = RunOrt(file, input, height, width);
  EXPECT_EQ(ort.size(), m.net.outputs.size());
  if (ort.size() != m.net.outputs.size()) return {};

  auto reference = RunReference(*m.plan, m.weights, input);
  EXPECT_TRUE(reference.ok()) << reference.status().ToString();
  if (!reference.ok()) return {};
  const std::vector<float> reference_raw(reference->raw.begin(), reference->raw.end());

  c10::InferenceMode guard;
  const at::Tensor x =
      at::from_blob(const_cast<double*>(input.data()), {1, 3, height, width}, at::kDouble)
          .to(at::kFloat);
  std::vector<std::pair<std::string, std::vector<float>>> runs = {
      {"fp64 reference", reference_raw}};
  for (bool channels_last : {true, false}) {
    const engine::torch_backend::TorchWeights tw =
        engine::torch_backend::MakeTorchWeights(net, m.weights, at::kFloat, channels_last);
    const engine::torch_backend::PlanOutputs out =
        engine::torch_backend::RunPlan(*m.plan, tw,
                                       x.contiguous(channels_last ? at::MemoryFormat::ChannelsLast
                                                                  : at::MemoryFormat::Contiguous));
    EXPECT_TRUE(out.raw.defined());
    if (!out.raw.defined()) return {};
    EXPECT_EQ(out.raw.size(1), m.plan->raw_floats());
    const at::Tensor raw = out.raw.contiguous();
    runs.emplace_back(
        channels_last ? "cpu fp32 channels-last" : "cpu fp32 planar",
        std::vector<float>(raw.data_ptr<float>(), raw.data_ptr<float>() + raw.numel()));
  }
  for (size_t o = 0; o < ort.size(); ++o) {
    const OutputSource& source = m.net.outputs[o];
    EXPECT_EQ(source.name, ort[o].name);
    EXPECT_EQ(source.width, ort[o].dims.back());
    for (const auto& [what, raw] : runs) {
      const std::vector<float> got = GraphOutput(source, raw, m.raw_offsets);
      const double diff = RelativeDiff(got, ort[o].values);
      EXPECT_LT(diff, tolerance) << what << ", output " << source.name;
      std::printf("%s %dx%d %s %s: max difference %.3g of the largest value\n",
                  file.filename().c_str(), width, height, source.name.c_str(), what.c_str(), diff);
    }
  }
  return ort;
}

class BlazeFaceParity : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(BlazeFaceParity, PlanExecutorsMatchOnnxRuntime) {
  const auto& [file, side] = GetParam();
  InputNormalization n;  // MediaPipe: RGB to [-1, 1]
  for (int c = 0; c < 3; ++c) n.mean[c] = n.divisor[c] = 127.5;
  Imported m = Import(kBlazeFace / file, side, side, n);
  ASSERT_TRUE(m.plan.has_value());
  EXPECT_EQ(m.net.network->fixed_input_side(), side);
  // One level per output: 16² x 2 and 8² x 6 anchors.
  ASSERT_EQ(m.net.network->raw_outputs().size(), 4u);
  for (const OutputSource& source : m.net.outputs) EXPECT_EQ(source.raw_count, 1);
  const std::vector<OrtOutput> ort = ExpectPlanMatchesOrt(kBlazeFace / file, side, side, n, 2e-5);
  ASSERT_FALSE(ort.empty());
  // The photo's faces: some anchor scores high in ONNX Runtime's own output (the test is not
  // comparing zeros).
  const std::vector<float>& logits = ort[0].values;
  EXPECT_GT(*std::max_element(logits.begin(), logits.end()), 0.0f) << "no face logit above 0";
}

INSTANTIATE_TEST_SUITE_P(
    Files, BlazeFaceParity,
    ::testing::Values(std::make_tuple("face_detection_front_128x128_barracuda.onnx", 128),
                      std::make_tuple("face_detection_back_256x256_barracuda.onnx", 256)));

}  // namespace
}  // namespace mogserve::model::onnx

namespace mogserve::model::onnx {
namespace {

// The exported family networks the plan maps (manifest.json of make_models.py), at each of their
// sizes: SCRFD's nearest and YuNet's bilinear FPN upsampling among them.
TEST(ExportedFamilyParity, PlanExecutorsMatchOnnxRuntime) {
  std::ifstream in(kExported / "manifest.json");
  ASSERT_TRUE(in) << "no manifest in " << kExported;
  const json manifest = json::parse(in);
  InputNormalization n;  // insightface's (x - 127.5) / 128
  for (int c = 0; c < 3; ++c) {
    n.mean[c] = 127.5;
    n.divisor[c] = 128.0;
  }
  std::set<std::string> checked;
  for (const json& entry : manifest) {
    const std::string family = entry.at("family").is_null() ? "" : entry.at("family");
    if (family != "scrfd" && family != "yunet") continue;
    for (const json& size : entry.at("sizes")) {
      const int h = size.at(0), w = size.at(1);
      SCOPED_TRACE(entry.at("file").get<std::string>() + " at " + std::to_string(w) + "x" +
                   std::to_string(h));
      const std::vector<OrtOutput> ort =
          ExpectPlanMatchesOrt(kExported / entry.at("file").get<std::string>(), h, w, n, 1e-4);
      EXPECT_FALSE(ort.empty());
      checked.insert(family);
    }
  }
  EXPECT_EQ(checked, (std::set<std::string>{"scrfd", "yunet"}));
}

}  // namespace
}  // namespace mogserve::model::onnx
