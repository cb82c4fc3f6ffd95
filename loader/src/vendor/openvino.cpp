// OpenVINO's devices from its C runtime (vendor/openvino.hpp; specs/device-profile.md 9.1).
#include "vendor/openvino.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

namespace fatpte {
namespace vendor {

namespace {

constexpr int kOk = 0;                     // OV_STATUS_OK
constexpr std::size_t kMaxPropertyBytes = 4096;  // a property's text is read no further
constexpr std::size_t kMaxCapabilities = 32;

bool device_word(const char* listed) {
  const std::size_t n = strnlen(listed, 65);
  if (n == 0 || n > 64) return false;
  return std::all_of(listed, listed + n, [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

// A property's text, or false when the runtime does not answer it.
bool property(const OpenvinoApi& api, void* core, const char* device, const char* key, std::string& out) {
  char* value = nullptr;
  if (api.ov_core_get_property(core, device, key, &value) != kOk || value == nullptr) return false;
  out.assign(value, strnlen(value, kMaxPropertyBytes));
  api.ov_free(value);
  return true;
}

std::uint64_t decimal(const std::string& text) {
  if (text.empty() || text.size() > 19) return 0;  // a memory size fits in 19 digits (< 2^63)
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v <= static_cast<std::uint64_t>(INT64_MAX) ? v : 0;
}

bool one_device(const OpenvinoApi& api, void* core, const char* listed, std::size_t place, const std::string& version,
                VendorDevice& out) {
  std::string full_name, capabilities;
  if (!property(api, core, listed, "FULL_DEVICE_NAME", full_name)) return false;
  out.device = listed;
  out.name = printable_device_name(full_name, "OpenVINO device " + std::to_string(place));
  out.version = version;
  if (property(api, core, listed, "OPTIMIZATION_CAPABILITIES", capabilities)) {
    out.capabilities = openvino_capabilities(capabilities);
  }
  std::string memory;
  const bool gpu = out.device == "GPU" || out.device.rfind("GPU.", 0) == 0;
  if (gpu && property(api, core, listed, "GPU_DEVICE_TOTAL_MEM_SIZE", memory)) out.memory_bytes = decimal(memory);
  return true;
}

}  // namespace

std::string openvino_version(const char* build_number) {
  if (build_number == nullptr) return "";
  const std::string text(build_number, strnlen(build_number, 256));
  std::string out;
  std::size_t i = 0;
  for (int part = 0; part < 3; ++part) {
    const std::size_t start = i;
    while (i < text.size() && i - start < 4 && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == start || (i - start > 1 && text[start] == '0')) return "";  // no number, or a leading zero
    out += (part == 0 ? "" : ".") + text.substr(start, i - start);
    if (part < 2) {
      if (i >= text.size() || text[i] != '.') return "";
      ++i;
    }
  }
  if (i < text.size() && text[i] >= '0' && text[i] <= '9') return "";  // a fifth digit
  return out;
}

std::vector<std::string> openvino_capabilities(const std::string& listed) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < listed.size()) {
    while (i < listed.size() && listed[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < listed.size() && listed[i] != ' ') ++i;
    std::string word = listed.substr(start, i - start);
    for (char& c : word) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    const bool ok = !word.empty() && word.size() <= 32 && std::all_of(word.begin(), word.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (ok) out.push_back(word);  // a word outside the profile's alphabet is left out
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.size() > kMaxCapabilities) out.resize(kMaxCapabilities);
  return out;
}

std::string printable_device_name(const std::string& raw, const std::string& fallback) {
  // Python decodes UTF-8 (errors="replace") and maps every character outside ' '..'~' to '?':
  // one '?' per well-formed multi-byte sequence, one per invalid byte.
  std::string text;
  const auto* s = reinterpret_cast<const unsigned char*>(raw.data());
  const std::size_t n = raw.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c >= 0x20 && c <= 0x7E) {
      text += static_cast<char>(c);
      ++i;
      continue;
    }
    std::size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 1;
    bool ok = len > 1 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xC0) == 0x80;
    text += '?';
    i += ok ? len : 1;
  }
  const auto a = text.find_first_not_of(' ');
  if (a == std::string::npos) return fallback;
  text = text.substr(a, text.find_last_not_of(' ') - a + 1);
  return text.substr(0, 256);
}

// The names the runtime lists for `types`, in the set's order: TYPE.ID for each of two or more
// AVAILABLE_DEVICES ids, else TYPE (whose FULL_DEVICE_NAME then says whether it is there).
std::vector<std::string> typed_names(const OpenvinoApi& api, void* core, const std::set<std::string>& types) {
  std::vector<std::string> names;
  for (const std::string& type : types) {
    if (!device_word(type.c_str())) continue;
    std::string ids;
    std::vector<std::string> listed;
    if (property(api, core, type.c_str(), "AVAILABLE_DEVICES", ids)) {
      std::size_t at = 0;
      while (at < ids.size() && listed.size() < kMaxDevices) {
        const std::size_t end = std::min(ids.find(' ', at), ids.size());
        if (end > at) listed.push_back(type + "." + ids.substr(at, end - at));
        at = end + 1;
      }
    }
    if (listed.size() < 2) listed.assign(1, type);
    names.insert(names.end(), listed.begin(), listed.end());
  }
  return names;
}

std::vector<VendorDevice> openvino_devices(const OpenvinoApi& api, const std::set<std::string>* types,
                                           std::string& why) {
  std::vector<VendorDevice> out;
  OvVersion v{nullptr, nullptr};
  if (api.ov_get_openvino_version(&v) != kOk) {
    why = "ov_get_openvino_version failed";
    return out;
  }
  const std::string version = openvino_version(v.buildNumber);
  api.ov_version_free(&v);
  if (version.empty()) {
    why = "its version is not MAJOR.MINOR.PATCH";
    return out;
  }
  void* core = nullptr;
  if (api.ov_core_create(&core) != kOk || core == nullptr) {
    why = "ov_core_create failed";
    return out;
  }
  if (types != nullptr) {
    const std::vector<std::string> names = typed_names(api, core, *types);
    for (std::size_t i = 0; i < names.size() && out.size() < kMaxDevices; ++i) {
      VendorDevice d;
      if (device_word(names[i].c_str()) && one_device(api, core, names[i].c_str(), i, version, d)) {
        out.push_back(std::move(d));
      }
    }
    if (out.empty()) why = "it lists no device of the types asked for";
    api.ov_core_free(core);
    return out;
  }
  OvAvailableDevices listed{nullptr, 0};
  if (api.ov_core_get_available_devices(core, &listed) != kOk) {
    why = "ov_core_get_available_devices failed";
  } else {
    for (std::size_t i = 0; i < listed.size && listed.devices != nullptr && out.size() < kMaxDevices; ++i) {
      VendorDevice d;
      if (listed.devices[i] != nullptr && device_word(listed.devices[i]) &&
          one_device(api, core, listed.devices[i], i, version, d)) {
        out.push_back(std::move(d));
      }
    }
    if (listed.devices != nullptr) api.ov_available_devices_free(&listed);
    if (out.empty()) why = "it lists no device";
  }
  api.ov_core_free(core);
  return out;
}

std::vector<VendorDevice> probe_openvino(const std::string& path, const std::set<std::string>* types,
                                         std::string& why) {
  dlerror();
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    why = std::string("cannot load it: ") + (err != nullptr ? err : "unknown error");
    return {};
  }
  OpenvinoApi api;
  // POSIX guarantees that a data pointer from dlsym converts to a function pointer.
  const auto sym = [lib](auto& field, const char* name) {
    field = reinterpret_cast<std::remove_reference_t<decltype(field)>>(dlsym(lib, name));
    return field != nullptr;
  };
  const bool ok = sym(api.ov_get_openvino_version, "ov_get_openvino_version") &&
                  sym(api.ov_version_free, "ov_version_free") && sym(api.ov_core_create, "ov_core_create") &&
                  sym(api.ov_core_free, "ov_core_free") &&
                  sym(api.ov_core_get_available_devices, "ov_core_get_available_devices") &&
                  sym(api.ov_available_devices_free, "ov_available_devices_free") &&
                  sym(api.ov_core_get_property, "ov_core_get_property") && sym(api.ov_free, "ov_free");
  if (!ok) {
    why = "it lacks an entry point of OpenVINO's C API";
    return {};
  }
  // The runtime stays loaded: its plugins start threads that outlive the core.
  return openvino_devices(api, types, why);
}

}  // namespace vendor
}  // namespace fatpte
