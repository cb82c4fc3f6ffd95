// The content pass, mirroring fatpte/container/integrity.py: padding between regions, the manifest's
// checksum and identifier, every payload's checksum and kind, every segment's checksum. It runs
// only over a container that passed the structural pass, so every range it reads is in bounds.
#include <cinttypes>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "common/bytes.hpp"
#include "common/text.hpp"
#include "fatpte/container.hpp"
#include "fatpte/crc32c.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"
#include "manifest/rules.hpp"

namespace fatpte {

namespace {

namespace F = format;

Status check_padding(Bytes buf, const Structure& st) {
  std::set<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (const Region& r : st.regions) {
    if (r.end > r.start) spans.insert({r.start, r.end});
  }
  const std::uint64_t total = st.header.container_size;
  spans.insert({total, total});
  std::uint64_t reach = 0;
  for (const auto& span : spans) {
    if (span.first > reach) {
      for (std::uint64_t at = reach; at < span.first; ++at) {
        FATPTE_CHECK(buf.data[at] == 0, Error::PADDING_NOT_ZERO, at, "",
                     "byte %#" PRIx64 " is 0x%02x; it lies in the padding %#" PRIx64 "..%#" PRIx64
                     " between regions, which must be zero",
                     at, buf.data[at], reach, span.first);
      }
    }
    if (span.second > reach) reach = span.second;
  }
  return Status();
}

Status check_manifest(Bytes buf, const Structure& st) {
  const Header& h = st.header;
  const std::uint8_t* m = buf.data + h.manifest_offset;
  const std::uint32_t actual = crc32c(m, h.manifest_size);
  FATPTE_CHECK(actual == h.manifest_checksum, Error::MANIFEST_CHECKSUM_MISMATCH,
               F::kV2Header_manifest_checksum_offset, "header.manifest_checksum",
               "the manifest (%#" PRIx64 "..%#" PRIx64 ") has CRC32C %08x, but manifest_checksum says %08x",
               h.manifest_offset, h.manifest_offset + h.manifest_size, actual, h.manifest_checksum);
  const bool ident_ok = h.manifest_size >= 8 &&
                        std::memcmp(m + 4, F::kManifestIdentifier, F::kManifestIdentifierSize) == 0;
  if (!ident_ok) {
    const std::string got = h.manifest_size >= 8 ? detail::escape_bytes(m + 4, 4) : std::string("''");
    return fail(Error::BAD_MANIFEST_IDENTIFIER, h.manifest_offset + 4, "manifest",
                "the manifest's bytes 4..8 are %s, not the identifier 'NFMF'", got.c_str());
  }
  return Status();
}

std::string entry_path(std::uint32_t i, const char* field) {
  return "entries[" + std::to_string(i) + "]." + field;
}

// The payload's CRC32C against its entry (`actual` computed by the caller), then its kind.
Status payload_status(Bytes buf, const Header& h, const Entry& e, std::uint32_t actual) {
  const std::uint64_t base = std::uint64_t{h.header_size} + std::uint64_t{e.index} * h.entry_size;
  FATPTE_CHECK(actual == e.checksum, Error::PAYLOAD_CHECKSUM_MISMATCH, base + F::kV2Entry_checksum_offset,
               entry_path(e.index, "checksum"),
               "payload of '%s' (%#" PRIx64 "..%#" PRIx64 ") has CRC32C %08x, but its entry says %08x: the "
               "payload bytes were altered or damaged",
               e.name.c_str(), e.offset, e.end(), actual, e.checksum);
  static const std::uint8_t kZero[4] = {0, 0, 0, 0};
  if (std::memcmp(e.payload_kind.data(), kZero, 4) != 0) {
    const bool same = e.size >= 8 && std::memcmp(buf.data + e.offset + 4, e.payload_kind.data(), 4) == 0;
    if (!same) {
      const std::string want = detail::escape_bytes(e.payload_kind.data(), 4);
      const std::string got = e.size >= 8 ? detail::escape_bytes(buf.data + e.offset + 4, 4) : "''";
      return fail(Error::PAYLOAD_KIND_MISMATCH, base + F::kV2Entry_payload_kind_offset,
                  entry_path(e.index, "payload_kind"),
                  "entry '%s' says its payload kind is %s, but the payload's bytes 4..8 are %s", e.name.c_str(),
                  want.c_str(), got.c_str());
    }
  }
  return Status();
}

Status check_payloads(Bytes buf, const Structure& st) {
  // A payload shared by several entries is hashed once.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint32_t> computed;
  for (const Entry& e : st.entries) {
    if (!e.has_checksum) continue;
    const auto key = std::make_pair(e.offset, e.size);
    auto it = computed.find(key);
    if (it == computed.end()) it = computed.emplace(key, crc32c(buf.data + e.offset, e.size)).first;
    FATPTE_RETURN_IF_ERROR(payload_status(buf, st.header, e, it->second));
  }
  return Status();
}

Status check_segments(Bytes buf, const Structure& st) {
  for (const Segment& s : st.segments) FATPTE_RETURN_IF_ERROR(check_segment_integrity(buf, st.header, s));
  return Status();
}

Status check_signature_region(Bytes buf, const Structure& st) {
  const Header& h = st.header;
  const std::uint32_t actual = crc32c(buf.data + h.signature_offset, h.signature_size);
  FATPTE_CHECK(actual == h.signature_checksum, Error::SIGNATURE_CHECKSUM_MISMATCH,
               F::kSignatureSlotOffset + F::kV2SignatureSlot_signature_checksum_offset, "header.signature_checksum",
               "the signature region (%#" PRIx64 "..%#" PRIx64 ") has CRC32C %08x, but signature_checksum says %08x",
               h.signature_offset, h.signature_offset + h.signature_size, actual, h.signature_checksum);
  return Status();
}

}  // namespace

Status check_payload_integrity(Bytes buf, const Header& h, const Entry& e) {
  if (!e.has_checksum) return Status();
  return payload_status(buf, h, e, crc32c(buf.data + e.offset, e.size));
}

Status check_segment_integrity(Bytes buf, const Header& h, const Segment& s) {
  const std::uint64_t base = std::uint64_t{h.header_size} + std::uint64_t{h.entry_count} * h.entry_size;
  const std::uint32_t actual = crc32c(buf.data + s.offset, s.size);
  FATPTE_CHECK(actual == s.checksum, Error::SEGMENT_CHECKSUM_MISMATCH,
               base + std::uint64_t{s.index} * h.segment_entry_size + F::kV2Segment_checksum_offset,
               "segments[" + std::to_string(s.index) + "].checksum",
               "segment %u (%#" PRIx64 "..%#" PRIx64 ") has CRC32C %08x, but its entry says %08x", s.index,
               s.offset, s.end(), actual, s.checksum);
  return Status();
}

Status check_integrity(Bytes buf, const Structure& st) {
  if (st.header.version != F::kVersion2) return Status();
  FATPTE_RETURN_IF_ERROR(check_padding(buf, st));
  if (st.manifest_placed) FATPTE_RETURN_IF_ERROR(check_manifest(buf, st));
  FATPTE_RETURN_IF_ERROR(check_payloads(buf, st));
  FATPTE_RETURN_IF_ERROR(check_segments(buf, st));
  if (st.signature_placed) FATPTE_RETURN_IF_ERROR(check_signature_region(buf, st));
  // Last in the canonical order: the manifest's own rules and its consistency with the tables.
  FATPTE_RETURN_IF_ERROR(check_manifest_contents(buf, st));
  return Status();
}

Status validate_buffer(Bytes buf) {
  Result<Structure> st = read_structure(buf);
  if (!st.ok()) return st.error();
  return check_integrity(buf, st.value());
}

}  // namespace fatpte
