// Runs a program as a child process (fork + execve, no shell) and captures its output: the
// end-to-end tests drive the real mogserve binary through this.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace mogserve::e2e {

struct ProcessOptions {
  // Working directory of the child; empty = the caller's.
  std::string cwd;
  // Variables set (or replaced) in the child's environment, on top of the caller's.
  std::vector<std::pair<std::string, std::string>> env;
  // Variables removed from the child's environment.
  std::vector<std::string> unset_env;
  // The child is killed (SIGKILL) when it runs longer than this.
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
};

struct ProcessResult {
  // The exit status when the child exited normally; -1 when it was killed by a signal or could
  // not be started.
  int exit_code = -1;
  int term_signal = 0;  // the signal that ended the child, 0 if none
  bool timed_out = false;
  std::string out;          // everything the child wrote to stdout
  std::string err;          // everything the child wrote to stderr
  std::string spawn_error;  // non-empty when the child could not be started

  // One line for test failure messages: exit status and stderr.
  std::string Describe() const;
};

// Runs `program` with `args` (argv[1..]); stdin is /dev/null. Blocks until the child ends or the
// timeout kills it. Reads stdout and stderr concurrently (poll), so neither pipe can fill up and
// deadlock the child. Not thread-safe with respect to the process environment (reads environ).
ProcessResult RunProcess(const std::string& program, const std::vector<std::string>& args,
                         const ProcessOptions& options = {});

}  // namespace mogserve::e2e
