#include "common/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mogserve {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

SubprocessOptions Piped() {
  SubprocessOptions o;
  o.out = Redirect::Pipe();
  o.err = Redirect::Pipe();
  return o;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A fresh folder under the test's temporary directory.
fs::path TempDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("mogserve_subprocess_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(SubprocessTest, ArgumentsReachTheProgramVerbatimWithoutAShell) {
  // Each of these would be split, expanded or executed by a shell.
  const std::vector<std::string> args = {"a b", "'q'", "$HOME", "*", "x;echo no", ""};
  std::vector<std::string> argv = {"/usr/bin/printf", "[%s]\n"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto run = RunSubprocess(argv, Piped(), milliseconds(10000));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->status.ok()) << run->status.Describe();
  EXPECT_EQ(run->out, "[a b]\n['q']\n[$HOME]\n[*]\n[x;echo no]\n[]\n");
  EXPECT_EQ(run->err, "");
}

TEST(SubprocessTest, ProgramWithoutASlashIsFoundInPath) {
  auto run = RunSubprocess({"echo", "hello"}, Piped(), milliseconds(10000));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->out, "hello\n");
}

TEST(SubprocessTest, ExitCodeAndSignalAreReported) {
  auto run =
      RunSubprocess({"/bin/sh", "-c", "echo oops >&2; exit 3"}, Piped(), milliseconds(10000));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status.exit_code, 3);
  EXPECT_FALSE(run->status.ok());
  EXPECT_EQ(run->err, "oops\n");
  EXPECT_EQ(run->status.Describe(), "exit 3");

  auto killed = RunSubprocess({"/bin/sh", "-c", "kill -TERM $$"}, Piped(), milliseconds(10000));
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(killed->status.exit_code, -1);
  EXPECT_EQ(killed->status.term_signal, SIGTERM);
  EXPECT_EQ(killed->status.Describe(), "signal " + std::to_string(SIGTERM));
}

TEST(SubprocessTest, MissingProgramIsNotFoundNamingIt) {
  Subprocess child;
  const Status st = child.Start({"/nonexistent/mogserve-no-such-program"});
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("/nonexistent/mogserve-no-such-program"), std::string::npos)
      << st.message();
  EXPECT_EQ(child.pid(), -1);

  Subprocess empty;
  EXPECT_EQ(empty.Start({}).code(), StatusCode::kInvalidArgument);
}

TEST(SubprocessTest, TimeoutKillsTheChild) {
  const auto start = std::chrono::steady_clock::now();
  auto run = RunSubprocess({"/bin/sleep", "30"}, Piped(), milliseconds(200));
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->status.timed_out);
  EXPECT_EQ(run->status.term_signal, SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  // The same through Wait, with nothing piped.
  Subprocess child;
  ASSERT_TRUE(child.Start({"/bin/sleep", "30"}).ok());
  EXPECT_TRUE(child.Running());
  const ExitStatus st = child.Wait(milliseconds(100));
  EXPECT_TRUE(st.timed_out);
  EXPECT_EQ(st.term_signal, SIGKILL);
  EXPECT_FALSE(child.Running());
  EXPECT_FALSE(child.Signal(SIGTERM));  // already reaped
}

TEST(SubprocessTest, TerminateSendsSigterm) {
  Subprocess child;
  ASSERT_TRUE(child.Start({"/bin/sleep", "30"}).ok());
  const ExitStatus st = child.Terminate(milliseconds(5000));
  EXPECT_FALSE(st.timed_out);
  EXPECT_EQ(st.term_signal, SIGTERM);
}

TEST(SubprocessTest, WorkingDirectoryAndEnvironment) {
  const fs::path dir = TempDir("cwd");
  SubprocessOptions o = Piped();
  o.cwd = dir.string();
  o.env = {{"MOGSERVE_SUBPROCESS_TEST", "set here"}};
  o.unset_env = {"HOME"};
  auto run = RunSubprocess(
      {"/bin/sh", "-c", "pwd; echo \"$MOGSERVE_SUBPROCESS_TEST\"; echo \"home=${HOME-unset}\""}, o,
      milliseconds(10000));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->out, fs::canonical(dir).string() + "\nset here\nhome=unset\n");
  fs::remove_all(dir);
}

TEST(SubprocessTest, RedirectsToFilesAndNull) {
  const fs::path dir = TempDir("files");
  const std::string input = (dir / "in.txt").string();
  { std::ofstream(input) << "from a file\n"; }
  SubprocessOptions o;
  o.in = Redirect::File(input);
  o.out = Redirect::File((dir / "out.txt").string());
  o.err = Redirect::ToStdout();
  Subprocess child;
  ASSERT_TRUE(child.Start({"/bin/sh", "-c", "cat; echo to-stderr >&2"}, o).ok());
  EXPECT_TRUE(child.Wait().ok());
  EXPECT_EQ(ReadAll((dir / "out.txt").string()), "from a file\nto-stderr\n");

  // stdin from /dev/null ends at once; output to /dev/null is gone.
  SubprocessOptions quiet;
  quiet.out = Redirect::Null();
  quiet.err = Redirect::Null();
  auto run = RunSubprocess({"/bin/cat"}, quiet, milliseconds(10000));
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->status.ok());
  EXPECT_EQ(run->out, "");

  SubprocessOptions bad;
  bad.out = Redirect::File((dir / "no-such-folder" / "out.txt").string());
  Subprocess never;
  const Status st = never.Start({"/bin/true"}, bad);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("no-such-folder"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("stdout"), std::string::npos) << st.message();
  fs::remove_all(dir);
}

TEST(SubprocessTest, PipesBothWays) {
  SubprocessOptions o;
  o.in = Redirect::Pipe();
  o.out = Redirect::Pipe();
  Subprocess child;
  ASSERT_TRUE(child.Start({"/usr/bin/tr", "a-z", "A-Z"}, o).ok());
  const std::string text = "through the pipe\n";
  ASSERT_EQ(write(child.stdin_fd(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(child.TakeStdin());
  EXPECT_EQ(child.stdin_fd(), -1);
  std::string out;
  char buf[256];
  for (ssize_t got; (got = read(child.stdout_fd(), buf, sizeof(buf))) > 0;) out.append(buf, got);
  EXPECT_TRUE(child.Wait(milliseconds(10000)).ok());
  EXPECT_EQ(out, "THROUGH THE PIPE\n");
}

TEST(SubprocessTest, LargeOutputOnBothPipesDoesNotDeadlock) {
  // 1 MB on each stream: far more than a pipe buffer, so both must be read while it runs.
  auto run =
      RunSubprocess({"/bin/sh", "-c", "head -c 1000000 /dev/zero; head -c 1000000 /dev/zero >&2"},
                    Piped(), milliseconds(30000));
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->status.ok()) << run->status.Describe();
  EXPECT_EQ(run->out.size(), 1000000u);
  EXPECT_EQ(run->err.size(), 1000000u);
}

TEST(SubprocessTest, DestructorKillsARunningChild) {
  pid_t pid = -1;
  {
    Subprocess child;
    ASSERT_TRUE(child.Start({"/bin/sleep", "30"}).ok());
    pid = child.pid();
    ASSERT_GT(pid, 0);
  }
  EXPECT_NE(kill(pid, 0), 0);  // reaped: no such process any more
}

}  // namespace
}  // namespace mogserve
