// The fat delegate's load-time option `isolate` (issue 38): a nested program entry is qualified in
// a child process (fatpte-run beside the fat delegate's library, or in ../bin of an install's
// lib/; process/child.hpp) before this process loads it: the child loads the entry from a private
// copy of the nested container and runs its golden calls of the method, or only the load when it
// has none. A crash (the signal named), a non-zero exit or a timeout (option `isolate_timeout_ms`,
// default 30000) skips the entry with that reason, and the next one is tried. The child gets the
// library of each ExecuTorch backend the nested program needs from this process's registry (the
// file that registered it), so it runs the same code. An entry whose payload is a backend's own
// (forwarded to that backend's init) is not qualified: only its backend can run it.
#ifndef FATPTE_SRC_DELEGATE_ISOLATE_HPP_
#define FATPTE_SRC_DELEGATE_ISOLATE_HPP_

#include <cstdint>
#include <string>

#include <executorch/runtime/backend/interface.h>

#include "fatpte/container.hpp"

namespace fatpte {
namespace et {

struct IsolateOptions {
  bool on = false;
  std::uint32_t timeout_ms = 30000;
};

// The runtime specs `isolate` (a bool, or "1" / "true") and `isolate_timeout_ms` (an int, or its
// decimal digits).
IsolateOptions isolate_options(executorch::runtime::BackendInitContext& context);

// "" when nested program entry `e` of `c` passed in a child process for `method`, else why not.
std::string qualify_nested(const Container& c, const Entry& e, Bytes program, const char* method,
                           const IsolateOptions& options);

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_DELEGATE_ISOLATE_HPP_
