// Runs another program as a child process: posix_spawn with an argv vector, never a shell (no
// quoting, no word splitting). Every place that starts a process (gnuplot for reports, the
// server and the Python reference under bench, the real binary in tests) goes through here.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mogserve/status.h"

namespace mogserve {

// Where one of the child's standard streams goes.
struct Redirect {
  enum class Kind {
    kInherit,   // the parent's own stream
    kNull,      // /dev/null
    kFile,      // `path`: read for stdin; created or truncated for stdout and stderr
    kPipe,      // a pipe whose other end the parent holds (Subprocess::TakeStdout() ...)
    kFd,        // a copy of the parent's descriptor `fd` (e.g. STDERR_FILENO)
    kToStdout,  // stderr only: wherever the child's stdout goes (2>&1)
  };
  Kind kind = Kind::kInherit;
  std::string path;  // kFile
  int fd = -1;       // kFd

  static Redirect Inherit() { return {}; }
  static Redirect Null() { return {Kind::kNull, "", -1}; }
  static Redirect File(std::string path) { return {Kind::kFile, std::move(path), -1}; }
  static Redirect Pipe() { return {Kind::kPipe, "", -1}; }
  static Redirect Fd(int fd) { return {Kind::kFd, "", fd}; }
  static Redirect ToStdout() { return {Kind::kToStdout, "", -1}; }
};

struct SubprocessOptions {
  // Working directory of the child; empty = the caller's.
  std::string cwd;
  Redirect in = Redirect::Null();
  Redirect out = Redirect::Inherit();
  Redirect err = Redirect::Inherit();
  // Variables set (or replaced) in the child's environment, on top of the caller's.
  std::vector<std::pair<std::string, std::string>> env;
  // Variables removed from the child's environment.
  std::vector<std::string> unset_env;
};

// How a child ended.
struct ExitStatus {
  int exit_code = -1;      // the exit status when it exited normally, else -1
  int term_signal = 0;     // the signal that ended it, 0 if none
  bool timed_out = false;  // Wait's timeout passed and the child was killed (SIGKILL)

  bool ok() const { return exit_code == 0; }
  // "exit 3", "signal 9", "timed out (signal 9)".
  std::string Describe() const;
};

// One child process. Start it, talk to it through its pipes, then Wait. The destructor kills
// (SIGKILL) a child that is still running, reaps it, and closes the pipe ends still held.
// Not thread-safe: one thread owns a Subprocess (its pipe ends may be handed to others).
class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Starts argv[0] with `argv`. argv[0] without a '/' is looked up in $PATH. Errors: an empty
  // argv or a second Start (kInvalidArgument); a file to redirect that cannot be opened, or a
  // program that cannot be started (kNotFound when it does not exist), each naming it.
  Status Start(const std::vector<std::string>& argv, const SubprocessOptions& options = {});

  pid_t pid() const { return pid_; }
  // Whether the child has ended and been waited for (by Running, Wait or Terminate).
  bool reaped() const { return reaped_; }
  // The parent's ends of the pipes asked for (kPipe), -1 otherwise. Owned by the Subprocess
  // until taken: Take* hands the descriptor over (the caller closes it).
  int stdin_fd() const { return in_fd_; }
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }
  int TakeStdin() { return std::exchange(in_fd_, -1); }
  int TakeStdout() { return std::exchange(out_fd_, -1); }
  int TakeStderr() { return std::exchange(err_fd_, -1); }

  // Sends `signal`; false when the child is not running (never started, or already reaped).
  bool Signal(int signal);
  // Whether the child still runs; reaps it (and records its ExitStatus) when it has ended.
  bool Running();
  // Waits for the child to end. With a timeout, a child still running after it is killed
  // (SIGKILL) and its status says timed_out. Returns the recorded status when already reaped.
  ExitStatus Wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Sends SIGTERM, waits up to `grace`, then SIGKILL; the status it ended with.
  ExitStatus Terminate(std::chrono::milliseconds grace);

 private:
  void Reap(int wait_status);

  pid_t pid_ = -1;
  bool reaped_ = false;
  ExitStatus status_;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
};

// What RunSubprocess returns: how the child ended and what it wrote to the streams that were
// pipes (empty for the others).
struct SubprocessOutput {
  ExitStatus status;
  std::string out;
  std::string err;
};

// Runs `argv` to its end: starts it, reads its piped stdout and stderr concurrently (so neither
// pipe fills up and blocks the child), and waits. A child running longer than `timeout` is
// killed (status.timed_out). options.in must not be a pipe (nobody would write it). Errors: as
// Subprocess::Start.
StatusOr<SubprocessOutput> RunSubprocess(const std::vector<std::string>& argv,
                                         const SubprocessOptions& options,
                                         std::chrono::milliseconds timeout);

}  // namespace mogserve
