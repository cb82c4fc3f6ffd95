// One device a vendor runtime lists, as the profile's accelerator object of the runtime's kind
// gives it (specs/device-profile.md 4 and 9.1).
#ifndef FATPTE_SRC_VENDOR_VENDOR_DEVICE_HPP_
#define FATPTE_SRC_VENDOR_VENDOR_DEVICE_HPP_

#include <cstdint>
#include <string>
#include <vector>

namespace fatpte {
namespace vendor {

struct VendorDevice {
  std::string device;              // as the runtime lists it: OpenVINO's "CPU", "GPU.0", "NPU"
  std::string name;                // its full name as printable ASCII ('?' for other bytes), at most 256
  std::string version;             // the runtime's MAJOR.MINOR.PATCH
  std::uint64_t memory_bytes = 0;  // a GPU's own memory; else 0
  std::vector<std::string> capabilities;  // lower-cased, sorted, each once, at most 32
};

}  // namespace vendor
}  // namespace fatpte

#endif  // FATPTE_SRC_VENDOR_VENDOR_DEVICE_HPP_
