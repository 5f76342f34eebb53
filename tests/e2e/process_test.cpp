// Tests of the child-process helper itself, so that e2e failures can be trusted.
#include "process.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

namespace mogserve::e2e {
namespace {

TEST(ProcessTest, CapturesLargeStdoutAndStderrSeparatelyWithoutDeadlock) {
  // 1 MB on each stream, interleaved: far more than a pipe buffer holds.
  const ProcessResult r =
      RunProcess("/bin/sh", {"-c",
                             "for i in 1 2 3 4; do head -c 262144 /dev/zero | tr '\\0' o; "
                             "head -c 262144 /dev/zero | tr '\\0' e >&2; done; exit 7"});
  ASSERT_TRUE(r.spawn_error.empty()) << r.spawn_error;
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, std::string(1 << 20, 'o'));
  EXPECT_EQ(r.err, std::string(1 << 20, 'e'));
}

TEST(ProcessTest, AppliesWorkingDirectoryAndEnvironment) {
  ProcessOptions options;
  options.cwd = std::filesystem::temp_directory_path().string();
  options.env = {{"MOGSERVE_E2E_PROBE", "a b;c"}};
  options.unset_env = {"HOME"};
  const ProcessResult r = RunProcess(
      "/bin/sh", {"-c", "pwd; echo \"$MOGSERVE_E2E_PROBE\"; echo \"${HOME-unset}\""}, options);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, std::filesystem::canonical(options.cwd).string() + "\na b;c\nunset\n");
}

TEST(ProcessTest, KillsTheChildAfterTheTimeout) {
  ProcessOptions options;
  options.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult r = RunProcess("/bin/sleep", {"30"}, options);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ProcessTest, ReportsAProgramThatCannotBeExecuted) {
  const ProcessResult r = RunProcess("/nonexistent/program", {});
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_NE(r.spawn_error.find("/nonexistent/program"), std::string::npos) << r.spawn_error;
}

}  // namespace
}  // namespace mogserve::e2e
