#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

extern char** environ;

namespace mogserve::e2e {
namespace {

// The child's environment: the caller's, minus `unset_env`, with `env` set on top.
std::vector<std::string> BuildEnvironment(const ProcessOptions& options) {
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  auto overridden = [&](const std::string& name) {
    if (std::find(options.unset_env.begin(), options.unset_env.end(), name) !=
        options.unset_env.end()) {
      return true;
    }
    return std::any_of(options.env.begin(), options.env.end(),
                       [&](const auto& kv) { return kv.first == name; });
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    if (!overridden(name_of(entry))) env.push_back(std::move(entry));
  }
  for (const auto& [name, value] : options.env) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> ToCharPointers(std::vector<std::string>& strings) {
  std::vector<char*> ptrs;
  for (std::string& s : strings) ptrs.push_back(s.data());
  ptrs.push_back(nullptr);
  return ptrs;
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecChild(int out_fd, int err_fd, const char* cwd, const char* program,
                            char** argv, char** envp) {
  const int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
      dup2(err_fd, STDERR_FILENO) < 0) {
    _exit(126);
  }
  if (cwd != nullptr && chdir(cwd) != 0) _exit(126);
  execve(program, argv, envp);
  _exit(127);
}

// Reads both pipes until both reach end-of-file or the deadline passes. Returns false on timeout.
bool DrainPipes(int out_fd, int err_fd, std::chrono::steady_clock::time_point deadline,
                ProcessResult& result) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  char buf[65536];
  while (open_count > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int ready = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_count;
      }
    }
  }
  return true;
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
  std::vector<std::string> argv_strings = {program};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings = BuildEnvironment(options);
  std::vector<char*> argv = ToCharPointers(argv_strings);
  std::vector<char*> envp = ToCharPointers(env_strings);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.spawn_error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.spawn_error = std::string("pipe: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return result;
  }
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  const pid_t pid = fork();
  if (pid == 0) {
    ExecChild(out_pipe[1], err_pipe[1], options.cwd.empty() ? nullptr : options.cwd.c_str(),
              program.c_str(), argv.data(), envp.data());
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    result.spawn_error = std::string("fork: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return result;
  }
  if (!DrainPipes(out_pipe[0], err_pipe[0], deadline, result)) {
    result.timed_out = true;
    kill(pid, SIGKILL);
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  // The pipes can close before the child ends: keep the deadline while waiting for it too.
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, result.timed_out ? 0 : WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (done == 0 && std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);
    } else if (done == 0) {
      usleep(10'000);
    }
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  return result;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  if (reader_.joinable()) reader_.join();
}

bool ChildProcess::Start(const std::string& program, const std::vector<std::string>& args,
                         const ProcessOptions& options) {
  std::vector<std::string> argv_strings = {program};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings = BuildEnvironment(options);
  std::vector<char*> argv = ToCharPointers(argv_strings);
  std::vector<char*> envp = ToCharPointers(env_strings);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    spawn_error_ = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    spawn_error_ = std::string("pipe: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return false;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    ExecChild(out_pipe[1], err_pipe[1], options.cwd.empty() ? nullptr : options.cwd.c_str(),
              program.c_str(), argv.data(), envp.data());
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    spawn_error_ = std::string("fork: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return false;
  }
  pid_ = pid;
  reader_ = std::thread([this, out_fd = out_pipe[0], err_fd = err_pipe[0]] {
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
  if (pid_ <= 0 || reaped_) return false;
  return kill(pid_, signal) == 0;
}

int64_t ChildProcess::StatusKib(const char* field) const {
  if (pid_ <= 0 || reaped_) return -1;
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
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
  if (pid_ <= 0 || reaped_) return false;
  std::ofstream clear("/proc/" + std::to_string(pid_) + "/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

void ChildProcess::Reap(int status) {
  reaped_ = true;
  if (WIFEXITED(status)) {
    result_.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result_.term_signal = WTERMSIG(status);
  }
}

bool ChildProcess::Running() {
  if (pid_ <= 0 || reaped_) return false;
  int status = 0;
  const pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done == pid_) {
    Reap(status);
    return false;
  }
  return done == 0;
}

ProcessResult ChildProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Running()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      result_.timed_out = true;
      kill(pid_, SIGKILL);
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      Reap(status);
      break;
    }
    usleep(10'000);
  }
  if (pid_ <= 0) result_.spawn_error = spawn_error_.empty() ? "not started" : spawn_error_;
  if (reader_.joinable()) reader_.join();
  std::lock_guard<std::mutex> lock(mu_);
  result_.out = out_;
  result_.err = err_;
  return result_;
}

}  // namespace mogserve::e2e
