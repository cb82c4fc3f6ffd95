// The verified manifest root (manifest_view.hpp).
#include "manifest_view.hpp"

#include <mutex>
#include <string>

#include "manifest_verify.hpp"

namespace fatpte {

namespace M = nfat::manifest;

namespace detail {

// The once-per-container memo of the manifest's checks (fatpte.hpp, Container).
struct ContainerMemo {
  static Status checked(const Container& c);
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

}  // namespace

Status detail::ContainerMemo::checked(const Container& c) {
  std::lock_guard<std::mutex> lock(c.manifest_mutex_);
  if (!c.manifest_checked_) {
    c.manifest_status_ = check_manifest(c);
    c.manifest_checked_ = true;
  }
  return c.manifest_status_;
}

Result<const M::Manifest*> verified_manifest(const Container& c) {
  const Header& h = c.header();
  if (h.version != format::kVersion2 || h.manifest_size == 0) return static_cast<const M::Manifest*>(nullptr);
  FATPTE_RETURN_IF_ERROR(detail::ContainerMemo::checked(c));
  return M::GetManifest(c.bytes().data + h.manifest_offset);
}

const M::Entry* manifest_entry(const M::Manifest* manifest, const std::string& name) {
  if (manifest == nullptr || manifest->entries() == nullptr) return nullptr;
  for (const M::Entry* e : *manifest->entries()) {
    if (e->name() != nullptr && e->name()->str() == name) return e;
  }
  return nullptr;
}

}  // namespace fatpte
