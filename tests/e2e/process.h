// Runs a program as a child process (common/subprocess.h: posix_spawn, no shell) and captures
// its output: the end-to-end tests drive the real mogserve binary through this.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/subprocess.h"

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

// A child process running in the background (a server under test): started with pipes on stdout
// and stderr that a reader thread drains into lines, so the child never blocks on a full pipe.
// The test can wait for a line, send signals, read the child's resident memory, and wait for it
// to exit. The destructor kills (SIGKILL) a child that is still running and reaps it.
// Thread-safe: the lines may be read while the reader thread appends to them.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts `program` with `args`; stdin is /dev/null. False (and spawn_error()) when it cannot
  // be started. options.timeout is not used: every wait below takes its own.
  bool Start(const std::string& program, const std::vector<std::string>& args,
             const ProcessOptions& options = {});

  pid_t pid() const { return child_.pid(); }
  const std::string& spawn_error() const { return spawn_error_; }

  // Waits until a line of stdout or stderr (both are searched, in arrival order) satisfies
  // `match`; returns that line. nullopt when the child closed its output or the timeout passed
  // first. Lines before `from_line` are skipped (see line_count).
  std::optional<std::string> WaitForLine(const std::function<bool(const std::string&)>& match,
                                         std::chrono::milliseconds timeout, size_t from_line = 0);
  // Lines seen so far, stdout and stderr interleaved as they arrived.
  std::vector<std::string> Lines() const;
  size_t line_count() const;

  // Sends `signal`; false when the child has already been reaped.
  bool Signal(int signal);
  // The child's resident set size (VmRSS in /proc/PID/status), in bytes; -1 when unknown.
  int64_t ResidentBytes() const;
  // The most it has held (VmHWM) since it started or since ResetPeakResident(); -1 when unknown.
  int64_t PeakResidentBytes() const;
  // Sets the peak back to the current resident size (/proc/PID/clear_refs); false if refused.
  bool ResetPeakResident();
  // Whether the child is still running (not yet exited, or exited but not yet reaped by Wait).
  bool Running();

  // Waits for the child to exit; after `timeout` kills it (SIGKILL). The result holds the exit
  // status and everything the child wrote. Call once.
  ProcessResult Wait(std::chrono::milliseconds timeout);

 private:
  void ReadLoop(int out_fd, int err_fd);
  int64_t StatusKib(const char* field) const;  // a "Vm...: N kB" line of /proc/PID/status

  Subprocess child_;
  ProcessResult result_;
  std::string spawn_error_;
  std::thread reader_;

  mutable std::mutex mu_;
  std::condition_variable cv_;      // a line arrived, or the output closed
  std::vector<std::string> lines_;  // guarded by mu_
  std::string out_, err_;           // everything read so far; guarded by mu_
  bool output_closed_ = false;      // guarded by mu_
};

}  // namespace mogserve::e2e
