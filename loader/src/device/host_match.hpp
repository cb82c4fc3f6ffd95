// Whether a device profile describes a device of this host's kind: its architecture and OS. A run
// for a profile of another kind (fatpte-run --device raspberry-pi-5 on x86-64, issue 39) can only
// be a dry run of the choice: the entry chosen for that device is built for a CPU or a system this
// host is not, and running it here would say nothing true of the device.
#ifndef FATPTE_SRC_DEVICE_HOST_MATCH_HPP_
#define FATPTE_SRC_DEVICE_HOST_MATCH_HPP_

#include <string>

#include "fatpte/profile.hpp"

namespace fatpte {
namespace detail {

// "" when `profile`'s arch and os are this host's (as probe_host reports them); else why not, as
// "the device profile 'raspberry-pi-5' describes aarch64 linux and this host is x86_64 linux".
std::string foreign_to_host(const DeviceProfile& profile);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_DEVICE_HOST_MATCH_HPP_
