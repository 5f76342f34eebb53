// End-to-end tests of the mogserve command line: usage errors, --version/--help, and how the
// model folder is found.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "e2e_support.h"

namespace mogserve::e2e {
namespace {

namespace fs = std::filesystem;

TEST(CliE2E, UsageErrorsExitWithCode2AndFatalErrorsWith3) {
  const std::string photo = PhotoPath("astronaut.png").string();
  {
    SCOPED_TRACE("no paths");
    const ProcessResult r = RunDetect({});
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "paths")) << r.err;
    EXPECT_EQ(r.out, "");
  }
  {
    SCOPED_TRACE("score threshold out of range");
    const ProcessResult r = RunDetect({"--score-threshold", "1.5", photo});
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "--score-threshold")) << r.err;
    EXPECT_EQ(r.out, "");
  }
  {
    SCOPED_TRACE("unknown flag");
    const ProcessResult r = RunDetect({"--no-such-flag", photo});
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "--no-such-flag")) << r.err;
    EXPECT_EQ(r.out, "");
  }
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--threads", "-1"},
                                                        {"--max-faces", "0"},
                                                        {"--batch-size", "0"},
                                                        {"--batch-size", "abc"},
                                                        {"--max-pixels", "0"}}) {
    SCOPED_TRACE(flag + " " + value);
    const ProcessResult r = RunDetect({flag, value, photo});
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_TRUE(Contains(r.err, flag)) << r.err;
    EXPECT_EQ(r.out, "");
  }
  {
    SCOPED_TRACE("bad bench batch size");
    const ProcessResult r = RunMogserve({"bench", "engine", "--batch-sizes", "1,0"});
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "--batch-sizes")) << r.err;
  }
  {
    SCOPED_TRACE("no subcommand");
    const ProcessResult r = RunMogserve({});
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
  }
  {
    SCOPED_TRACE("missing model folder");
    const ProcessResult r = RunMogserve({"detect", "--model-dir", "/nonexistent", photo});
    EXPECT_EQ(r.exit_code, 3) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "scripts/setup.sh")) << r.err;
    EXPECT_EQ(r.out, "");
  }
  {
    SCOPED_TRACE("results cannot be written");
    const ProcessResult r = RunDetect({"--output", "/dev/full", photo});
    EXPECT_EQ(r.exit_code, 3) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "writing the results failed")) << r.err;
  }
  {
    SCOPED_TRACE("--output in a folder that does not exist");
    const ProcessResult r = RunDetect({"--output", "/nonexistent/dir/out.jsonl", photo});
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_TRUE(Contains(r.err, "/nonexistent/dir/out.jsonl")) << r.err;
  }
}

TEST(CliE2E, VersionAndHelp) {
  const ProcessResult version = RunMogserve({"--version"});
  EXPECT_EQ(version.exit_code, 0) << version.Describe();
  EXPECT_TRUE(Contains(version.out, "mogserve 0.")) << version.out;

  const ProcessResult top = RunMogserve({"--help"});
  EXPECT_EQ(top.exit_code, 0) << top.Describe();
  EXPECT_FALSE(Contains(top.out, "GPU")) << "no GPU backend is built yet:\n" << top.out;
  // The summary of `bench` names each of its subcommands.
  const size_t bench = top.out.find("Benchmarks:");
  ASSERT_NE(bench, std::string::npos) << top.out;
  const std::string summary = top.out.substr(bench, top.out.find("eval", bench) - bench);
  for (const char* sub : {"engine (", "pipeline (", "serve (", "report ("}) {
    EXPECT_TRUE(Contains(summary, sub)) << "the bench summary lacks " << sub << ":\n" << summary;
  }

  const ProcessResult help = RunMogserve({"detect", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.Describe();
  for (const char* option :
       {"--output", "--annotate", "--score-threshold", "--max-faces", "--batch-size",
        "--max-pixels", "--timing", "--quiet", "--model-dir", "--threads", "--instances",
        "--policy", "--tta", "paths"}) {
    EXPECT_TRUE(Contains(help.out, option)) << "detect --help lacks " << option << ":\n"
                                            << help.out;
  }
}

TEST(CliE2E, ModelFolderIsFoundNextToTheExecutableAndEnvironmentOverrides) {
  TempDir cwd;  // no models/ here: the folder must be found via the executable's location
  ProcessOptions options;
  options.cwd = cwd.path().string();
  options.unset_env = {"MOGSERVE_MODEL_DIR"};
  const ProcessResult found =
      RunMogserve({"detect", "--quiet", PhotoPath("astronaut.png").string()}, options);
  ASSERT_EQ(found.exit_code, 0) << found.Describe();
  const std::vector<nlohmann::json> lines = ParseJsonLines(found.out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].value("faces", nlohmann::json::array()).size(), 1u) << lines[0].dump();
  EXPECT_EQ(found.err, "") << "--quiet prints no summary";

  options.env = {{"MOGSERVE_MODEL_DIR", cwd / "no_model_here"}};
  options.unset_env.clear();
  const ProcessResult bad = RunMogserve({"detect", PhotoPath("astronaut.png").string()}, options);
  EXPECT_EQ(bad.exit_code, 3) << bad.Describe();
  EXPECT_TRUE(Contains(bad.err, "scripts/setup.sh")) << bad.err;
  EXPECT_EQ(bad.out, "");

  // --model-dir wins over the environment.
  const ProcessResult flag = RunMogserve(
      {"detect", "--quiet", "--model-dir", TestModelDir(), PhotoPath("astronaut.png").string()},
      options);
  EXPECT_EQ(flag.exit_code, 0) << flag.Describe();
  EXPECT_EQ(ParseJsonLines(flag.out).size(), 1u);
}

}  // namespace
}  // namespace mogserve::e2e
