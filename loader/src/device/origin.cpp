// Where this copy of libfatpte runs from (see origin.hpp). The build tree is recognised by its
// folder, compiled in (FATPTE_BUILD_DIR, symbolic links resolved) and compared with the resolved
// folder of the running file: an install copies the file elsewhere, so a prefix, moved or not,
// never passes for the build tree, and no marker file is needed in either.
#include "device/origin.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#if defined(__linux__)
#include <link.h>
#endif

#ifndef FATPTE_BUILD_DIR
#define FATPTE_BUILD_DIR ""
#endif
// The install layout, relative (loader/CMakeLists.txt): from bin/ to lib/, from lib/ and from
// bin/ to share/fatpte/devices.
#ifndef FATPTE_BIN_TO_LIB
#define FATPTE_BIN_TO_LIB "../lib"
#endif
#ifndef FATPTE_LIB_TO_DEVICES
#define FATPTE_LIB_TO_DEVICES "../share/fatpte/devices"
#endif
#ifndef FATPTE_BIN_TO_DEVICES
#define FATPTE_BIN_TO_DEVICES "../share/fatpte/devices"
#endif

namespace fatpte {
namespace detail {
namespace {

std::string resolved(const std::string& path) {
  char buffer[PATH_MAX];
  return realpath(path.c_str(), buffer) != nullptr ? std::string(buffer) : std::string();
}

// The file this function's code is in. For the main program dladdr gives argv[0], which may be a
// bare name found on PATH or a path relative to a folder since left: /proc/self/exe instead.
std::string own_file() {
  Dl_info info{};
#if defined(__linux__)
  struct link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&own_file), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0) {
    return "";
  }
  if (map != nullptr && map->l_name != nullptr && map->l_name[0] == '\0') return resolved("/proc/self/exe");
#else
  if (dladdr(reinterpret_cast<void*>(&own_file), &info) == 0) return "";
#endif
  if (info.dli_fname == nullptr) return "";
  const std::string name = info.dli_fname;
  return name.find('/') == std::string::npos ? std::string() : resolved(name);
}

bool is_dir(const std::string& path) {
  struct stat sb;
  return stat(path.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode);
}

#if defined(__linux__)
int find_runtime(struct dl_phdr_info* info, size_t, void* data) {
  const char* name = info->dlpi_name;
  const char* base = name != nullptr ? std::strrchr(name, '/') : nullptr;
  if (base == nullptr || std::strcmp(base + 1, "libexecutorch.so") != 0) return 0;
  *static_cast<std::string*>(data) = resolved(std::string(name, base));
  return 1;
}
#endif

// Each of `dirs` resolved, once, in order; those that are not folders left out.
std::vector<std::string> existing(const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  for (const std::string& d : dirs) {
    const std::string r = d.empty() ? d : resolved(d);
    if (!r.empty() && is_dir(r) && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  }
  return out;
}

Origin find_origin() {
  Origin o;
  o.file = own_file();
  if (o.file.empty()) return o;
  o.dir = o.file.substr(0, o.file.rfind('/'));
  if (o.dir.empty()) o.dir = "/";
  const std::string build = FATPTE_BUILD_DIR[0] != '\0' ? resolved(FATPTE_BUILD_DIR) : std::string();
  o.build_tree = !build.empty() && build == o.dir;
#if defined(__linux__)
  dl_iterate_phdr(find_runtime, &o.runtime_dir);
#endif
  return o;
}

}  // namespace

const Origin& origin() {
  static const Origin o = find_origin();
  return o;
}

std::vector<std::string> prefix_library_dirs() {
  const Origin& o = origin();
  if (o.dir.empty()) return existing({o.runtime_dir});
  return existing({o.dir, o.dir + "/" + FATPTE_BIN_TO_LIB, o.runtime_dir});
}

std::string prefix_devices_dir() {
  const Origin& o = origin();
  std::vector<std::string> candidates;
  if (!o.dir.empty()) {
    candidates = {o.dir + "/" + FATPTE_LIB_TO_DEVICES, o.dir + "/" + FATPTE_BIN_TO_DEVICES};
  }
  if (!o.runtime_dir.empty()) candidates.push_back(o.runtime_dir + "/" + FATPTE_LIB_TO_DEVICES);
  const std::vector<std::string> found = existing(candidates);
  if (!found.empty()) return found.front();
  return candidates.empty() ? std::string(FATPTE_LIB_TO_DEVICES) : candidates.front();
}

std::string origin_text() {
  const Origin& o = origin();
  if (o.file.empty()) return "libfatpte's own file is unknown (the system did not say)";
  return o.build_tree ? "the build tree " + o.dir : o.file + ", an installed copy";
}

}  // namespace detail
}  // namespace fatpte
