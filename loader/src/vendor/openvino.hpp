// OpenVINO's devices, asked of its C runtime (libopenvino_c) opened at run time, never linked:
// ov_get_openvino_version, ov_core_create, ov_core_get_available_devices and, per device,
// ov_core_get_property for FULL_DEVICE_NAME, OPTIMIZATION_CAPABILITIES and, for a GPU,
// GPU_DEVICE_TOTAL_MEM_SIZE (specs/device-profile.md 9.1; Python: fatpte/device/probe_openvino.py).
// The decoding is a pure function over the entry points so tests can pass fakes.
#ifndef FATPTE_SRC_VENDOR_OPENVINO_HPP_
#define FATPTE_SRC_VENDOR_OPENVINO_HPP_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "vendor/vendor_device.hpp"

namespace fatpte {
namespace vendor {

// The C API's types, as openvino/c/ov_common.h and ov_core.h declare them (only pointers to the
// opaque core are used).
struct OvAvailableDevices {
  char** devices;
  std::size_t size;
};
struct OvVersion {
  const char* buildNumber;
  const char* description;
};

struct OpenvinoApi {
  int (*ov_get_openvino_version)(OvVersion*) = nullptr;
  void (*ov_version_free)(OvVersion*) = nullptr;
  int (*ov_core_create)(void**) = nullptr;
  void (*ov_core_free)(void*) = nullptr;
  int (*ov_core_get_available_devices)(const void*, OvAvailableDevices*) = nullptr;
  void (*ov_available_devices_free)(OvAvailableDevices*) = nullptr;
  int (*ov_core_get_property)(const void*, const char*, const char*, char**) = nullptr;
  void (*ov_free)(const char*) = nullptr;
};

// The devices the runtime lists, in its order; `why` says why there are none when a call failed
// (a device whose own queries fail is left out, the others kept). At most kMaxDevices; a listed
// name outside [A-Za-z0-9_.-]{1,64} is left out.
// With `types`, only the devices of those types: each type's AVAILABLE_DEVICES ids (two or more:
// TYPE.ID each, as the listing names them; else TYPE), a type that answers no FULL_DEVICE_NAME
// having none; the other plugins are not loaded.
std::vector<VendorDevice> openvino_devices(const OpenvinoApi& api, const std::set<std::string>* types,
                                           std::string& why);
constexpr std::size_t kMaxDevices = 64;

// "2026.4.0" from a buildNumber "2026.4.0-22959-99c81491cc3-releases/2026/4"; "" when it does not
// start with three dot-separated numbers.
std::string openvino_version(const char* build_number);
// OPTIMIZATION_CAPABILITIES ("BF16 FP32 INT8 EXPORT_IMPORT") as the profile's words.
std::vector<std::string> openvino_capabilities(const std::string& listed);
// A driver-reported name as printable ASCII, at most 256 characters; `fallback` when nothing is left.
std::string printable_device_name(const std::string& raw, const std::string& fallback);

// The library at `path` (a path, or a name for dlopen's search) opened and asked; empty with `why`
// when it cannot be opened or lacks an entry point. The library stays loaded.
std::vector<VendorDevice> probe_openvino(const std::string& path, const std::set<std::string>* types,
                                         std::string& why);

}  // namespace vendor
}  // namespace fatpte

#endif  // FATPTE_SRC_VENDOR_OPENVINO_HPP_
