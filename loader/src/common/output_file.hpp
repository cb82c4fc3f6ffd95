// Output files the loader's tools write for users (fatpte-run --save-outputs), by the rule of
// Python's writer (fatpte/fileio/atomic.py): an output replaces only a regular file, and is written
// whole to a temporary file beside it, then renamed into place. Header-only: the tools that write
// for users include it (fatpte-run).
#ifndef FATPTE_SRC_COMMON_OUTPUT_FILE_HPP_
#define FATPTE_SRC_COMMON_OUTPUT_FILE_HPP_

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fatpte/status.hpp"

namespace fatpte {
namespace output_file_detail {

// What a path that is not a regular file is, in the words of Python's fatpte/fileio/kinds.py.
inline const char* what_file(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

inline Status io_error(const char* doing, const std::string& path, int err) {
  return fail(Error::IO_ERROR, kNoOffset, "", "%s %s: %s", doing, path.c_str(), std::strerror(err));
}

// A new file `.NAME.pPID.RANDOM.partial` in `folder`, created exclusively (never through a link,
// never over a file already there); its descriptor, or -1 with errno.
inline int create_beside(const std::string& folder, const std::string& name, std::string& tmp) {
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "%06x%06x", random() & 0xFFFFFFu, random() & 0xFFFFFFu);
    tmp = folder + "." + name + ".p" + std::to_string(getpid()) + "." + suffix + ".partial";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

inline bool write_all(int fd, const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// When this process started (closely enough: when it loaded this code): a leftover temporary
// file older than this cannot be one this process is still writing.
inline const std::time_t kStarted = std::time(nullptr);

// Whether process `pid` runs (or exists under another user).
inline bool running(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

// The temporary files `.NAME.pPID.RANDOM.partial` of `folder` older than this process and of
// another process, by NAME: (path, pid) each.
using StaleFiles = std::map<std::string, std::vector<std::pair<std::string, long>>>;
inline StaleFiles stale_in(const std::string& folder) {
  StaleFiles out;
  DIR* dir = ::opendir(folder.empty() ? "." : folder.c_str());
  if (dir == nullptr) return out;
  const std::string suffix = ".partial";
  while (const dirent* e = ::readdir(dir)) {
    const std::string file = e->d_name;
    if (file.size() <= 1 + suffix.size() || file[0] != '.' ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string inner = file.substr(1, file.size() - 1 - suffix.size());  // NAME.pPID.RANDOM
    const std::size_t random_dot = inner.rfind('.');
    if (random_dot == std::string::npos || random_dot == 0) continue;
    const std::size_t pid_dot = inner.rfind('.', random_dot - 1);
    if (pid_dot == std::string::npos || inner[pid_dot + 1] != 'p') continue;
    const std::string digits = inner.substr(pid_dot + 2, random_dot - pid_dot - 2);
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::stol(digits);
    struct stat sb;
    const std::string path = folder + file;
    if (pid == ::getpid() || ::lstat(path.c_str(), &sb) != 0 || sb.st_mtime >= kStarted) continue;
    out[inner.substr(0, pid_dot)].emplace_back(path, pid);
  }
  ::closedir(dir);
  return out;
}

// Remove the temporary files `.NAME.pPID.RANDOM.partial` in `folder` that a killed writer left:
// those whose process no longer runs and which are older than this process, as Python's
// remove_stale does. A stale file is older than this process, so it was in the folder before this
// process wrote there: the folder is listed once per process, whatever the number of outputs
// written into it (a listing per output made n outputs into one folder cost n^2). Best effort:
// what cannot be examined or removed stays.
inline void remove_stale(const std::string& folder, const std::string& name) {
  static std::mutex lock;
  static std::map<std::string, StaleFiles> listed;  // folder -> what is left to remove in it
  std::vector<std::pair<std::string, long>> candidates;
  {
    const std::lock_guard<std::mutex> hold(lock);
    auto at = listed.find(folder);
    if (at == listed.end()) at = listed.emplace(folder, stale_in(folder)).first;
    auto named = at->second.find(name);
    if (named == at->second.end()) return;
    candidates = std::move(named->second);
    at->second.erase(named);
  }
  for (const auto& [path, pid] : candidates) {
    if (!running(pid)) ::unlink(path.c_str());
  }
}

}  // namespace output_file_detail

// Write `size` bytes at `data` to `path`. A path that exists and is not a regular file (a symbolic
// link, a directory, a FIFO, a device, a socket) is refused before anything is written: E0811
// NOT_A_FILE naming it and what it is, the link never followed (lstat). Otherwise the bytes go to
// `.NAME.pPID.RANDOM.partial` in the same folder (created with O_CREAT | O_EXCL | O_NOFOLLOW, so
// never through a link nor over another file), which is renamed over `path` once complete: a
// reader sees the old file or the whole new one, and an error leaves neither a partial file nor
// the temporary one (E0801 IO_ERROR naming the path and the system's reason). The file's mode is
// 0666 less the umask, as Python's. Temporary files of NAME that a killed writer left (their
// process gone, older than this one) are removed first, as Python does. `sync`: the temporary
// file is flushed to the disk before the rename and the folder after it (fsync), so that the new
// file survives a crash of the machine once this returns (the verdict store's crash journal).
inline Status write_output_file(const std::string& path, const std::uint8_t* data, std::size_t size,
                                bool sync = false) {
  struct stat sb;
  if (::lstat(path.c_str(), &sb) == 0) {
    if (!S_ISREG(sb.st_mode)) {
      return fail(Error::NOT_A_FILE, kNoOffset, "",
                  "cannot write %s: it is %s, which fatpte does not replace: only a regular file is replaced by "
                  "an output; write to another path",
                  path.c_str(), output_file_detail::what_file(sb.st_mode));
    }
  } else if (errno != ENOENT) {
    return output_file_detail::io_error("cannot examine the output", path, errno);
  }
  const std::size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  output_file_detail::remove_stale(folder, name);
  std::string tmp;
  const int fd = output_file_detail::create_beside(folder, name, tmp);
  if (fd < 0) return output_file_detail::io_error("cannot create a temporary file beside", path, errno);
  const bool written = output_file_detail::write_all(fd, data, size) && (!sync || ::fsync(fd) == 0);
  int err = errno;
  const bool closed = ::close(fd) == 0;
  if (written && !closed) err = errno;
  if (written && closed && ::rename(tmp.c_str(), path.c_str()) == 0) {
    if (sync) {
      const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dir >= 0) {
        ::fsync(dir);  // best effort: some file systems refuse a folder's fsync
        ::close(dir);
      }
    }
    return Status();
  }
  if (written && closed) err = errno;
  ::unlink(tmp.c_str());
  return output_file_detail::io_error("cannot write", path, err);
}

}  // namespace fatpte

#endif  // FATPTE_SRC_COMMON_OUTPUT_FILE_HPP_
