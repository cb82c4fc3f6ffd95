// Device identity (specs/device-profile.md sections 3.6 and 9, "Identity"): the core table of
// fatpte/format/vocabulary.py (CORES: a core's name, architecture, generation and the ids the
// probe reads), and the probe of what Linux tells of the machine: the cores of /proc/cpuinfo (or
// the MIDR of /sys), the kernel release, /etc/os-release, the device tree's model and compatible
// strings and /sys/devices/soc0. Mirrors fatpte/device/probe_identity.py step for step, so both
// print the same profile; every file is read with a bound.
#ifndef FATPTE_SRC_DEVICE_IDENTITY_HPP_
#define FATPTE_SRC_DEVICE_IDENTITY_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fatpte/device.hpp"

namespace fatpte {
namespace detail {

struct Core {
  const char* name;
  const char* arch;
  int generation;
};

// The table's core of that name or id; nullptr when the table has none.
const Core* core_by_name(const std::string& name);
const Core* core_by_id(const std::string& id);
// `word` has the id form of a core of `arch` (vocabulary.CORE_ID_PATTERNS).
bool is_core_id(const std::string& word, const std::string& arch);
// 1 to 256 printable ASCII characters (`kernel`, `os_release`, `machine`, each `soc` word).
bool is_identity_text(const std::string& s);
// At most `limit` bytes of the file at `path`; "" when it cannot be read.
std::string read_bounded(const char* path, std::size_t limit);

}  // namespace detail

namespace probe {

// The cores of /proc/cpuinfo text for `arch`, each by its table name or else its id, in the
// order first seen, at most 64 (probe_identity.cpuinfo_cores).
std::vector<std::string> cpuinfo_cores(const std::string& cpuinfo, const std::string& arch);
// "ID VERSION_ID" (or "ID") of /etc/os-release text; "" when ID is missing or not a plain word.
std::string os_release_of(const std::string& text);
// The x86 core id `VENDOR:FAMILY:MODEL` from cpuid leaves 0 and 1, computed as Linux computes the
// `cpu family` and `model` of /proc/cpuinfo (the extended family added when the family is 0xf,
// the extended model when it is 6 or more); "" when the vendor is not letters and digits.
std::string x86_core_id(std::uint32_t vendor_ebx, std::uint32_t vendor_edx, std::uint32_t vendor_ecx,
                        std::uint32_t leaf1_eax);
// The core's word: its table name, else the id.
std::string core_word(const std::string& id);
// The facts of `root` (a directory standing for /; "/" on a real host) into `p`: cpu_cores (from
// /proc/cpuinfo when `cores`), os_release, machine, soc. The kernel release is uname's, set by
// probe_host, and on x86 the host's cores come from cpuid: reading /proc/cpuinfo there costs
// milliseconds (the kernel samples every CPU's frequency for it).
void read_identity(const std::string& root, DeviceProfile& p, bool cores = true);

}  // namespace probe
}  // namespace fatpte

#endif  // FATPTE_SRC_DEVICE_IDENTITY_HPP_
