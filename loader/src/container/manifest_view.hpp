// A container's manifest as its readers see it (selection, loading, named data, signatures, the
// fat delegate): the root and each table entry's record, after the manifest's CRC32C, its
// identifier and every rule of specs/nfat-manifest.md section 2 passed (manifest/verify.hpp,
// manifest/rules.hpp), checked once per container (fatpte/container.hpp, Container's memo), so
// nothing reads a field of a manifest that failed them. Answers to fatpte/manifest/rules.py's
// reading from a container.
#ifndef FATPTE_SRC_CONTAINER_MANIFEST_VIEW_HPP_
#define FATPTE_SRC_CONTAINER_MANIFEST_VIEW_HPP_

#include <cstdint>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/result.hpp"
#include "nfat_manifest_generated.h"

namespace fatpte {
namespace detail {

// Each table entry's manifest record: the manifest entry of the same name (names are unique in a
// manifest that passed, E0410), found once by sorting, so no reader scans the manifest per entry.
struct ManifestIndex {
  std::vector<const nfat::manifest::Entry*> by_entry;  // per table index; nullptr when none
};

}  // namespace detail

// The verified manifest of a container and the record of each of its entries.
class ManifestView {
 public:
  ManifestView() = default;
  ManifestView(const nfat::manifest::Manifest* root, const detail::ManifestIndex* index) : root_(root), index_(index) {}
  // The root, or nullptr when the container has none (version 1, or size 0).
  const nfat::manifest::Manifest* root() const noexcept { return root_; }
  // The record of table entry `index`, or nullptr when there is no manifest or it has none.
  const nfat::manifest::Entry* entry(std::uint32_t index) const noexcept {
    return index_ != nullptr && index < index_->by_entry.size() ? index_->by_entry[index] : nullptr;
  }

 private:
  const nfat::manifest::Manifest* root_ = nullptr;
  const detail::ManifestIndex* index_ = nullptr;
};

// The one accessor: E0404, E0405 or E0407..E0420 when the manifest fails a check (the same Status
// every time, checked once).
Result<ManifestView> manifest_view(const Container& container);

}  // namespace fatpte

#endif  // FATPTE_SRC_CONTAINER_MANIFEST_VIEW_HPP_
