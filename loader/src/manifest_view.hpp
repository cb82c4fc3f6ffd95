// Reading fields of a container's manifest: the root, after the manifest's CRC32C, its
// identifier and every rule of specs/nfat-manifest.md section 2 passed (manifest_verify.hpp), so selection
// and loading read nothing of a manifest that failed them.
#ifndef FATPTE_SRC_MANIFEST_VIEW_HPP_
#define FATPTE_SRC_MANIFEST_VIEW_HPP_

#include <cstdint>
#include <string>

#include "fatpte/fatpte.hpp"
#include "nfat_manifest_generated.h"

namespace fatpte {

// The manifest of a version 2 container, or nullptr when it has none (version 1, or size 0).
// E0404, E0405 or E0407 when it fails a check.
Result<const nfat::manifest::Manifest*> verified_manifest(const Container& container);

// A dtype a TensorLayout may name (specs/nfat-manifest.md 3.3): the bytes of one element and
// ExecuTorch's ScalarType number; layout_dtype() gives nullptr for another name.
struct LayoutDtype {
  const char* name;
  std::uint64_t bytes;
  std::int8_t scalar_type;
};
const LayoutDtype* layout_dtype(const char* name);

// The first manifest entry named `name` (as Python's Manifest.entry), or nullptr.
const nfat::manifest::Entry* manifest_entry(const nfat::manifest::Manifest* manifest, const std::string& name);

}  // namespace fatpte

#endif  // FATPTE_SRC_MANIFEST_VIEW_HPP_
