// vendor_search.hpp: where a probe looked for one vendor runtime (specs/device-profile.md 9.1),
// the record a load keeps of it (Dispatch::vendor_runtimes) and fatpte-run's --json report gives
// (specs/run-report.md, `vendor_runtimes`). The search itself is loader/src/vendor/runtimes.hpp.
#ifndef FATPTE_VENDOR_SEARCH_HPP_
#define FATPTE_VENDOR_SEARCH_HPP_

#include <string>
#include <vector>

namespace fatpte {

struct VendorRuntimeSearch {
  std::string name;              // the runtime's name: "openvino"
  bool withheld = false;         // the caller's map names it with an empty path, or see `withheld_why`
  std::string withheld_why;      // why, when it is not the caller who withheld it
  std::string path;              // the library: a path, or its system name when dlopen's search found it
  std::string source;            // where it came from, in words: "OPENVINO_LIB_PATH", ...
  // The step of the search order that found it: "caller", "environment_variable", "virtual_env",
  // "conda_prefix" or "dlopen"; "" when not found.
  std::string step;
  std::vector<std::string> looked;  // each place tried before, with why it did not hold it
  // "found at P (from OPENVINO_LIB_PATH)" or "not found; looked: 1. ..., 2. ..." (a withheld
  // runtime is worded by the caller, who knows which option withheld it).
  std::string text() const;
};

}  // namespace fatpte

#endif  // FATPTE_VENDOR_SEARCH_HPP_
