// A device profile against this host's architecture and OS (see host_match.hpp).
#include "device/host_match.hpp"

#include "fatpte/device.hpp"
#include "fatpte/text.hpp"

namespace fatpte {
namespace detail {

std::string foreign_to_host(const DeviceProfile& profile) {
  const DeviceProfile host = probe_host(ProbeScope{false, false, false, false, {}, std::nullopt});  // arch and os only
  if (profile.arch == host.arch && profile.os == host.os) return "";
  return "the device profile '" + printable(profile.name) + "' describes " + printable(profile.arch) + " " +
         printable(profile.os) + " and this host is " + host.arch + " " + host.os;
}

}  // namespace detail
}  // namespace fatpte
