// What selection reads of an entry: its requirements and the ExecuTorch backends its program
// needs (specs/nfat-manifest.md sections 4 and 6), decoded from a manifest record or from a signed
// statement's `selection` member (specs/nfat-signature.md 3.2); and selection's ranking over any
// list of such entries, which select() runs over a container's table and the signature's
// downgrade check over the entries a statement lists (Python: fatpte/device/selection.py `rank`).
#ifndef FATPTE_SRC_DEVICE_REQUIREMENTS_HPP_
#define FATPTE_SRC_DEVICE_REQUIREMENTS_HPP_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fatpte/device.hpp"
#include "fatpte/format.hpp"
#include "fatpte/select.hpp"
#include "nfat_manifest_generated.h"

namespace fatpte {
namespace detail {

inline constexpr std::uint32_t kU32Max = 0xFFFFFFFFu;

struct Constraint {
  std::uint8_t match = 0;
  std::uint32_t major = 0;
  std::uint32_t minor = 0;

  bool holds(std::uint64_t a, std::uint64_t b) const {
    switch (match) {
      case ::nfat::manifest::VersionMatch_AT_LEAST: return a > major || (a == major && b >= minor);
      case ::nfat::manifest::VersionMatch_SAME_MAJOR: return a == major && b >= minor;
      case ::nfat::manifest::VersionMatch_EXACT: return a == major && b == minor;
      default: return false;  // a later revision's rule never holds here
    }
  }

  std::string text(const std::string& kind) const {
    const bool cuda = kind == "cuda" && minor < 10 && major < 1000;  // what sm_XY can spell
    const std::string mm = std::to_string(major) + "." + std::to_string(minor);
    const std::string digits = std::to_string(major) + std::to_string(minor);
    switch (match) {
      case ::nfat::manifest::VersionMatch_SAME_MAJOR: return cuda ? "sm_" + digits : "~" + mm;
      case ::nfat::manifest::VersionMatch_AT_LEAST: return cuda ? "compute_" + digits : ">=" + mm;
      case ::nfat::manifest::VersionMatch_EXACT: return cuda ? "sm_" + digits + "a" : "==" + mm;
      default: return "<match " + std::to_string(match) + ">" + mm;
    }
  }
};

struct AccRequirement {
  std::string kind;
  std::vector<Constraint> targets;
  std::uint64_t min_memory_bytes = 0;
  // Revision 4: the vendor runtime's device type ("GPU"; empty: any) and the capabilities the
  // accelerator must list (specs/nfat-manifest.md 4.1).
  std::string device;
  std::vector<std::string> capabilities;

  // An accelerator whose `device` is `name` is of this device type: the type itself, or the type
  // then "." and an index (manifest/model.py AcceleratorRequirement.device_met).
  bool device_met(const std::string& name) const {
    if (device.empty() || name == device) return true;
    if (name.size() <= device.size() + 1 || name.compare(0, device.size(), device) != 0 || name[device.size()] != '.') {
      return false;
    }
    for (std::size_t i = device.size() + 1; i < name.size(); ++i) {
      if (name[i] < '0' || name[i] > '9') return false;
    }
    return true;
  }
};

struct Requirements {
  std::vector<std::string> os, arch, cpu_features;
  std::vector<AccRequirement> accelerators;
  std::uint64_t min_memory_bytes = 0;
  bool has_abi = false;
  std::uint32_t abi_min = 0, abi_max = kU32Max;
  // Not a requirement of `requires` but the entry's manifest record: the ExecuTorch backends its
  // program needs, in manifest order (absent: not known).
  std::optional<std::vector<std::string>> executorch_backends;
  // Revision 4 (specs/nfat-manifest.md 4.4): the device's cores and SoC.
  std::vector<std::string> cpu_cores, soc;
  std::optional<std::string> min_core;

  // It states a core or an SoC: met, the entry's fit is `exact` (section 6.3).
  bool names_device() const { return !cpu_cores.empty() || min_core.has_value() || !soc.empty(); }

  int specificity() const {
    std::vector<std::string> distinct(cpu_features);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    return (os.empty() ? 0 : 1) + (arch.empty() ? 0 : 1) + static_cast<int>(distinct.size()) +
           static_cast<int>(accelerators.size()) + (min_memory_bytes ? 1 : 0) + (has_abi ? 1 : 0) +
           (cpu_cores.empty() ? 0 : 1) + (min_core ? 1 : 0) + (soc.empty() ? 0 : 1);
  }
  std::string abi_text() const {
    return abi_max != kU32Max ? std::to_string(abi_min) + ".." + std::to_string(abi_max)
                              : ">= " + std::to_string(abi_min);
  }
};

// What selection reads of a manifest record: its requirements and executorch_backends; none (no
// requirement, backends not known) for a missing record.
Requirements requirements_of(const ::nfat::manifest::Entry* record);

// One entry to rank: its table fields (name, backend id, priority; `index` its place in the list)
// and what selection reads of its record. Both borrowed.
struct Candidate {
  const Entry* entry;
  const Requirements* requirements;
};

// specs/nfat-manifest.md section 6 over `candidates`, in their order: every verdict (Verdict::index
// is the candidate's place) and, when one is eligible, the chosen one's place.
Selection rank(const std::vector<Candidate>& candidates, const DeviceProfile& device,
               const std::vector<std::string>& prefer, const std::vector<std::string>& exclude);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_DEVICE_REQUIREMENTS_HPP_
