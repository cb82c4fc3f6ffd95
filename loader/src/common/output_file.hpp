// Output files the loader's tools write for users (fatpte-run --save-outputs), by the rule of
// Python's writer (fatpte/fileio/atomic.py): an output replaces only a regular file, and is written
// whole to a temporary file beside it, then renamed into place.
#ifndef FATPTE_SRC_COMMON_OUTPUT_FILE_HPP_
#define FATPTE_SRC_COMMON_OUTPUT_FILE_HPP_

#include <cstddef>
#include <cstdint>
#include <string>

#include "fatpte/status.hpp"

namespace fatpte {

// Write `size` bytes at `data` to `path`. A path that exists and is not a regular file (a symbolic
// link, a directory, a FIFO, a device, a socket) is refused before anything is written: E0811
// NOT_A_FILE naming it and what it is, the link never followed (lstat). Otherwise the bytes go to
// `.NAME.pPID.RANDOM.partial` in the same folder (created with O_CREAT | O_EXCL | O_NOFOLLOW, so
// never through a link nor over another file), which is renamed over `path` once complete: a
// reader sees the old file or the whole new one, and an error leaves neither a partial file nor
// the temporary one (E0801 IO_ERROR naming the path and the system's reason). The file's mode is
// 0666 less the umask, as Python's.
Status write_output_file(const std::string& path, const std::uint8_t* data, std::size_t size);

}  // namespace fatpte

#endif  // FATPTE_SRC_COMMON_OUTPUT_FILE_HPP_
