// profile.hpp: device profiles read from JSON (specs/device-profile.md, the shape of
// specs/device_profile.schema.json) with the same checks in the same order as Python's
// DeviceProfile.load (fatpte/device/profile.py), and the named profiles of specs/devices/.
#ifndef FATPTE_PROFILE_HPP_
#define FATPTE_PROFILE_HPP_

#include <string>

#include "fatpte/device.hpp"
#include "fatpte/result.hpp"

namespace fatpte {

// A device profile from its JSON text or file (the shape of specs/device_profile.schema.json);
// INVALID_ARGUMENT naming the field when it is not one.
Result<DeviceProfile> profile_from_json(const std::string& json);
Result<DeviceProfile> profile_from_file(const std::string& path);
// `host` (this machine, probed), a named profile (`x86-64-v3`: a word of [A-Za-z0-9_.-] not
// ending in .json, read from devices_dir()), or a path to a profile JSON file, as Python's
// DeviceProfile.load reads them.
Result<DeviceProfile> load_profile(const std::string& host_name_or_path);
// The file load_profile reads for that word: the path itself, or devices_dir()/NAME.json; "" for
// `host`. (fatpte-run --explain prints it.)
std::string profile_path(const std::string& host_name_or_path);
// The folder of the named profiles: $FATPTE_DEVICES_DIR, else, for a binary of the build tree, the
// source tree's specs/devices, and for an installed copy its own prefix's share/fatpte/devices
// found from its file, wherever the prefix was moved (docs/cpp.md, "Install trees").
const char* devices_dir() noexcept;

}  // namespace fatpte

#endif  // FATPTE_PROFILE_HPP_
