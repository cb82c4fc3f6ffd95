// The process-wide side of ExecuTorch: initialising its runtime once, hearing what it logs, and
// loading backend and kernel libraries into the process.
//
// ExecuTorch's registries are process-wide: a backend or kernel library registers itself from
// its static initializers when it is loaded (dlopen RTLD_LAZY | RTLD_GLOBAL, after
// runtime_init()), and stays registered for the life of the process. Libraries are therefore
// loaded once per path and never closed. Lazy binding, as a program linked to these libraries
// gets: binding every function of the 10 MB kernel library up front (RTLD_NOW) cost 0.65 ms, a
// sixth of loading and running a small model (docs/performance.md).
//
// ExecuTorch reports why it refused something only in its log (the error code alone says
// NotFound, not which backend). Once ensure_runtime() has installed the log hook (fatpte's own
// runners do), while a Capture is alive on a thread, the Error and Fatal lines ExecuTorch logs on
// that thread are kept for the attempt being made; every line is also passed on to the log
// handler that was installed before (ExecuTorch's, which prints to stderr) once set_forwarding(true)
// was called. Without the hook (the fat delegate in another application's
// process, which leaves that application's log handler alone) a Capture keeps nothing.
#ifndef FATPTE_SRC_EXECUTORCH_RUNTIME_HPP_
#define FATPTE_SRC_EXECUTORCH_RUNTIME_HPP_

#include <string>
#include <vector>

namespace fatpte {
namespace et {

// runtime_init() and the log hook, once per process; thread-safe.
void ensure_runtime();

// Whether ExecuTorch's log lines also reach the handler installed before fatpte's (default: no).
void set_forwarding(bool forward);

// Keeps the Error and Fatal lines ExecuTorch logs on this thread while it lives (nests), once
// ensure_runtime() has run in this process; else keeps nothing. Also keeps, apart, what a fat
// delegate says (its Info lines, `fatpte fat delegate: ...`), so the loader can tell which inner
// entry of a fat program runs and why the others do not.
class Capture {
 public:
  Capture();
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  // The lines kept so far, oldest first; at most kMaxLines, each cut to kMaxLineBytes.
  const std::vector<std::string>& lines() const noexcept { return lines_; }
  // The lines joined with "; ", or "" when none.
  std::string text() const;
  // The fat delegates' lines, without their `fatpte fat delegate: ` prefix, oldest first; at
  // most kMaxLines.
  const std::vector<std::string>& fat_lines() const noexcept { return fat_lines_; }

  static constexpr std::size_t kMaxLines = 16;
  static constexpr std::size_t kMaxLineBytes = 400;

 private:
  friend struct CaptureAccess;
  std::vector<std::string> lines_;
  std::vector<std::string> fat_lines_;
  bool active_;  // the hook is installed: this capture is on the thread's chain
  Capture* outer_ = nullptr;
};

struct Opened {
  bool ok = false;
  bool already = false;  // this process had loaded it before
  std::string error;     // dlerror() when !ok
};

// dlopen(path, RTLD_LAZY | RTLD_GLOBAL) once per path; thread-safe.
Opened open_library(const std::string& path);

// "0x20 NotFound": an ExecuTorch Error value as printed in reasons.
std::string error_text(int error);

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_EXECUTORCH_RUNTIME_HPP_
