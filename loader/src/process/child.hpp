// Child processes that run a program the application must not run in its own process (issue 38:
// an entry qualified in isolation, run/qualify.hpp and the fat delegate's `isolate` option): an
// exec'd program with a fixed argument vector and environment (posix_spawn, no shell), its stdin
// /dev/null, its stdout and stderr one pipe of which at most kMaxChildOutput bytes are kept (the
// rest is read and dropped), no other descriptor of the application (closefrom), reaped as soon
// as it exits, or killed (SIGKILL) and reaped at its deadline: no zombie, no leaked descriptor.
#ifndef FATPTE_SRC_PROCESS_CHILD_HPP_
#define FATPTE_SRC_PROCESS_CHILD_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fatpte {
namespace detail {

constexpr std::size_t kMaxChildOutput = 64 * 1024;

// The verdict on one entry qualified in a child process: what a load loop acts on (run/qualify.hpp's
// qualify_entry decides it for fatpte::load, the fat delegate for its nested programs), and what a
// verdict store records.
struct Qualification {
  enum class Kind { kPass, kFail, kCrash, kTimeout };
  Kind kind = Kind::kPass;
  std::string signal;  // the crash's signal name ("SIGSEGV", "SIGILL", ...), for kCrash
  std::string detail;  // what happened, for a person: the child's last line, the exit status
  bool passed() const noexcept { return kind == Kind::kPass; }
  // A stable word: "pass", "fail", "crash", "timeout".
  const char* word() const noexcept;
  // The attempt's outcome when it did not pass, or its detail line when it did.
  std::string describe() const;
};

// What one child did: its exit status or signal, or that it was killed at the deadline.
struct ChildOutcome {
  bool started = false;
  bool timed_out = false;
  int exit_code = -1;   // when it exited
  int signal = 0;       // when a signal ended it
  std::string output;   // stdout and stderr together, at most kMaxChildOutput bytes
  std::string error;    // why it could not be started
};

// Run `argv` (argv[0] a path, or a name searched in PATH) with exactly `env`, waiting at most
// `timeout_ms`; the child is killed and reaped at the deadline.
ChildOutcome run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       std::uint32_t timeout_ms);

// "SIGSEGV" for SIGSEGV, ...; "signal N" for one without a name here.
std::string signal_name(int signal);

// The verdict on what a fatpte-run child did (a pass, a crash with its signal's name, a failure
// with its exit status and reason, a timeout).
Qualification qualification_of(const ChildOutcome& child, std::uint32_t timeout_ms);

// What fatpte-run said on failure: the reason of the last `dispatch: NAME [ID]: REASON` line of
// its output, else its last non-empty line.
std::string fatpte_run_reason(const std::string& output);

// fatpte-run in `dir` (a build folder) or in `dir`/../bin (an install's lib/); "" when neither is
// an executable file.
std::string fatpte_run_beside(const std::string& dir);

// A private temporary folder ($TMPDIR or /tmp, mkdtemp) for the files a child reads, removed with
// its files when this object goes.
class ScratchFolder {
 public:
  ScratchFolder();
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  // `name` in the folder holding `bytes` (close-on-exec while written); "" when it cannot be.
  std::string write(const std::string& name, const void* bytes, std::size_t size);

 private:
  std::string dir_;
  std::vector<std::string> files_;
};

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_PROCESS_CHILD_HPP_
