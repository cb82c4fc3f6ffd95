// What a remembered verdict is keyed by (specs/verdicts.md section 3), computed without loading
// anything: the container's metadata digest, a library file's identity, a text's digest.
#ifndef FATPTE_SRC_MEMORY_IDENTITY_HPP_
#define FATPTE_SRC_MEMORY_IDENTITY_HPP_

#include <string>

#include "fatpte/container.hpp"

namespace fatpte {
namespace memory {

// 64 lowercase hex digits: SHA-256 of `text`.
std::string digest_hex(const std::string& text);
// The same of `first`, `middle` and `second` in turn, without joining them.
std::string digest_hex(const std::string& first, const char* middle, const std::string& second);
// SHA-256 of the container's header and tables: every entry's offset, size and CRC32C, and the
// manifest's offset, size and CRC32C (so its requirements, golden calls and their digest), which
// opening the container checked. Hashing the manifest itself cost 250,000 instructions for a 14 KB
// container, 4% of a whole start. Container::table_digest(): made once per open, so the verdict
// store, a load's receipt and each fallback's receipt share it.
const std::string& container_digest(const Container& container);
// A library file's identity, read from the file without loading it: "build-id:HEX:SIZE" from its
// ELF GNU build-id note (a few hundred bytes read) and its size; "sha256:HEX" of its whole content
// when it has none (another format, or a build without --build-id); "unreadable:REASON" when it
// cannot be read.
std::string library_identity(const std::string& path);
// The same appended to `out` (a runtime fingerprint lists several, built in one string).
void append_library_identity(std::string& out, const std::string& path);

}  // namespace memory
}  // namespace fatpte

#endif  // FATPTE_SRC_MEMORY_IDENTITY_HPP_
