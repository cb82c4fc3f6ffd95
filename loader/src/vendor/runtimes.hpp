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

#include <map>
#include <set>
#include <string>
#include <vector>

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

// Where a runtime was found, or every place looked.
struct Located {
  bool withheld = false;         // the caller's map names it with an empty path, or see `withheld_why`
  std::string withheld_why;      // why, when it is not the caller who withheld it
  std::string path;              // the library: a path, or system_name when dlopen's search found it
  std::string source;            // where it came from: "--vendor-runtime", "OPENVINO_LIB_PATH", ...
  std::vector<std::string> looked;  // each place tried before, with why it did not hold it
  // "found at P (from OPENVINO_LIB_PATH)" or "not found; looked: 1. ..., 2. ..." (a withheld
  // runtime is worded by the caller, who knows which option withheld it).
  std::string text() const;
};

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
// again. False for a backend without a vendor runtime.
bool prepare_backend(const std::string& backend_id, const std::map<std::string, std::string>& explicit_paths,
                     Located& out);

// Why `r` is not there, or "" when `where` found it: "withheld by the caller (--vendor-runtime
// openvino=)" (`command_line`; else the load options'), a build's own reason, or "not found;
// looked: 1. ..., 2. ...".
std::string why_absent(const VendorRuntime& r, const Located& where, bool command_line);
// The line --explain shows of each vendor runtime a probe looked for: "vendor runtime openvino:
// OpenVINO's runtime (libopenvino_c.so) found at P (from S)", or why it is not there.
std::string status_line(const VendorRuntime& r, const std::map<std::string, std::string>& explicit_paths,
                        bool command_line);

}  // namespace vendor
}  // namespace fatpte

#endif  // FATPTE_SRC_VENDOR_RUNTIMES_HPP_
