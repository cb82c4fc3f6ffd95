// Finding a backend or operator library in the folders the caller configured: which file of it
// this machine holds (the load policy, run/dispatch.cpp, and the verdict store's identities of
// an entry's libraries, run/remember.cpp, look for libraries the same way).
#ifndef FATPTE_SRC_DEVICE_LIBRARY_FILES_HPP_
#define FATPTE_SRC_DEVICE_LIBRARY_FILES_HPP_

#include <string>
#include <vector>

namespace fatpte {
namespace detail {

// `file` when it is a path (it contains a '/') naming a regular file; else the first
// `dir/file` that is a regular file; "" when there is none.
std::string find_library(const std::string& file, const std::vector<std::string>& dirs);
// "not found in A, B", or "not found in any directory (no backend path is configured)"; a path
// that is not a file: "not found at PATH".
std::string not_found(const std::string& file, const std::vector<std::string>& dirs);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_DEVICE_LIBRARY_FILES_HPP_
