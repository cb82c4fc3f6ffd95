// Finding vendor runtimes (vendor/runtimes.hpp; specs/device-profile.md 9.1).
#include "vendor/runtimes.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "common/text.hpp"
#include "vendor/openvino.hpp"

namespace fatpte {
namespace vendor {

namespace {

bool is_file(const std::string& path) {
  struct stat sb;
  return stat(path.c_str(), &sb) == 0 && S_ISREG(sb.st_mode);
}

// The names in `dir` starting with `prefix`, sorted bytewise; at most kMaxNames are read.
std::vector<std::string> names_starting(const std::string& dir, const std::string& prefix) {
  constexpr std::size_t kMaxNames = 4096;  // a folder listing is bounded like any other input
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  std::size_t seen = 0;
  while (const dirent* e = readdir(d)) {
    if (++seen > kMaxNames) break;
    const std::string name = e->d_name;
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) out.push_back(name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// PREFIX/lib/python3.*/site-packages/PACKAGE/DIR/FILE_PREFIX*: in the python3.* folders in
// bytewise order, the first that holds the package; there, the last versioned file in bytewise
// order (a wheel ships one). "" with `why` when none.
std::string in_environment(const VendorRuntime& r, const std::string& prefix, std::string& why) {
  const std::string lib = prefix + "/lib";
  for (const std::string& python : names_starting(lib, "python3.")) {
    const std::string dir = lib + "/" + python + "/site-packages/" + r.package + "/" + r.package_dir;
    const std::vector<std::string> files = names_starting(dir, r.file_prefix);
    for (auto f = files.rbegin(); f != files.rend(); ++f) {
      if (is_file(dir + "/" + *f)) return dir + "/" + *f;
    }
  }
  why = "no " + lib + "/python3.*/site-packages/" + r.package + "/" + r.package_dir + "/" + r.file_prefix + "*";
  return "";
}

// dlopen's own search (LD_LIBRARY_PATH, the cache, the default folders) of system_name: the
// library stays loaded, as the backend's own dlopen of the same name would leave it.
bool in_system(const VendorRuntime& r, std::string& why) {
  dlerror();
  void* handle = dlopen(r.system_name, RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return true;
  const char* err = dlerror();
  why = std::string("dlopen: ") + (err != nullptr ? err : "not found");
  return false;
}

std::mutex& decided_mutex() {
  static std::mutex m;
  return m;
}

// prepare_backend's decisions by runtime name (under decided_mutex); never destroyed.
std::map<std::string, Located>& decided() {
  static std::map<std::string, Located>& kept = *new std::map<std::string, Located>();
  return kept;
}

std::atomic<std::size_t> search_count{0};

// Hands a found runtime to its backend and keeps the decision; a withheld one is not kept (a
// later load may still find it). Called under decided_mutex.
void keep(const VendorRuntime& r, const Located& where) {
  if (where.withheld) return;
  // The backend reads the variable once, when first asked: set before its library is loaded. A
  // library dlopen's search found needs nothing (the backend asks the same search).
  if (!where.path.empty() && where.path != r.system_name) setenv(r.backend_env, where.path.c_str(), 1);
  decided().emplace(r.name, where);
}

}  // namespace

const std::vector<VendorRuntime>& vendor_runtimes() {
  // ExecuTorch's OpenvinoBackend (backends/openvino/runtime/OpenvinoBackend.cpp) dlopens
  // $OPENVINO_LIB_PATH, else "libopenvino_c.so", once a process.
  static const std::vector<VendorRuntime> kRows = {
      {"openvino", "OpenVINO", "OPENVINO_LIB_PATH", "openvino", "libs", "libopenvino_c.so.", "libopenvino_c.so",
       "OpenvinoBackend", "OPENVINO_LIB_PATH", probe_openvino},
  };
  return kRows;
}

const VendorRuntime* runtime_named(const std::string& name) {
  for (const VendorRuntime& r : vendor_runtimes()) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

const VendorRuntime* runtime_of_backend(const std::string& backend_id) {
  for (const VendorRuntime& r : vendor_runtimes()) {
    if (backend_id == r.backend_id) return &r;
  }
  return nullptr;
}

}  // namespace vendor

std::string VendorRuntimeSearch::text() const {
  if (!path.empty()) return "found at " + path + " (from " + source + ")";
  std::string out = "not found; looked: ";
  for (std::size_t i = 0; i < looked.size(); ++i) out += (i == 0 ? "" : ", ") + std::to_string(i + 1) + ". " + looked[i];
  return out;
}

namespace vendor {

std::size_t searches() { return search_count.load(); }

Located locate(const VendorRuntime& r, const std::map<std::string, std::string>& explicit_paths) {
  ++search_count;
  Located out;
  out.name = r.name;
  if (kSanitizerWithholds) {
    out.withheld = true;
    out.withheld_why = "not loaded by a build with AddressSanitizer (a library it opens asks for RTLD_DEEPBIND, "
                       "which the sanitizer refuses by ending the process)";
    return out;
  }
  const auto given = explicit_paths.find(r.name);
  if (given != explicit_paths.end()) {
    if (given->second.empty()) {
      out.withheld = true;
      return out;
    }
    if (is_file(given->second)) {
      out.path = given->second;
      out.source = std::string("the caller's path for ") + r.name;
      out.step = "caller";
      return out;
    }
    out.looked.push_back("the caller's path " + given->second + " (not a file)");
  } else {
    out.looked.push_back(std::string("the caller's path (none given)"));
  }
  const char* env = std::getenv(r.env);
  if (env != nullptr && env[0] != '\0' && is_file(env)) {
    out.path = env;
    out.source = r.env;
    out.step = "environment_variable";
    return out;
  }
  out.looked.push_back(std::string(r.env) + (env == nullptr || env[0] == '\0' ? " (not set)" : std::string("=") + env + " (not a file)"));
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    const char* prefix = std::getenv(var);
    if (prefix == nullptr || prefix[0] == '\0') {
      out.looked.push_back(std::string("$") + var + " (not set)");
      continue;
    }
    std::string why;
    out.path = in_environment(r, prefix, why);
    if (!out.path.empty()) {
      out.source = std::string("the ") + r.package + " package of $" + var;
      out.step = var == std::string("VIRTUAL_ENV") ? "virtual_env" : "conda_prefix";
      return out;
    }
    out.looked.push_back(std::string("$") + var + ": " + why);
  }
  std::string why;
  if (in_system(r, why)) {
    out.path = r.system_name;
    out.source = "the system's library search";
    out.step = "dlopen";
    return out;
  }
  out.looked.push_back(std::string("the system's library search for ") + r.system_name + " (" + why + ")");
  return out;
}

std::vector<Probed> probe_runtimes(const std::map<std::string, std::string>& explicit_paths,
                                   const std::map<std::string, std::set<std::string>>* devices) {
  std::vector<Probed> out;
  for (const VendorRuntime& r : vendor_runtimes()) {
    const std::set<std::string>* types = nullptr;
    if (devices != nullptr) {
      const auto asked = devices->find(r.name);
      if (asked == devices->end()) continue;
      if (asked->second.count("") == 0) types = &asked->second;
    }
    Probed p;
    p.runtime = &r;
    p.where = locate(r, explicit_paths);
    if (!p.where.path.empty()) p.devices = r.probe(p.where.path, types, p.why);
    out.push_back(std::move(p));
  }
  return out;
}

bool prepare_backend(const std::string& backend_id, const std::map<std::string, std::string>& explicit_paths,
                     Located& out) {
  const VendorRuntime* r = runtime_of_backend(backend_id);
  if (r == nullptr) return false;
  std::lock_guard<std::mutex> lock(decided_mutex());
  const auto known = decided().find(r->name);
  if (known != decided().end()) {
    out = known->second;
    return true;
  }
  out = locate(*r, explicit_paths);
  keep(*r, out);
  return true;
}

void decide(const VendorRuntime& r, const Located& where) {
  std::lock_guard<std::mutex> lock(decided_mutex());
  if (decided().count(r.name) == 0) keep(r, where);
}

void testing::forget_decisions() {
  std::lock_guard<std::mutex> lock(decided_mutex());
  decided().clear();
}

std::string why_absent(const VendorRuntime& r, const Located& where, bool command_line) {
  if (where.withheld && !where.withheld_why.empty()) return where.withheld_why;
  if (where.withheld) {
    return std::string("withheld by the caller (") +
           (command_line ? std::string("--vendor-runtime ") + r.name + "="
                         : std::string("its vendor runtime is set to none in the load options")) +
           ")";
  }
  return where.path.empty() ? where.text() : "";
}

std::string search_json(const VendorRuntime& r, const Located& where, bool command_line) {
  std::string out = "{\"name\": " + detail::json_quote(r.name) + ", \"found\": ";
  if (!where.path.empty()) {
    return out + "true, \"path\": " + detail::json_quote(where.path) + ", \"step\": " + detail::json_quote(where.step) +
           "}";
  }
  out += "false, \"withheld\": " + (where.withheld ? detail::json_quote(why_absent(r, where, command_line)) : "null") +
         ", \"looked\": [";
  for (std::size_t i = 0; i < where.looked.size(); ++i) out += (i == 0 ? "" : ", ") + detail::json_quote(where.looked[i]);
  return out + "]}";
}

std::string status_line(const VendorRuntime& r, const Located& where, bool command_line) {
  const std::string why = why_absent(r, where, command_line);
  return std::string("vendor runtime ") + r.name + ": " + r.title + "'s runtime (" + r.system_name + ") " +
         (why.empty() ? where.text() : why);
}

}  // namespace vendor
}  // namespace fatpte
