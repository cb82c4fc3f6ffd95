// Vendor runtimes: the libraries an accelerator vendor ships apart from ExecuTorch (OpenVINO's C
// runtime, libopenvino_c), which an ExecuTorch backend library opens at run time and which some
// machines have and others do not. One table row per runtime says where users install it; one
// search finds it (specs/device-profile.md 9.1, "Vendor runtimes"; Python:
// fatpte/device/vendor_runtimes.py, which follows the same rows and the same order).
//
// Adding a runtime is adding a row to kVendorRuntimes (and the same row to the Python table):
// its name, the environment variable that holds a path to its library, the Python package and
// versioned file a wheel ships it as, the library name the system's loader finds, the ExecuTorch
// backend that needs it, and how that backend is told the path.
#ifndef FATPTE_SRC_VENDOR_RUNTIMES_HPP_
#define FATPTE_SRC_VENDOR_RUNTIMES_HPP_

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fatpte/vendor_search.hpp"
#include "vendor/vendor_device.hpp"

namespace fatpte {
namespace vendor {

struct VendorRuntime {
  const char* name;          // the word of `--vendor-runtime NAME=PATH` and LoadOptions::vendor_runtimes
  const char* title;         // how reasons name it: "OpenVINO"
  const char* env;           // the variable that holds the library's path: "OPENVINO_LIB_PATH"
  const char* package;       // the Python package that ships it: "openvino"
  const char* package_dir;   // its folder in the package: "libs"
  const char* file_prefix;   // the versioned file there: "libopenvino_c.so." (then any version)
  const char* system_name;   // what dlopen's own search is asked for: "libopenvino_c.so"
  const char* backend_id;    // the ExecuTorch backend that opens it: "OpenvinoBackend"
  const char* backend_env;   // the variable that backend reads the path from, once a process
  // Its devices, asked of the library at `path` (only those of the device types `types` names
  // when given; "" in it: every device); none, with `why`, when it cannot answer.
  std::vector<VendorDevice> (*probe)(const std::string& path, const std::set<std::string>* types, std::string& why);
};

// Every runtime fatpte looks for, in the order their devices are listed.
const std::vector<VendorRuntime>& vendor_runtimes();
// The row of `name`, or of the backend `backend_id`; nullptr when none.
const VendorRuntime* runtime_named(const std::string& name);
const VendorRuntime* runtime_of_backend(const std::string& backend_id);

// Where a runtime was found, or every place looked (fatpte/vendor_search.hpp).
using Located = VendorRuntimeSearch;

// A build with AddressSanitizer withholds every vendor runtime (withheld_why says so): OpenVINO's
// TBB opens a library with RTLD_DEEPBIND, which the sanitizer's runtime refuses by ending the
// process (measured with the openvino 2026.4.0 wheel).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizerWithholds = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitizerWithholds = true;
#else
constexpr bool kSanitizerWithholds = false;
#endif
#else
constexpr bool kSanitizerWithholds = false;
#endif
//
// The search, in order: the caller's path (`explicit_paths[name]`; "" withholds the runtime),
// the runtime's environment variable, the Python environments ($VIRTUAL_ENV, then
// $CONDA_PREFIX: lib/python3.*/site-packages/PACKAGE/DIR/FILE_PREFIX*), then dlopen's own search
// of system_name. A path is taken when it names a regular file (the caller's and the variable's)
// or when dlopen can open it (the system's search); nothing is left loaded by the search but what
// dlopen's search opened.
Located locate(const VendorRuntime& runtime, const std::map<std::string, std::string>& explicit_paths);
// How many searches locate() has made in this process: one load searches each runtime once
// (its probe's search is the one its lines, its report and its backends use).
std::size_t searches();

// Each runtime of the table located and, where found, asked for its devices.
struct Probed {
  const VendorRuntime* runtime = nullptr;
  Located where;
  std::vector<VendorDevice> devices;
  std::string why;  // why a runtime found lists none
};
// With `devices` (ProbeScope::vendor_devices), only the runtimes it names are looked for, each
// asked only for its device types there.
std::vector<Probed> probe_runtimes(const std::map<std::string, std::string>& explicit_paths,
                                   const std::map<std::string, std::set<std::string>>* devices = nullptr);

// The backend `backend_id`'s runtime, located into `out` and handed to it (its backend_env set to
// the path) before the backend's library is loaded or asked is_available: the backend reads the
// variable once a process, so the first decision that is not "withheld" is kept and returned
// again (decide() may have made it from a probe's search). False for a backend without a vendor
// runtime.
bool prepare_backend(const std::string& backend_id, const std::map<std::string, std::string>& explicit_paths,
                     Located& out);
// Keeps `where` (a probe's search of `r`, with the same caller's paths as the load that follows)
// as prepare_backend's decision when none is kept yet, so the load does not search again.
void decide(const VendorRuntime& r, const Located& where);

namespace testing {
// For tests only: forgets every decision prepare_backend and decide() kept, as a process that has
// made none, so a test of what one load searches may run after others in one process
// (fatpte_tests whole). The backend variables already set stay set (a test unsets its own), and
// the searches() count goes on. Not in the C API; the size build, which exports the C API alone,
// does not export it.
void forget_decisions();
}  // namespace testing

// Why `r` is not there, or "" when `where` found it: "withheld by the caller (--vendor-runtime
// openvino=)" (`command_line`; else the load options'), a build's own reason, or "not found;
// looked: 1. ..., 2. ...".
std::string why_absent(const VendorRuntime& r, const Located& where, bool command_line);
// The line --explain shows of each vendor runtime a probe looked for, from the probe's search
// `where`: "vendor runtime openvino: OpenVINO's runtime (libopenvino_c.so) found at P (from S)",
// or why it is not there.
std::string status_line(const VendorRuntime& r, const Located& where, bool command_line);
// The same search as one object of a run report's `vendor_runtimes` (specs/run-report.md):
// {"name", "found": true, "path", "step"}, or {"name", "found": false, "withheld": why or null,
// "looked": [each place, in order]}.
std::string search_json(const VendorRuntime& r, const Located& where, bool command_line);

}  // namespace vendor
}  // namespace fatpte

#endif  // FATPTE_SRC_VENDOR_RUNTIMES_HPP_
