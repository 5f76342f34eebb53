#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

}  // namespace mogserve::e2e
