// The manifest verifier: every structural rule of specs/nfat-manifest.md section 2.1, UTF-8, and
// the work budget of section 2.3, checked by walking the buffer along the schema table that
// format_generated.h carries (generated from fatpte/manifest/codec.py), in the order
// fatpte/manifest/codec.py's _Reader checks them, so both report the same first error. Only a
// buffer that passed may be read through flatc's generated accessors: they follow exactly the
// offsets checked here.
#ifndef FATPTE_SRC_MANIFEST_VERIFY_HPP_
#define FATPTE_SRC_MANIFEST_VERIFY_HPP_

#include <cstdint>

#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace detail {

// What a verification walked: the tables it counted and the bytes the manifest expands to,
// each reference counted (specs/nfat-manifest.md 2.1 rule 8 and 2.3).
struct ManifestWork {
  std::uint64_t tables = 0;
  std::uint64_t expanded = 0;
  std::uint64_t objects_decoded = 0;  // distinct tables, vectors and strings actually walked
};

// The manifest of `size` bytes at `data`, whose first byte is at `base` in the file (errors
// are reported at base + position, with the field path fatpte reports). The identifier (bytes
// 4..8) is checked by the caller, as E0405 comes before this in the canonical order.
Status verify_manifest(const std::uint8_t* data, std::uint64_t size, std::uint64_t base,
                       ManifestWork* work = nullptr);

// The most a manifest of `size` bytes may expand to (manifest.work_budget).
std::uint64_t manifest_work_budget(std::uint64_t size) noexcept;

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_MANIFEST_VERIFY_HPP_
