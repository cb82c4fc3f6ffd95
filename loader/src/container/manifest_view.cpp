// The verified manifest and its per-entry index (container/manifest_view.hpp).
#include "container/manifest_view.hpp"

#include <algorithm>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "fatpte/crc32c.hpp"
#include "manifest/rules.hpp"

namespace fatpte {

namespace M = nfat::manifest;

namespace detail {

// The once-per-container memo of the manifest's checks (container.hpp, Container).
struct ContainerMemo {
  static Status checked(const Container& c);
  static const ManifestIndex* index(const Container& c) { return c.manifest_index_.get(); }
};

}  // namespace detail

namespace {

Status check_manifest(const Container& c) {
  const Header& h = c.header();
  const std::uint8_t* m = c.bytes().data + h.manifest_offset;
  const std::uint32_t actual = crc32c(m, static_cast<std::size_t>(h.manifest_size));
  FATPTE_CHECK(actual == h.manifest_checksum, Error::MANIFEST_CHECKSUM_MISMATCH,
               format::kV2Header_manifest_checksum_offset, "header.manifest_checksum",
               "the manifest has CRC32C %08x, but manifest_checksum says %08x", actual, h.manifest_checksum);
  FATPTE_CHECK(h.manifest_size >= 8 && M::ManifestBufferHasIdentifier(m), Error::BAD_MANIFEST_IDENTIFIER,
               h.manifest_offset + 4, "manifest", "the manifest's bytes 4..8 are not the identifier 'NFMF'");
  // Every rule of specs/nfat-manifest.md section 2 (element offsets, UTF-8, the work budget, the
  // value rules), not only what flatbuffers::Verifier checks: the accessors then follow checked offsets.
  return detail::check_manifest_buffer(m, h.manifest_size, h.manifest_offset);
}

// Table entries and manifest records matched by name in O(n log n): both sides sorted by name.
std::unique_ptr<detail::ManifestIndex> build_index(const Container& c, const M::Manifest* root) {
  auto index = std::make_unique<detail::ManifestIndex>();
  index->by_entry.assign(c.entries().size(), nullptr);
  if (root == nullptr || root->entries() == nullptr) return index;
  std::vector<const M::Entry*> records(root->entries()->begin(), root->entries()->end());
  const auto name = [](const M::Entry* r) { return std::string_view(r->name()->c_str(), r->name()->size()); };
  std::sort(records.begin(), records.end(), [&](const M::Entry* a, const M::Entry* b) { return name(a) < name(b); });
  for (const Entry& e : c.entries()) {
    const auto at = std::lower_bound(records.begin(), records.end(), std::string_view(e.name),
                                     [&](const M::Entry* r, std::string_view n) { return name(r) < n; });
    if (at != records.end() && name(*at) == e.name) index->by_entry[e.index] = *at;
  }
  return index;
}

}  // namespace

Status detail::ContainerMemo::checked(const Container& c) {
  std::lock_guard<std::mutex> lock(c.manifest_mutex_);
  if (!c.manifest_checked_) {
    c.manifest_status_ = check_manifest(c);
    c.manifest_checked_ = true;
  }
  if (c.manifest_status_.ok() && c.manifest_index_ == nullptr) {
    c.manifest_index_ = build_index(c, M::GetManifest(c.bytes().data + c.header().manifest_offset));
  }
  return c.manifest_status_;
}

Result<ManifestView> manifest_view(const Container& c) {
  const Header& h = c.header();
  if (h.version != format::kVersion2 || h.manifest_size == 0) return ManifestView();
  FATPTE_RETURN_IF_ERROR(detail::ContainerMemo::checked(c));
  return ManifestView(M::GetManifest(c.bytes().data + h.manifest_offset), detail::ContainerMemo::index(c));
}

}  // namespace fatpte
