// The manifest's value and consistency rules (fatpte/manifest/codec.py's decode and
// fatpte/manifest/rules.py): what every reader of a manifest's fields runs first, and what the
// content pass runs last (specs/nfat-manifest.md section 2, then the tables' consistency).
#ifndef FATPTE_SRC_MANIFEST_RULES_HPP_
#define FATPTE_SRC_MANIFEST_RULES_HPP_

#include <cstdint>

#include "fatpte/format.hpp"
#include "fatpte/status.hpp"

namespace fatpte {

// A dtype a TensorLayout may name (specs/nfat-manifest.md 3.3): the bytes of one element and
// ExecuTorch's ScalarType number; layout_dtype() gives nullptr for another name.
struct LayoutDtype {
  const char* name;
  std::uint64_t bytes;
  std::int8_t scalar_type;
};
const LayoutDtype* layout_dtype(const char* name);

// The manifest's part of the content pass over a container that passed the structural pass and
// whose manifest's CRC32C and identifier are sound: section 2 whole, the consistency rules with
// the tables, then the payloads' SHA-256 digests.
Status check_manifest_contents(Bytes buf, const Structure& st);

namespace detail {

// Section 2 of specs/nfat-manifest.md whole: verify_manifest (verify.hpp), then the value rules of
// 2.2 (empty or long names, digests, methods, dims, layouts, the keys' order), as
// fatpte/manifest/codec.py's decode applies them. What every reader of a manifest's fields runs first.
Status check_manifest_buffer(const std::uint8_t* data, std::uint64_t size, std::uint64_t base);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_MANIFEST_RULES_HPP_
