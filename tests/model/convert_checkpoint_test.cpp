// tools/convert_checkpoint.py round trip: a synthetic MogFace checkpoint written by torch.save
// (plain, wrapped under "state_dict" with DataParallel "module." keys, and a legacy pre-zip
// pickle) converted to safetensors holds exactly the tensors of the zip file, as the C++ loader
// reads both; and the converter prints the variant it detected. Runs Debian's python3-torch
// (/usr/bin/python3), which scripts/setup.sh installs; skipped only where it cannot import torch.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/subprocess.h"
#include "model/checkpoint_loader.h"
#include "model/mogface/mogface_variant.h"

namespace mogserve::model {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";

fs::path SourceDir() {
  return fs::path(MOGSERVE_TEST_DATA_DIR).parent_path().parent_path();
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs argv (no shell) to its end, stdout and stderr together.
CommandResult RunCommand(const std::vector<std::string>& argv) {
  CommandResult r;
  SubprocessOptions options;
  options.out = Redirect::Pipe();
  options.err = Redirect::ToStdout();
  StatusOr<SubprocessOutput> run = RunSubprocess(argv, options, std::chrono::minutes(10));
  if (!run.ok()) {
    r.output = run.status().ToString();
    return r;
  }
  r.exit_code = run->status.exit_code;
  r.output = std::move(run->out);
  return r;
}

CommandResult RunPython(const fs::path& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kPython, script.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mogserve-convert-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  bool ok() const { return !path_.empty(); }

 private:
  fs::path path_;
};

HostTensorMap Load(const std::string& path) {
  auto m = LoadCheckpoint(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : HostTensorMap{};
}

// Same keys, shapes and bit-identical values.
void ExpectIdentical(const HostTensorMap& expected, const HostTensorMap& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  int mismatches = 0;
  for (const auto& [name, t] : expected) {
    const auto it = actual.find(name);
    if (it == actual.end()) {
      ADD_FAILURE() << "missing " << name;
      if (++mismatches > 10) return;
      continue;
    }
    const HostTensor& u = it->second;
    const bool same =
        t.shape == u.shape && t.values.size() == u.values.size() &&
        std::memcmp(t.values.data(), u.values.data(), t.values.size() * sizeof(float)) == 0;
    if (!same) {
      ADD_FAILURE() << name << ": " << ShapeString(t.shape) << " vs " << ShapeString(u.shape)
                    << " or different values";
      if (++mismatches > 10) return;
    }
  }
}

TEST(ConvertCheckpointTest, ZipToSafetensorsRoundTripKeepsEveryTensor) {
  if (RunCommand({kPython, "-c", "import torch, numpy"}).exit_code != 0) {
    GTEST_SKIP() << kPython << " cannot import torch (scripts/setup.sh installs python3-torch)";
  }
  TempDir tmp;
  ASSERT_TRUE(tmp.ok());
  const fs::path make = SourceDir() / "tests/reference/make_synthetic_checkpoint.py";
  const fs::path convert = SourceDir() / "tools/convert_checkpoint.py";

  // R50: the smallest variant (388 entries, 36M values).
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"R50", tmp / "plain", "--seed", "3"},
        std::vector<std::string>{"R50", tmp / "wrapped", "--seed", "3", "--wrap", "state_dict",
                                 "--module-prefix"},
        std::vector<std::string>{"R50", tmp / "legacy", "--seed", "3", "--legacy"}}) {
    const CommandResult made = RunPython(make, args);
    ASSERT_EQ(made.exit_code, 0) << made.output;
  }
  const HostTensorMap zip = Load(tmp / "plain.pt");
  ASSERT_EQ(zip.size(), 388u);
  ASSERT_TRUE(mogface::CheckCheckpointKeys(zip, mogface::Variant::kR50).ok());
  // The generator's own safetensors agree with its zip file.
  ExpectIdentical(zip, Load(tmp / "plain.safetensors"));

  for (const char* stem : {"plain", "wrapped", "legacy"}) {
    SCOPED_TRACE(stem);
    const std::string out = tmp / (std::string(stem) + "_converted.safetensors");
    const CommandResult converted = RunPython(convert, {tmp / (std::string(stem) + ".pt"), out});
    ASSERT_EQ(converted.exit_code, 0) << converted.output;
    EXPECT_NE(converted.output.find("MogFace R50, 388 entries"), std::string::npos)
        << converted.output;
    // Plain keys: the converter strips the wrapper and the "module." prefix.
    ExpectIdentical(zip, Load(out));
  }
  // The wrapped zip read by the C++ loader itself, keys normalised as the engine does.
  ExpectIdentical(zip, mogface::NormalizeCheckpointKeys(Load(tmp / "wrapped.pt")));
}

}  // namespace
}  // namespace mogserve::model
