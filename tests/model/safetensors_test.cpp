#include "model/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

namespace mogserve::model {
namespace {

using ::testing::HasSubstr;

// Builds a safetensors file from a JSON header and raw data, the way the format lays it out.
std::vector<uint8_t> Build(const nlohmann::json& header, const std::vector<uint8_t>& data) {
  const std::string text = header.dump();
  const uint64_t n = text.size();
  std::vector<uint8_t> out(8 + text.size() + data.size());
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + text.size(), data.data(), data.size());
  return out;
}

template <typename T>
void Append(std::vector<uint8_t>& data, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  data.insert(data.end(), b, b + sizeof(T));
}

nlohmann::json Entry(const char* dtype, std::vector<int64_t> shape, uint64_t begin, uint64_t end) {
  return {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}};
}

const HostTensor& Get(const HostTensorMap& m, const std::string& name) {
  static const HostTensor kEmpty;
  auto it = m.find(name);
  EXPECT_NE(it, m.end()) << "missing " << name;
  return it == m.end() ? kEmpty : it->second;
}

TEST(SafetensorsTest, ConvertsEveryDtypeToFloat) {
  std::vector<uint8_t> data;
  Append<float>(data, 1.5f);  // f32 [2]: bytes 0..8
  Append<float>(data, -3.25f);
  // f16 [5]: 1.0, -2.0, 65504 (max), 2^-24 (smallest subnormal), inf — bytes 8..18
  for (uint16_t h : {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00}) Append<uint16_t>(data, h);
  for (uint16_t b : {0x3F80, 0xC0A0}) Append<uint16_t>(data, b);  // bf16 1.0, -5.0: 18..22
  Append<int64_t>(data, 123456);                                  // i64 scalar: 22..30
  Append<double>(data, 0.1);                                      // f64: 30..38
  Append<uint8_t>(data, 200);                                     // u8: 38..39
  const nlohmann::json header = {{"__metadata__", {{"format", "pt"}}},
                                 {"w", Entry("F32", {2}, 0, 8)},
                                 {"h", Entry("F16", {5}, 8, 18)},
                                 {"b", Entry("BF16", {1, 2}, 18, 22)},
                                 {"bn.num_batches_tracked", Entry("I64", {}, 22, 30)},
                                 {"d", Entry("F64", {1}, 30, 38)},
                                 {"u", Entry("U8", {1}, 38, 39)}};
  auto parsed = ParseSafetensors(Build(header, data));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->size(), 6u);  // __metadata__ is not a tensor
  EXPECT_EQ(Get(*parsed, "w").values, (std::vector<float>{1.5f, -3.25f}));
  const std::vector<float>& h = Get(*parsed, "h").values;
  ASSERT_EQ(h.size(), 5u);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 65504.0f);
  EXPECT_EQ(h[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(h[4], std::numeric_limits<float>::infinity());
  EXPECT_EQ(Get(*parsed, "b").shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Get(*parsed, "b").values, (std::vector<float>{1.0f, -5.0f}));
  EXPECT_TRUE(Get(*parsed, "bn.num_batches_tracked").shape.empty());
  EXPECT_EQ(Get(*parsed, "bn.num_batches_tracked").values, (std::vector<float>{123456.0f}));
  EXPECT_EQ(Get(*parsed, "d").values, (std::vector<float>{0.1f}));
  EXPECT_EQ(Get(*parsed, "u").values, (std::vector<float>{200.0f}));

  // The same bytes through a file.
  const auto path = std::filesystem::temp_directory_path() /
                    ("mogserve_safetensors_" + std::to_string(::getpid()) + ".safetensors");
  const std::vector<uint8_t> file = Build(header, data);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  auto loaded = LoadSafetensors(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(Get(*loaded, "w").values, Get(*parsed, "w").values);
  auto missing = LoadSafetensors(path.string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

void ExpectError(const std::vector<uint8_t>& bytes, StatusCode code, const std::string& text) {
  auto parsed = ParseSafetensors(bytes);
  ASSERT_FALSE(parsed.ok()) << "expected an error containing: " << text;
  EXPECT_EQ(parsed.status().code(), code) << parsed.status().ToString();
  EXPECT_THAT(parsed.status().message(), HasSubstr(text));
}

TEST(SafetensorsTest, MalformedFilesGiveNamedErrors) {
  const std::vector<uint8_t> eight = {0, 1, 2, 3, 4, 5, 6, 7};  // an 8-byte data section
  ExpectError({1, 2, 3}, StatusCode::kInvalidData, "shorter than its 8-byte header");
  ExpectError(Build({{"w", Entry("F32", {2}, 0, 8)}}, {}), StatusCode::kInvalidData,
              "outside the 0-byte data section");
  std::vector<uint8_t> huge = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '{', '}'};
  ExpectError(huge, StatusCode::kInvalidData, "exceeds the file");
  std::vector<uint8_t> not_json = {4, 0, 0, 0, 0, 0, 0, 0, 'n', 'o', 'p', 'e'};
  ExpectError(not_json, StatusCode::kInvalidData, "not a JSON object");
  ExpectError(Build({{"w", {{"dtype", "F32"}, {"shape", {2}}}}}, eight), StatusCode::kInvalidData,
              "'w' lacks dtype, shape or data_offsets");
  ExpectError(Build({{"w", Entry("F8_E4M3", {8}, 0, 8)}}, eight), StatusCode::kUnsupported,
              "'w' has dtype F8_E4M3");
  ExpectError(Build({{"w", Entry("F32", {3}, 0, 8)}}, eight), StatusCode::kInvalidData,
              "'w' spans 8 bytes, its shape and F32 need 12");
  ExpectError(Build({{"a", Entry("F32", {2}, 0, 8)}, {"b", Entry("F32", {1}, 4, 8)}}, eight),
              StatusCode::kInvalidData, "overlap or hole");
  ExpectError(Build({{"a", Entry("F32", {1}, 0, 4)}}, eight), StatusCode::kInvalidData,
              "cover 4 bytes of a 8-byte data section");
  ExpectError(Build({{"w", {{"dtype", "F32"}, {"shape", {-1}}, {"data_offsets", {0, 4}}}}}, eight),
              StatusCode::kInvalidData, "bad shape of 'w'");
  // Random bytes: an error, never a crash.
  std::vector<uint8_t> noise(4096);
  uint32_t x = 12345;
  for (auto& b : noise) b = static_cast<uint8_t>((x = x * 1664525 + 1013904223) >> 24);
  EXPECT_FALSE(ParseSafetensors(noise).ok());
}

}  // namespace
}  // namespace mogserve::model
