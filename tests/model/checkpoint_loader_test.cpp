#include "model/checkpoint_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/file_util.h"
#include "model/torch_state_dict.h"

namespace mogserve::model {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  return std::string(MOGSERVE_TEST_DATA_DIR) + "/checkpoints/" + name;
}

const HostTensor& Get(const HostTensorMap& m, const std::string& name) {
  static const HostTensor kEmpty;
  auto it = m.find(name);
  EXPECT_NE(it, m.end()) << "missing " << name;
  return it == m.end() ? kEmpty : it->second;
}

// The values make_fixtures.py writes (see tests/data/checkpoints/make_fixtures.py).
void ExpectFixtureStateDict(const HostTensorMap& stored, const std::string& prefix = "") {
  HostTensorMap sd;
  for (const auto& [name, t] : stored) {
    ASSERT_EQ(name.rfind(prefix, 0), 0u) << name;  // keys come back as stored
    sd.emplace(name.substr(prefix.size()), t);
  }
  EXPECT_EQ(sd.size(), 8u);
  const HostTensor& w = Get(sd, "conv.weight");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3, 2, 2}));
  ASSERT_EQ(w.values.size(), 24u);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(w.values[i], i / 8.0f);
  EXPECT_EQ(Get(sd, "conv.bias").values, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_TRUE(Get(sd, "bn.num_batches_tracked").shape.empty());
  EXPECT_EQ(Get(sd, "bn.num_batches_tracked").values, (std::vector<float>{7.0f}));
  EXPECT_EQ(Get(sd, "half").values, (std::vector<float>{1.0f, -2.5f, 65504.0f}));
  EXPECT_EQ(Get(sd, "bf16").values, (std::vector<float>{1.0f, -5.0f}));
  EXPECT_EQ(Get(sd, "double").values, (std::vector<float>{0.25f}));
  EXPECT_EQ(Get(sd, "view").values, (std::vector<float>{2, 3, 4}));  // storage offset 2
  const HostTensor& t = Get(sd, "transposed");                       // arange(12).reshape(3, 4).t()
  EXPECT_EQ(t.shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(t.values, (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

TEST(CheckpointLoaderTest, ReadsTorchSaveZipFilesInEveryShape) {
  for (const char* name : {"plain.pt", "wrapped_state_dict.pt", "wrapped_net.pt"}) {
    SCOPED_TRACE(name);
    auto sd = LoadCheckpoint(Fixture(name));
    ASSERT_TRUE(sd.ok()) << sd.status().ToString();
    ExpectFixtureStateDict(*sd);
  }
  auto prefixed = LoadCheckpoint(Fixture("module_prefix.pt"));
  ASSERT_TRUE(prefixed.ok()) << prefixed.status().ToString();
  ExpectFixtureStateDict(*prefixed, "module.");
  // A real nn.Module state_dict: Parameters and the OrderedDict's _metadata (a BUILD opcode).
  auto m = LoadCheckpoint(Fixture("module_state_dict.pt"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->size(), 7u);
  EXPECT_EQ(Get(*m, "0.weight").values, (std::vector<float>{0.5f, -0.5f}));
  EXPECT_EQ(Get(*m, "0.bias").values, (std::vector<float>{0.125f, 0.25f}));
  EXPECT_EQ(Get(*m, "1.running_var").values, (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(Get(*m, "1.num_batches_tracked").values, (std::vector<float>{0.0f}));
}

TEST(CheckpointLoaderTest, RefusesWhatItCannotReadWithTheReason) {
  const std::string legacy = Fixture("legacy.pt");
  auto l = LoadCheckpoint(legacy);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(l.status().message(), HasSubstr("legacy (pre-zip) PyTorch pickle"));
  EXPECT_THAT(l.status().message(), HasSubstr("tools/convert_checkpoint.py " + legacy));

  auto none = LoadCheckpoint(Fixture("no_state_dict.pt"));
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("holds no state_dict"));

  EXPECT_EQ(LoadCheckpoint(Fixture("missing.pt")).status().code(), StatusCode::kNotFound);

  // Random bytes, and every truncation of a real file: an error, never a crash.
  auto bytes = ReadFileBytes(Fixture("plain.pt"));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(SniffCheckpointFormat(*bytes), CheckpointFormat::kTorchZip);
  for (size_t cut = 0; cut + 1 < bytes->size(); cut += 7) {
    const std::vector<uint8_t> part(bytes->begin(), bytes->begin() + cut);
    EXPECT_FALSE(ReadTorchZipStateDict(part).ok()) << "cut at " << cut;
  }
  // Corrupt the pickle: flip bytes inside data.pkl (the first record) — errors only.
  for (size_t at = 40; at < 400; at += 3) {
    std::vector<uint8_t> corrupt = *bytes;
    corrupt[at] ^= 0x5a;
    (void)ReadTorchZipStateDict(corrupt);  // must not crash or hang; outcome may be either
  }
  const fs::path noise = fs::temp_directory_path() / "mogserve_noise_checkpoint.pt";
  std::ofstream(noise, std::ios::binary) << std::string(1000, '\x42');
  auto n = LoadCheckpoint(noise.string());
  fs::remove(noise);
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(n.status().message(), HasSubstr("not a checkpoint mogserve can read"));
}

}  // namespace
}  // namespace mogserve::model
