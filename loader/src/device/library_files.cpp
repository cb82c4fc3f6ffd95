#include "device/library_files.hpp"

#include <sys/stat.h>

#include <string>
#include <vector>

namespace fatpte {
namespace detail {

namespace {

bool is_file(const std::string& path) {
  struct stat sb;
  return stat(path.c_str(), &sb) == 0 && S_ISREG(sb.st_mode);
}

}  // namespace

std::string find_library(const std::string& file, const std::vector<std::string>& dirs) {
  if (file.find('/') != std::string::npos) return is_file(file) ? file : std::string();
  for (const std::string& d : dirs) {
    const std::string candidate = d + "/" + file;
    if (is_file(candidate)) return candidate;
  }
  return std::string();
}

std::string not_found(const std::string& file, const std::vector<std::string>& dirs) {
  if (file.find('/') != std::string::npos) return "not found at " + file;
  std::string where;
  for (const std::string& d : dirs) where += (where.empty() ? "" : ", ") + d;
  return "not found in " + (where.empty() ? std::string("any directory (no backend path is configured)") : where);
}

}  // namespace detail
}  // namespace fatpte
