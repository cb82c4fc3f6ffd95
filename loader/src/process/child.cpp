// Child processes (process/child.hpp).
#include "process/child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/text.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace detail {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> c_argv(std::vector<std::string>& words) {
  std::vector<char*> out;
  for (std::string& w : words) out.push_back(w.data());
  out.push_back(nullptr);
  return out;
}

enum class Drained { kClosed, kExited, kDeadline };

// Read the child's output until it closes the pipe, it exits (`status` then holds how: a process
// it started may hold the pipe open) or the deadline; at most kMaxChildOutput bytes kept.
Drained drain(int fd, pid_t pid, Clock::time_point deadline, std::string& kept, int& status) {
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Drained::kDeadline;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 100)));
    if (ready < 0 && errno != EINTR) return Drained::kClosed;
    if (ready == 0 && ::waitpid(pid, &status, WNOHANG) == pid) return Drained::kExited;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Drained::kClosed;
    const std::size_t room = kMaxChildOutput - std::min(kMaxChildOutput, kept.size());
    kept.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(n)));
  }
}

// Reap `pid` by the deadline; kill it (SIGKILL) and reap it past it. False when it was killed.
bool reap(pid_t pid, Clock::time_point deadline, int& status) {
  for (;;) {
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) return true;
    if (Clock::now() >= deadline) break;
    ::usleep(1000);
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return false;
}

Status spawn(std::vector<std::string> argv, std::vector<std::string> env, int out_fd, pid_t& pid) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // descriptors without close-on-exec too
#endif
  std::vector<char*> args = c_argv(argv);
  std::vector<char*> envp = c_argv(env);
  const bool search = argv[0].find('/') == std::string::npos;
  const int rc = search ? ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data())
                        : ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return fail(Error::IO_ERROR, kNoOffset, "", "cannot start %s: %s", printable(argv[0]).c_str(), std::strerror(rc));
  }
  return Status();
}

bool executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

// A pipe whose ends close on exec: only the dup2'd write end reaches the child.
bool cloexec_pipe(int fds[2]) {
#if defined(__linux__)
  return ::pipe2(fds, O_CLOEXEC) == 0;
#else
  if (::pipe(fds) != 0) return false;
  return ::fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0 && ::fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0;
#endif
}

}  // namespace

// What fatpte-run said on failure: the reason of the last `dispatch: NAME [ID]: REASON` line of its
// output (an entry it could not load, or whose self-test failed), else its last non-empty line.
std::string fatpte_run_reason(const std::string& text) {
  std::string last, attempt;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    const std::size_t first = line.find_first_not_of(" \r");
    if (first == std::string::npos) continue;
    line = line.substr(first);
    last = line;
    const std::size_t reason = line.find("]: ");
    if (line.rfind("dispatch: ", 0) == 0 && reason != std::string::npos) attempt = line.substr(reason + 3);
  }
  return attempt.empty() ? last : attempt;
}

ChildOutcome run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       std::uint32_t timeout_ms) {
  ChildOutcome out;
  int fds[2];
  if (argv.empty() || !cloexec_pipe(fds)) {
    out.error = argv.empty() ? "no program" : std::string("cannot make a pipe: ") + std::strerror(errno);
    return out;
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  pid_t pid = 0;
  const Status started = spawn(argv, env, fds[1], pid);
  ::close(fds[1]);
  if (!started.ok()) {
    ::close(fds[0]);
    out.error = started.message();
    return out;
  }
  out.started = true;
  int status = 0;
  const Drained drained = drain(fds[0], pid, deadline, out.output, status);
  ::close(fds[0]);
  // Reaped by the deadline, or killed (SIGKILL) and reaped: never left a zombie.
  bool in_time = drained == Drained::kExited;
  if (drained == Drained::kClosed) in_time = reap(pid, deadline, status);
  if (drained == Drained::kDeadline) reap(pid, Clock::now(), status);
  out.timed_out = !in_time;
  if (!out.timed_out && WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  if (!out.timed_out && WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  return out;
}

std::string signal_name(int signal) {
  static const struct {
    int number;
    const char* name;
  } kNames[] = {{SIGSEGV, "SIGSEGV"}, {SIGILL, "SIGILL"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
                {SIGABRT, "SIGABRT"}, {SIGTRAP, "SIGTRAP"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"},
                {SIGSYS, "SIGSYS"},   {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}};
  for (const auto& n : kNames) {
    if (n.number == signal) return n.name;
  }
  return "signal " + std::to_string(signal);
}

const char* Qualification::word() const noexcept {
  switch (kind) {
    case Kind::kPass: return "pass";
    case Kind::kFail: return "fail";
    case Kind::kCrash: return "crash";
    case Kind::kTimeout: return "timeout";
  }
  return "fail";
}

std::string Qualification::describe() const {
  const std::string prefix = "isolated qualification: ";
  switch (kind) {
    case Kind::kPass: return prefix + "passed in a child process" + (detail.empty() ? "" : " (" + detail + ")");
    case Kind::kCrash: return prefix + "crashed (" + signal + ") in a child process; the entry is demoted" +
                              (detail.empty() ? "" : ": " + detail);
    case Kind::kTimeout: return prefix + "timed out: " + detail + "; the entry is demoted";
    case Kind::kFail: break;
  }
  return prefix + "failed in a child process: " + detail;
}

// The verdict on what the child did.
Qualification qualification_of(const ChildOutcome& child, std::uint32_t timeout_ms) {
  Qualification q;
  const std::string said = printable(fatpte_run_reason(child.output));
  if (!child.started) {
    q.kind = Qualification::Kind::kFail;
    q.detail = child.error;
  } else if (child.timed_out) {
    q.kind = Qualification::Kind::kTimeout;
    q.detail = "the child ran past " + std::to_string(timeout_ms) + " ms and was killed";
  } else if (child.signal != 0) {
    q.kind = Qualification::Kind::kCrash;
    q.signal = signal_name(child.signal);
    q.detail = said;
  } else if (child.exit_code != 0) {
    q.kind = Qualification::Kind::kFail;
    q.detail = "exit " + std::to_string(child.exit_code) + (said.empty() ? "" : ": " + said);
  }
  return q;
}

ScratchFolder::ScratchFolder() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/fatpte-qualify-XXXXXX";
  if (::mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
}

ScratchFolder::~ScratchFolder() {
  for (const std::string& f : files_) ::unlink(f.c_str());
  if (!dir_.empty()) ::rmdir(dir_.c_str());
}

std::string ScratchFolder::write(const std::string& name, const void* bytes, std::size_t size) {
  if (dir_.empty()) return "";
  const std::string path = dir_ + "/" + name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return "";
  files_.push_back(path);
  const auto* p = static_cast<const std::uint8_t*>(bytes);
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, p + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return "";
    }
    done += static_cast<std::size_t>(n);
  }
  return ::close(fd) == 0 ? path : "";
}

std::string fatpte_run_beside(const std::string& dir) {
  if (dir.empty()) return "";
  for (const std::string& candidate : {dir + "/fatpte-run", dir + "/../bin/fatpte-run"}) {
    if (executable(candidate)) return candidate;
  }
  return "";
}

}  // namespace detail
}  // namespace fatpte
