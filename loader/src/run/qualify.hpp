// Isolated qualification (LoadOptions::isolate, issue 38): an entry is loaded and run in a child
// process before the application loads it, so that a backend that crashes (any signal), fails or
// hangs takes down the child, never the application, and the next eligible entry is tried.
//
// The child is an exec'd program, never a fork of the application (which would map the crashing
// library into the application's own process image first): fatpte-run, found as
// LoadOptions::qualifier says, or beside the file libfatpte's code is in (own_library_dir(): the
// build folder, or an install's lib/ -> ../bin/fatpte-run), run with
//   [launcher...] fatpte-run CONTAINER --entry NAME --no-fallback --method M --device DEVICE.json
//       (--self-test | --inputs CALLS.json) [--no-default-backends] [--backend-path DIR]...
//       [--backend-lib ID=PATH]...
// a fixed argument vector (posix_spawn, no shell) and a fixed environment (only the names
// LoadOptions::isolate_environment passes on). Its stdin is /dev/null, its stdout and stderr one
// pipe of which at most kMaxChildOutput bytes are kept (the rest is read and dropped); it is
// waited for (no zombie) and killed (SIGKILL) at the deadline; no descriptor of the application
// but the pipe's write end reaches it (closefrom), and the pipe is closed after.
#ifndef FATPTE_SRC_RUN_QUALIFY_HPP_
#define FATPTE_SRC_RUN_QUALIFY_HPP_

#include <string>

#include "fatpte/container.hpp"
#include "fatpte/device.hpp"
#include "fatpte/dispatch.hpp"
#include "process/child.hpp"

namespace fatpte {
namespace detail {

// The qualifier program the options name, or fatpte-run beside libfatpte; "" when none is found.
std::string qualifier_program(const LoadOptions& options);

// The one place a load decides an entry's verdict before loading it in this process (the load
// loop of run/dispatch.cpp acts on it; a verdict store hooks here): with LoadOptions::isolate,
// qualify_isolated's; without, a pass (nothing is run).
Qualification qualify_entry(const Container& c, const Entry& e, const DeviceProfile& device,
                            const LoadOptions& options);

// Qualify entry `e` of `c` for `device` in a child process (see above); the verdict.
Qualification qualify_isolated(const Container& c, const Entry& e, const DeviceProfile& device,
                               const LoadOptions& options);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_RUN_QUALIFY_HPP_
