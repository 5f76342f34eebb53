// Tests of the TensorFlow.js weights loader (spec: shipped_face_models.md §2.1): manifests and
// shards are built here byte by byte, so every expected value is computed independently.
#include "model/tfjs_weights.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mogserve::model {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// face-api's first tensor (Prediction/BoxPredictor_0/ClassPredictor/weights) uses these; for many
// bytes byte*scale+min rounds to a different float when computed in float instead of double.
constexpr double kScale = 0.0026856216729856004;
constexpr double kMin = -0.34107395246917127;

json Weight(const std::string& name, std::vector<int64_t> shape, const std::string& dtype) {
  return json{{"name", name}, {"shape", shape}, {"dtype", dtype}};
}

json Quantized(json w, const std::string& quant_dtype, double scale, double min) {
  w["quantization"] = json{{"dtype", quant_dtype}, {"scale", scale}, {"min", min}};
  return w;
}

json Group(std::vector<std::string> paths, std::vector<json> weights) {
  return json{{"paths", paths}, {"weights", weights}};
}

std::string Manifest(std::vector<json> groups) {
  return json(groups).dump();
}

void PutU16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v & 0xff));  // little-endian, as tfjs writes it
  out.push_back(static_cast<uint8_t>(v >> 8));
}

void PutF32(std::vector<uint8_t>& out, float v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  out.insert(out.end(), b, b + 4);
}

void PutI32(std::vector<uint8_t>& out, int32_t v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  out.insert(out.end(), b, b + 4);
}

const TfjsTensor& Get(const TfjsWeights& w, const std::string& name) {
  static const TfjsTensor kEmpty;
  auto it = w.find(name);
  EXPECT_NE(it, w.end()) << "missing tensor " << name;
  return it == w.end() ? kEmpty : it->second;
}

void DequantisesEveryDtypeAndPacksTensorsBackToBack() {
  const std::vector<uint8_t> u8 = {0, 1, 26, 100, 128, 254, 255};
  const std::vector<uint16_t> u16 = {0, 1, 300, 40000, 65535};
  const std::vector<float> f32 = {1.5f, -0.0f, 3.0e38f, -1.0e-30f, 0.1f};
  const std::vector<uint8_t> int_bytes = {0, 3, 5, 2};  // 0.25, 1.75, 2.75, 1.25 before rounding
  const std::vector<int32_t> i32 = {-7, 123456};

  // 7 uint8 bytes first, so the float32 tensor starts at the odd offset 7 and everything after
  // it is unaligned too.
  std::vector<uint8_t> shards(u8.begin(), u8.end());
  for (float v : f32) PutF32(shards, v);
  for (uint16_t v : u16) PutU16(shards, v);
  shards.insert(shards.end(), int_bytes.begin(), int_bytes.end());
  for (int32_t v : i32) PutI32(shards, v);
  ASSERT_EQ(shards.size(), 7u + 20u + 10u + 4u + 8u);

  const std::string manifest = Manifest(
      {Group({"a.bin"}, {Quantized(Weight("q8", {7}, "float32"), "uint8", kScale, kMin),
                         Weight("raw", {5}, "float32"),
                         Quantized(Weight("q16", {5, 1}, "float32"), "uint16", 0.001, -2.5),
                         Quantized(Weight("int_q", {2, 2}, "int32"), "uint8", 0.5, 0.25),
                         Weight("int_raw", {2}, "int32")})});

  auto parsed = ParseTfjsWeights(manifest, shards);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const TfjsWeights& w = *parsed;
  EXPECT_EQ(w.size(), 5u);

  const TfjsTensor& q8 = Get(w, "q8");
  EXPECT_EQ(q8.shape, (std::vector<int64_t>{7}));
  ASSERT_EQ(q8.values.size(), u8.size());
  int float_path_differs = 0;
  for (size_t i = 0; i < u8.size(); ++i) {
    const float expected = static_cast<float>(u8[i] * kScale + kMin);
    EXPECT_EQ(q8.values[i], expected) << "byte " << int{u8[i]};
    const float in_float =
        static_cast<float>(u8[i]) * static_cast<float>(kScale) + static_cast<float>(kMin);
    if (in_float != expected) ++float_path_differs;
  }
  // The bytes above are chosen so that a loader computing in float would fail this test.
  EXPECT_GT(float_path_differs, 0);
  EXPECT_EQ(q8.values.front(), static_cast<float>(kMin));
  EXPECT_EQ(q8.values.back(), static_cast<float>(255 * kScale + kMin));

  const TfjsTensor& raw = Get(w, "raw");
  ASSERT_EQ(raw.values.size(), f32.size());
  for (size_t i = 0; i < f32.size(); ++i) EXPECT_EQ(raw.values[i], f32[i]) << i;
  EXPECT_TRUE(std::signbit(raw.values[1]));

  const TfjsTensor& q16 = Get(w, "q16");
  EXPECT_EQ(q16.shape, (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(q16.numel(), 5);
  ASSERT_EQ(q16.values.size(), u16.size());
  for (size_t i = 0; i < u16.size(); ++i) {
    EXPECT_EQ(q16.values[i], static_cast<float>(u16[i] * 0.001 - 2.5)) << u16[i];
  }

  const TfjsTensor& int_q = Get(w, "int_q");
  EXPECT_EQ(int_q.values, (std::vector<float>{0.0f, 2.0f, 3.0f, 1.0f}));

  const TfjsTensor& int_raw = Get(w, "int_raw");
  EXPECT_EQ(int_raw.values, (std::vector<float>{-7.0f, 123456.0f}));
}

void ScalarsEmptyTensorsAndSeveralGroups() {
  // Group 1: a scalar (shape [], 1 element) and an empty tensor (0 bytes). Group 2 continues in
  // the same concatenated byte stream.
  std::vector<uint8_t> shards = {200};
  PutF32(shards, 2.25f);
  PutF32(shards, -4.0f);
  shards.push_back(9);
  const std::string manifest =
      Manifest({Group({"g1.bin"}, {Quantized(Weight("scalar", {}, "int32"), "uint8", 1.0, -100.0),
                                   Weight("empty", {0, 3}, "float32")}),
                Group({"g2a.bin", "g2b.bin"},
                      {Weight("pair", {2}, "float32"),
                       Quantized(Weight("last", {1, 1}, "float32"), "uint8", 0.5, 1.0)})});
  auto parsed = ParseTfjsWeights(manifest, shards);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->size(), 4u);
  EXPECT_EQ(Get(*parsed, "scalar").values, std::vector<float>{100.0f});
  EXPECT_TRUE(Get(*parsed, "scalar").shape.empty());
  EXPECT_EQ(Get(*parsed, "empty").numel(), 0);
  EXPECT_TRUE(Get(*parsed, "empty").values.empty());
  EXPECT_EQ(Get(*parsed, "pair").values, (std::vector<float>{2.25f, -4.0f}));
  EXPECT_EQ(Get(*parsed, "last").values, std::vector<float>{5.5f});
}

void RejectsMalformedManifestsAndByteCounts() {
  const std::vector<uint8_t> six_bytes = {1, 2, 3, 4, 5, 6};
  const std::string good = Manifest({Group(
      {"a.bin"}, {Quantized(Weight("first", {2}, "float32"), "uint8", 1.0, 0.0),
                  Quantized(Weight("second/tensor", {2, 2}, "float32"), "uint8", 1.0, 0.0)})});
  ASSERT_TRUE(ParseTfjsWeights(good, six_bytes).ok());

  struct Case {
    std::string what;
    std::string manifest;
    std::vector<uint8_t> shards;
    StatusCode code;
    std::vector<std::string> substrings;
  };
  const std::vector<uint8_t> five_bytes(six_bytes.begin(), six_bytes.end() - 1);
  std::vector<uint8_t> seven_bytes = six_bytes;
  seven_bytes.push_back(7);
  auto one_weight = [](json w) { return Manifest({Group({"a.bin"}, {w})}); };
  json no_name = Weight("x", {1}, "float32");
  no_name.erase("name");
  json no_shape = Weight("x", {1}, "float32");
  no_shape.erase("shape");
  json no_dtype = Weight("x", {1}, "float32");
  no_dtype.erase("dtype");
  json no_scale = Quantized(Weight("noscale", {1}, "float32"), "uint8", 1.0, 0.0);
  no_scale["quantization"].erase("scale");
  json numeric_name = Weight("x", {1}, "float32");
  numeric_name["name"] = 5;

  const std::vector<Case> cases = {
      {"shards too short",
       good,
       five_bytes,
       StatusCode::kInvalidData,
       {"'second/tensor'", "[2, 6)", "5 bytes"}},
      {"shards too long",
       good,
       seven_bytes,
       StatusCode::kInvalidData,
       {"describes 6 bytes", "hold 7"}},
      {"object, not array",
       R"({"paths": [], "weights": []})",
       {},
       StatusCode::kInvalidData,
       {"JSON array"}},
      {"not JSON", "this is not json", {}, StatusCode::kInvalidData, {"JSON array"}},
      {"group without weights",
       R"([{"paths": ["a.bin"]}])",
       {},
       StatusCode::kInvalidData,
       {"'weights'"}},
      {"missing name",
       one_weight(no_name),
       {0, 0, 0, 0},
       StatusCode::kInvalidData,
       {"name/shape/dtype"}},
      {"missing shape",
       one_weight(no_shape),
       {0, 0, 0, 0},
       StatusCode::kInvalidData,
       {"name/shape/dtype"}},
      {"missing dtype",
       one_weight(no_dtype),
       {0, 0, 0, 0},
       StatusCode::kInvalidData,
       {"name/shape/dtype"}},
      {"unsupported dtype",
       one_weight(Weight("half", {1}, "float16")),
       {0, 0},
       StatusCode::kUnsupported,
       {"float16", "'half'"}},
      {"bad quantization dtype",
       one_weight(Quantized(Weight("q", {1}, "float32"), "int8", 1.0, 0.0)),
       {0},
       StatusCode::kUnsupported,
       {"quantization dtype 'int8'", "'q'"}},
      {"quantization without scale",
       one_weight(no_scale),
       {0},
       StatusCode::kInvalidData,
       {"'noscale'", "scale/min"}},
      {"negative dimension",
       one_weight(Weight("neg", {2, -1}, "float32")),
       {},
       StatusCode::kInvalidData,
       {"bad shape", "'neg'"}},
      {"name is not a string",
       one_weight(numeric_name),
       {0, 0, 0, 0},
       StatusCode::kInvalidData,
       {"unexpected structure"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto parsed = ParseTfjsWeights(c.manifest, c.shards);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), c.code) << parsed.status().ToString();
    for (const std::string& s : c.substrings) {
      EXPECT_THAT(parsed.status().message(), HasSubstr(s));
    }
  }
}

TEST(TfjsWeightsTest, ParsesSyntheticManifestsAndRejectsMalformedOnes) {
  {
    SCOPED_TRACE("DequantisesEveryDtypeAndPacksTensorsBackToBack");
    DequantisesEveryDtypeAndPacksTensorsBackToBack();
  }
  {
    SCOPED_TRACE("ScalarsEmptyTensorsAndSeveralGroups");
    ScalarsEmptyTensorsAndSeveralGroups();
  }
  {
    SCOPED_TRACE("RejectsMalformedManifestsAndByteCounts");
    RejectsMalformedManifestsAndByteCounts();
  }
}

TEST(TfjsWeightsTest, LoadsTheShippedModelAndNamesMissingShards) {
  auto loaded = LoadTfjsWeights(MOGSERVE_TEST_MODEL_DIR, "ssd_mobilenetv1_model");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const TfjsWeights& w = *loaded;
  EXPECT_EQ(w.size(), 151u);
  EXPECT_EQ(Get(w, "Output/extra_dim").shape, (std::vector<int64_t>{1, 5118, 4}));
  EXPECT_EQ(Get(w, "Output/extra_dim").values.size(), 5118u * 4);
  EXPECT_EQ(Get(w, "MobilenetV1/Conv2d_0_pointwise/weights").shape,
            (std::vector<int64_t>{3, 3, 3, 32}));
  EXPECT_EQ(Get(w, "Prediction/BoxPredictor_0/ClassPredictor/weights").shape,
            (std::vector<int64_t>{1, 1, 512, 9}));
  EXPECT_EQ(Get(w, "MobilenetV1/Conv2d_13_pointwise/weights").shape,
            (std::vector<int64_t>{1, 1, 1024, 1024}));
  // int32 constants (spec §2.1), including one stored as 255 * (1/255) that must round to 1.
  EXPECT_EQ(Get(w, "Postprocessor/stack/1").values, std::vector<float>{5118.0f});
  EXPECT_EQ(Get(w, "Prediction/BoxPredictor_0/stack_1/1").values, std::vector<float>{3072.0f});
  EXPECT_EQ(Get(w, "Postprocessor/Slice/begin").values, (std::vector<float>{0.0f, 0.0f, 1.0f}));
  EXPECT_EQ(Get(w, "Postprocessor/Slice/size").values, (std::vector<float>{-1.0f, -1.0f, -1.0f}));
  EXPECT_EQ(Get(w, "Preprocessor/ResizeImage/size").values, (std::vector<float>{512.0f, 512.0f}));
  EXPECT_NEAR(Get(w, "Preprocessor/mul/x").values.at(0), 0.007843137718737125, 1e-5);

  // A manifest naming a shard that is not there.
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("tfjs_missing_shard_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "broken-weights_manifest.json");
    out << Manifest({Group({"broken_shard1.bin"}, {Weight("x", {1}, "float32")})});
  }
  auto missing = LoadTfjsWeights(dir.string(), "broken");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  EXPECT_THAT(missing.status().message(), HasSubstr("broken_shard1.bin"));

  auto no_manifest = LoadTfjsWeights(dir.string(), "absent");
  ASSERT_FALSE(no_manifest.ok());
  EXPECT_EQ(no_manifest.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(no_manifest.status().message(), HasSubstr("absent-weights_manifest.json"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mogserve::model
