#include "process.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

namespace mogserve::e2e {
namespace {

// The child's argv and options: stdin /dev/null, stdout and stderr into pipes.
SubprocessOptions ChildOptions(const ProcessOptions& options) {
  SubprocessOptions o;
  o.cwd = options.cwd;
  o.in = Redirect::Null();
  o.out = Redirect::Pipe();
  o.err = Redirect::Pipe();
  o.env = options.env;
  o.unset_env = options.unset_env;
  return o;
}

std::vector<std::string> Argv(const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

void CopyExit(const ExitStatus& from, ProcessResult* to) {
  to->exit_code = from.exit_code;
  to->term_signal = from.term_signal;
  to->timed_out = from.timed_out;
}

}  // namespace

std::string ProcessResult::Describe() const {
  std::string s = "exit_code=" + std::to_string(exit_code);
  if (term_signal != 0) s += " signal=" + std::to_string(term_signal);
  if (timed_out) s += " (timed out)";
  if (!spawn_error.empty()) s += " spawn_error=" + spawn_error;
  return s + "\n--- stderr ---\n" + err + "\n--- stdout (first 2000 chars) ---\n" +
         out.substr(0, 2000);
}

ProcessResult RunProcess(const std::string& program, const std::vector<std::string>& args,
                         const ProcessOptions& options) {
  ProcessResult result;
  StatusOr<SubprocessOutput> run =
      RunSubprocess(Argv(program, args), ChildOptions(options), options.timeout);
  if (!run.ok()) {
    result.spawn_error = run.status().message();
    return result;
  }
  CopyExit(run->status, &result);
  result.out = std::move(run->out);
  result.err = std::move(run->err);
  return result;
}

ChildProcess::~ChildProcess() {
  // The reader thread ends when the child's pipes close: end the child first.
  if (child_.Signal(SIGKILL)) child_.Wait();
  if (reader_.joinable()) reader_.join();
}

bool ChildProcess::Start(const std::string& program, const std::vector<std::string>& args,
                         const ProcessOptions& options) {
  const Status started = child_.Start(Argv(program, args), ChildOptions(options));
  if (!started.ok()) {
    spawn_error_ = started.message();
    return false;
  }
  reader_ = std::thread([this, out_fd = child_.TakeStdout(), err_fd = child_.TakeStderr()] {
    ReadLoop(out_fd, err_fd);
    close(out_fd);
    close(err_fd);
  });
  return true;
}

void ChildProcess::ReadLoop(int out_fd, int err_fd) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string partial[2];
  int open_count = 2;
  char buf[65536];
  auto add_line = [this](std::string line) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back(std::move(line));
    cv_.notify_all();
  };
  while (open_count > 0) {
    const int ready = poll(fds, 2, 1000);
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && ready > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          (i == 0 ? out_ : err_).append(buf, static_cast<size_t>(got));
        }
        partial[i].append(buf, static_cast<size_t>(got));
        for (size_t nl; (nl = partial[i].find('\n')) != std::string::npos;) {
          add_line(partial[i].substr(0, nl));
          partial[i].erase(0, nl + 1);
        }
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  for (std::string& rest : partial) {
    if (!rest.empty()) add_line(std::move(rest));
  }
  std::lock_guard<std::mutex> lock(mu_);
  output_closed_ = true;
  cv_.notify_all();
}

std::optional<std::string> ChildProcess::WaitForLine(
    const std::function<bool(const std::string&)>& match, std::chrono::milliseconds timeout,
    size_t from_line) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  size_t next = from_line;
  while (true) {
    for (; next < lines_.size(); ++next) {
      if (match(lines_[next])) return lines_[next];
    }
    if (output_closed_) return std::nullopt;
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && next == lines_.size()) {
      return std::nullopt;
    }
  }
}

std::vector<std::string> ChildProcess::Lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

size_t ChildProcess::line_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_.size();
}

bool ChildProcess::Signal(int signal) {
  return child_.Signal(signal);
}

int64_t ChildProcess::StatusKib(const char* field) const {
  if (pid() <= 0 || child_.reaped()) return -1;
  std::ifstream status("/proc/" + std::to_string(pid()) + "/status");
  const std::string prefix = std::string(field) + ":";
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(prefix, 0) == 0) return std::stoll(line.substr(prefix.size()));  // "... kB"
  }
  return -1;
}

int64_t ChildProcess::ResidentBytes() const {
  const int64_t kib = StatusKib("VmRSS");
  return kib < 0 ? -1 : kib * 1024;
}

int64_t ChildProcess::PeakResidentBytes() const {
  const int64_t kib = StatusKib("VmHWM");
  return kib < 0 ? -1 : kib * 1024;
}

bool ChildProcess::ResetPeakResident() {
  if (pid() <= 0 || child_.reaped()) return false;
  std::ofstream clear("/proc/" + std::to_string(pid()) + "/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

bool ChildProcess::Running() {
  return child_.Running();
}

ProcessResult ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (pid() <= 0) {
    result_.spawn_error = spawn_error_.empty() ? "not started" : spawn_error_;
  } else {
    CopyExit(child_.Wait(timeout), &result_);
  }
  if (reader_.joinable()) reader_.join();
  std::lock_guard<std::mutex> lock(mu_);
  result_.out = out_;
  result_.err = err_;
  return result_;
}

}  // namespace mogserve::e2e
