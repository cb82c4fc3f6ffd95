// Where this copy of libfatpte runs from (docs/cpp.md, "Install trees and the search order"): the
// build tree it was built in, or an install prefix, which may have been moved anywhere. The build
// tree's binaries use the ExecuTorch SDK and the source tree's device profiles they were
// configured with; any other copy uses its prefix's own lib/ and share/fatpte/devices, found from
// its own file (libfatpte.so, the fat delegate's library, or a tool in bin/), and from the
// libexecutorch.so the process runs (an application linked with libfatpte.a finds the prefix it
// was built against through that library's run path), never the build tree's, which may hold
// anything by now.
#ifndef FATPTE_SRC_DEVICE_ORIGIN_HPP_
#define FATPTE_SRC_DEVICE_ORIGIN_HPP_

#include <string>
#include <vector>

namespace fatpte {
namespace detail {

struct Origin {
  std::string file;         // the file libfatpte's code is in (symbolic links resolved); "" unknown
  std::string dir;          // its folder
  bool build_tree = false;  // dir is the build folder this copy was linked in (FATPTE_BUILD_DIR)
  std::string runtime_dir;  // the folder of the libexecutorch.so loaded in this process; "" none
};

// Worked out once per process.
const Origin& origin();
// The folders where an installed copy's libraries lie, resolved, each once, those that exist:
// its own folder (a library in lib/), its lib/ seen from bin/ (a tool), the runtime's folder.
std::vector<std::string> prefix_library_dirs();
// The prefix's share/fatpte/devices seen from `origin().dir` (from lib/ or from bin/) or from the
// runtime's folder: the first that is a folder; when none is, the first of them, for the error
// that names it.
std::string prefix_devices_dir();
// For --explain: "the build tree DIR" or "FILE, an installed copy".
std::string origin_text();

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_DEVICE_ORIGIN_HPP_
