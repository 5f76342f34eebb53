#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace mogserve {
namespace {

using Clock = std::chrono::steady_clock;

const char* StreamName(int target) {
  return target == STDIN_FILENO ? "stdin" : target == STDOUT_FILENO ? "stdout" : "stderr";
}

// The child's environment: the caller's, minus `unset_env`, with `env` set on top.
std::vector<std::string> BuildEnvironment(const SubprocessOptions& options) {
  auto replaced = [&](const std::string& name) {
    return std::find(options.unset_env.begin(), options.unset_env.end(), name) !=
               options.unset_env.end() ||
           std::any_of(options.env.begin(), options.env.end(),
                       [&](const auto& kv) { return kv.first == name; });
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    if (!replaced(entry.substr(0, entry.find('=')))) env.push_back(std::move(entry));
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

// Descriptors the parent opened for one Start: the child's ends are closed once it runs; the
// parent's pipe ends are handed to the Subprocess, or closed when Start fails.
struct SpawnFds {
  std::vector<int> child_ends;
  int parent_end[3] = {-1, -1, -1};

  ~SpawnFds() {
    for (int fd : child_ends) close(fd);
    for (int fd : parent_end) {
      if (fd >= 0) close(fd);
    }
  }
};

// Adds the file action that gives the child's stream `target` its Redirect.
Status AddRedirect(const Redirect& r, int target, posix_spawn_file_actions_t* actions,
                   SpawnFds* fds) {
  switch (r.kind) {
    case Redirect::Kind::kInherit:
      return Status::Ok();
    case Redirect::Kind::kNull:
    case Redirect::Kind::kFile: {
      const std::string path = r.kind == Redirect::Kind::kNull ? "/dev/null" : r.path;
      const int flags = target == STDIN_FILENO ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC;
      const int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
      if (fd < 0) {
        return InvalidArgument(std::string("cannot open ") + path + " for the child's " +
                               StreamName(target) + ": " + std::strerror(errno));
      }
      fds->child_ends.push_back(fd);
      posix_spawn_file_actions_adddup2(actions, fd, target);
      return Status::Ok();
    }
    case Redirect::Kind::kPipe: {
      int p[2];
      if (pipe2(p, O_CLOEXEC) != 0) {
        return Internal(std::string("pipe for the child's ") + StreamName(target) + ": " +
                        std::strerror(errno));
      }
      const int child = target == STDIN_FILENO ? p[0] : p[1];
      fds->child_ends.push_back(child);
      fds->parent_end[target] = target == STDIN_FILENO ? p[1] : p[0];
      posix_spawn_file_actions_adddup2(actions, child, target);
      return Status::Ok();
    }
    case Redirect::Kind::kFd:
      if (r.fd < 0) {
        return InvalidArgument(std::string("Redirect::Fd for the child's ") + StreamName(target) +
                               " needs a descriptor >= 0, got " + std::to_string(r.fd));
      }
      posix_spawn_file_actions_adddup2(actions, r.fd, target);
      return Status::Ok();
    case Redirect::Kind::kToStdout:
      if (target != STDERR_FILENO) {
        return InvalidArgument(std::string("Redirect::ToStdout is for stderr only, not ") +
                               StreamName(target));
      }
      posix_spawn_file_actions_adddup2(actions, STDOUT_FILENO, STDERR_FILENO);
      return Status::Ok();
  }
  return Internal("unknown Redirect kind");
}

}  // namespace

std::string ExitStatus::Describe() const {
  std::string s = term_signal != 0 ? "signal " + std::to_string(term_signal)
                                   : "exit " + std::to_string(exit_code);
  return timed_out ? "timed out (" + s + ")" : s;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  for (int fd : {in_fd_, out_fd_, err_fd_}) {
    if (fd >= 0) close(fd);
  }
}

Status Subprocess::Start(const std::vector<std::string>& argv, const SubprocessOptions& options) {
  if (argv.empty() || argv[0].empty()) return InvalidArgument("argv: the program name is empty");
  if (pid_ > 0) return InvalidArgument("Start: this Subprocess already started " + argv[0]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  SpawnFds fds;
  Status st = AddRedirect(options.in, STDIN_FILENO, &actions, &fds);
  if (st.ok()) st = AddRedirect(options.out, STDOUT_FILENO, &actions, &fds);
  if (st.ok()) st = AddRedirect(options.err, STDERR_FILENO, &actions, &fds);
  if (!st.ok()) {
    posix_spawn_file_actions_destroy(&actions);
    return st;
  }
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());

  std::vector<std::string> argv_strings = argv;
  std::vector<char*> args = ToCharPointers(argv_strings);
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  char** env = environ;
  if (!options.env.empty() || !options.unset_env.empty()) {
    env_strings = BuildEnvironment(options);
    envp = ToCharPointers(env_strings);
    env = envp.data();
  }
  pid_t pid = 0;
  const bool search_path = argv[0].find('/') == std::string::npos;
  const int rc = search_path ? posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env)
                             : posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::string what = "cannot start " + argv[0];
    if (!options.cwd.empty()) what += " in " + options.cwd;
    what += std::string(": ") + std::strerror(rc);
    return rc == ENOENT ? NotFound(what) : Internal(what);
  }
  pid_ = pid;
  in_fd_ = std::exchange(fds.parent_end[STDIN_FILENO], -1);
  out_fd_ = std::exchange(fds.parent_end[STDOUT_FILENO], -1);
  err_fd_ = std::exchange(fds.parent_end[STDERR_FILENO], -1);
  return Status::Ok();
}

void Subprocess::Reap(int wait_status) {
  reaped_ = true;
  if (WIFEXITED(wait_status)) {
    status_.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    status_.term_signal = WTERMSIG(wait_status);
  }
}

bool Subprocess::Signal(int signal) {
  if (pid_ <= 0 || reaped_) return false;
  return kill(pid_, signal) == 0;
}

bool Subprocess::Running() {
  if (pid_ <= 0 || reaped_) return false;
  int status = 0;
  const pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done == pid_) {
    Reap(status);
    return false;
  }
  return done == 0;
}

ExitStatus Subprocess::Wait(std::optional<std::chrono::milliseconds> timeout) {
  if (pid_ <= 0 || reaped_) return status_;
  if (!timeout.has_value()) {
    int status = 0;
    pid_t done;
    while ((done = waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    if (done == pid_) Reap(status);
    return status_;
  }
  const auto deadline = Clock::now() + *timeout;
  while (Running()) {
    if (Clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      status_.timed_out = true;
      return Wait(std::nullopt);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status_;
}

ExitStatus Subprocess::Terminate(std::chrono::milliseconds grace) {
  if (!Signal(SIGTERM)) return status_;
  ExitStatus st = Wait(grace);
  st.timed_out = false;  // it ended, by SIGTERM or by the SIGKILL after the grace period
  status_.timed_out = false;
  return st;
}

StatusOr<SubprocessOutput> RunSubprocess(const std::vector<std::string>& argv,
                                         const SubprocessOptions& options,
                                         std::chrono::milliseconds timeout) {
  if (options.in.kind == Redirect::Kind::kPipe) {
    return InvalidArgument("RunSubprocess: options.in is a pipe nobody writes; use Null or File");
  }
  Subprocess child;
  MOGSERVE_RETURN_IF_ERROR(child.Start(argv, options));
  SubprocessOutput result;
  const auto deadline = Clock::now() + timeout;
  pollfd fds[2] = {{child.stdout_fd(), POLLIN, 0}, {child.stderr_fd(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = (fds[0].fd >= 0) + (fds[1].fd >= 0);
  bool timed_out = false;
  char buf[65536];
  while (open_count > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    const int ready = poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && ready > 0; ++i) {
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
  if (timed_out) {
    child.Signal(SIGKILL);
    result.status = child.Wait();
    result.status.timed_out = true;
    return result;
  }
  // The pipes can close before the child ends: keep the deadline while waiting for it too.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  result.status = child.Wait(std::max(left, std::chrono::milliseconds(0)));
  return result;
}

}  // namespace mogserve
