// The structural pass, mirroring fatpte/format/structure.py rule for rule and in the same order
// (specs/nfat.md section 6): header, then every table record, then the placement of every
// region. It reads the header and the tables only, never a payload, segment or manifest byte.
// It stops at the first error, which is the first error Python's pass appends.
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.hpp"
#include "common/text.hpp"
#include "fatpte/crc32c.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace {

namespace F = format;
using detail::in_bounds;
using detail::read_i32le;
using detail::read_u32le;
using detail::read_u64le;

Status short_header(std::uint64_t n, std::uint64_t need, const char* what) {
  return fail(Error::TRUNCATED_HEADER, n, std::string("header.") + what,
              "the file is %" PRIu64 " bytes long and ends inside the header, which needs at least %" PRIu64
              " bytes (reading header.%s)",
              n, need, what);
}

Status too_many(Error code, std::uint64_t count, std::uint64_t limit, std::uint64_t at, const char* name) {
  return fail(code, at, std::string("header.") + name, "%s is %" PRIu64 ", above the limit of %" PRIu64, name,
              count, limit);
}

Status table_past_end(std::uint64_t end, std::uint64_t total, const std::string& what) {
  return fail(Error::TABLE_OUT_OF_BOUNDS, F::kV2Header_entry_count_offset, "header.entry_count",
              "the header and tables (%s) end at %#" PRIx64 ", past the end of the container at %#" PRIx64,
              what.c_str(), end, total);
}

bool valid_alignment(std::uint64_t v) {
  return detail::is_power_of_two(v) && v >= F::kMinAlignment && v <= F::kMaxAlignment;
}

std::string path(const char* table, std::uint64_t i, const char* field) {
  return std::string(table) + "[" + std::to_string(i) + "]." + field;
}

// ---- version 1 ----

Result<Structure> read_v1(Bytes buf) {
  const std::uint64_t n = buf.size;
  const std::uint8_t* p = buf.data;
  if (n < F::kV1HeaderSize) return short_header(n, F::kV1HeaderSize, "entry_count");
  const std::uint32_t count = read_u32le(p + F::kV1Header_entry_count_offset);
  const std::uint64_t count_at = F::kV1Header_entry_count_offset;
  FATPTE_CHECK(count != 0, Error::NO_ENTRIES, count_at, "header.entry_count",
               "entry_count is 0: the container holds nothing");
  if (count > F::kMaxEntries) return too_many(Error::TOO_MANY_ENTRIES, count, F::kMaxEntries, count_at, "entry_count");
  const std::uint64_t data_start = F::kV1HeaderSize + std::uint64_t{count} * F::kV1EntrySize;
  if (data_start > n) {
    return fail(Error::TABLE_OUT_OF_BOUNDS, count_at, "header.entry_count",
                "the header and tables (%u entries of 48 bytes) end at %#" PRIx64
                ", past the end of the container at %#" PRIx64,
                count, data_start, n);
  }
  Structure st;
  Header& h = st.header;
  h.version = 1;
  h.header_size = F::kV1HeaderSize;
  h.entry_size = F::kV1EntrySize;
  h.entry_count = count;
  h.container_size = n;
  h.table_end = data_start;
  const std::uint64_t data_len = n - data_start;
  st.entries.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t base = F::kV1HeaderSize + std::uint64_t{i} * F::kV1EntrySize;
    const std::uint8_t* raw = p + base + F::kV1Entry_backend_id_offset;
    const std::size_t len = detail::text_length(raw, F::kV1Entry_backend_id_size);
    bool bad = len == 0;
    for (std::size_t k = 0; k < len && !bad; ++k) bad = raw[k] > 0x7F;
    std::string ident = detail::decode_text(raw, F::kV1Entry_backend_id_size);
    if (bad) {
      // A non-zero byte after the NUL is only a warning (V1_ID_PADDING_NOT_ZERO), never first_error.
      return fail(Error::V1_BAD_ID, base, path("entries", i, "backend_id"), "backend id '%s' %s", ident.c_str(),
                  len == 0 ? "is empty" : "has bytes outside ASCII");
    }
    const std::uint64_t rel = read_u64le(p + base + F::kV1Entry_offset_offset);
    const std::uint64_t size = read_u64le(p + base + F::kV1Entry_size_offset);
    if (!in_bounds(rel, size, data_len)) {
      return fail(Error::PAYLOAD_OUT_OF_BOUNDS, base + F::kV1Entry_size_offset, path("entries", i, "size"),
                  "payload of '%s' spans data offsets %#" PRIx64 " + %#" PRIx64 " bytes but the data section "
                  "holds %#" PRIx64 " bytes (file ends at %#" PRIx64 ")",
                  ident.c_str(), rel, size, data_len, n);
    }
    Entry e;
    e.index = i;
    e.name = ident;
    e.backend_id = std::move(ident);
    e.offset = data_start + rel;
    e.size = size;
    e.alignment = 1;
    st.entries.push_back(std::move(e));
  }
  // Overlaps, gaps and duplicate ids are warnings in version 1: they never make first_error.
  return st;
}

// ---- version 2 ----

Status record_size(const char* name, Error code, std::uint32_t value, std::uint32_t minimum, std::uint64_t at) {
  const std::string field = std::string("header.") + name;
  FATPTE_CHECK(value >= minimum, code, at, field,
               "%s is %u, below the %u bytes of the fields this revision defines", name, value, minimum);
  FATPTE_CHECK(value <= F::kMaxRecordSize, code, at, field, "%s is %u, above the limit of %u", name, value,
               F::kMaxRecordSize);
  FATPTE_CHECK(value % F::kRecordSizeMultiple == 0, code, at, field, "%s is %u, not a multiple of %u", name, value,
               F::kRecordSizeMultiple);
  return Status();
}

Status read_v2_entries(Bytes buf, Structure& st) {
  const Header& h = st.header;
  const std::uint64_t total = h.container_size;
  st.entries.reserve(h.entry_count);
  for (std::uint32_t i = 0; i < h.entry_count; ++i) {
    const std::uint64_t base = std::uint64_t{h.header_size} + std::uint64_t{i} * h.entry_size;
    const std::uint8_t* r = buf.data + base;
    Entry e;
    e.index = i;
    e.name = detail::decode_text(r + F::kV2Entry_name_offset, F::kV2Entry_name_size);
    e.backend_id = detail::decode_text(r + F::kV2Entry_backend_id_offset, F::kV2Entry_backend_id_size);
    e.offset = read_u64le(r + F::kV2Entry_offset_offset);
    e.size = read_u64le(r + F::kV2Entry_size_offset);
    std::copy(r + F::kV2Entry_payload_kind_offset, r + F::kV2Entry_payload_kind_offset + 4, e.payload_kind.begin());
    e.alignment = read_u32le(r + F::kV2Entry_alignment_offset);
    e.has_checksum = true;
    e.checksum = read_u32le(r + F::kV2Entry_checksum_offset);
    e.priority = read_i32le(r + F::kV2Entry_priority_offset);
    e.flags = read_u32le(r + F::kV2Entry_flags_offset);
    const std::uint32_t reserved = read_u32le(r + F::kV2Entry_reserved_offset);
    const char* nm = e.name.c_str();

    FATPTE_CHECK(reserved == 0, Error::RESERVED_NOT_ZERO, base + F::kV2Entry_reserved_offset,
                 path("entries", i, "reserved"), "entry '%s': reserved is %#x, must be 0", nm, reserved);
    const std::uint32_t unknown = e.flags & ~F::kEntryFlagsKnown;
    FATPTE_CHECK(unknown == 0, Error::UNKNOWN_ENTRY_FLAGS, base + F::kV2Entry_flags_offset,
                 path("entries", i, "flags"), "entry '%s': flags sets bits %#x, which this revision does not define",
                 nm, unknown);
    std::string why = detail::id_problem(r + F::kV2Entry_name_offset, F::kV2Entry_name_size);
    FATPTE_CHECK(why.empty(), Error::BAD_NAME, base + F::kV2Entry_name_offset, path("entries", i, "name"),
                 "entry name '%s' %s", nm, why.c_str());
    why = detail::id_problem(r + F::kV2Entry_backend_id_offset, F::kV2Entry_backend_id_size);
    FATPTE_CHECK(why.empty(), Error::BAD_BACKEND_ID, base + F::kV2Entry_backend_id_offset,
                 path("entries", i, "backend_id"), "entry '%s': backend id '%s' %s", nm, e.backend_id.c_str(),
                 why.c_str());
    FATPTE_CHECK(valid_alignment(e.alignment), Error::BAD_ALIGNMENT, base + F::kV2Entry_alignment_offset,
                 path("entries", i, "alignment"), "entry '%s': alignment %u is not a power of two from %u to %u", nm,
                 e.alignment, F::kMinAlignment, F::kMaxAlignment);
    FATPTE_CHECK(in_bounds(e.offset, e.size, total), Error::PAYLOAD_OUT_OF_BOUNDS, base + F::kV2Entry_size_offset,
                 path("entries", i, "size"),
                 "payload of '%s' (offset %#" PRIx64 ", size %#" PRIx64 ") ends past the end of the container at "
                 "%#" PRIx64,
                 nm, e.offset, e.size, total);
    FATPTE_CHECK(e.offset % e.alignment == 0, Error::MISALIGNED_PAYLOAD, base + F::kV2Entry_offset_offset,
                 path("entries", i, "offset"), "payload of '%s' starts at %#" PRIx64
                 ", not a multiple of its alignment %u", nm, e.offset, e.alignment);
    Region reg;
    reg.start = e.offset;
    reg.end = e.end();
    reg.label = "payload of '" + e.name + "'";
    reg.field = path("entries", i, "offset");
    reg.field_offset = base + F::kV2Entry_offset_offset;
    reg.rank = 1 + std::uint64_t{i};
    reg.is_entry = true;
    st.regions.push_back(std::move(reg));
    st.entries.push_back(std::move(e));
  }
  return Status();
}

Status read_v2_segments(Bytes buf, Structure& st, std::uint64_t segments_at) {
  const Header& h = st.header;
  const std::uint64_t total = h.container_size;
  st.segments.reserve(h.segment_count);
  for (std::uint32_t i = 0; i < h.segment_count; ++i) {
    const std::uint64_t base = segments_at + std::uint64_t{i} * h.segment_entry_size;
    const std::uint8_t* r = buf.data + base;
    Segment s;
    s.index = i;
    s.offset = read_u64le(r + F::kV2Segment_offset_offset);
    s.size = read_u64le(r + F::kV2Segment_size_offset);
    s.alignment = read_u32le(r + F::kV2Segment_alignment_offset);
    s.checksum = read_u32le(r + F::kV2Segment_checksum_offset);
    s.flags = read_u32le(r + F::kV2Segment_flags_offset);
    const std::uint32_t reserved = read_u32le(r + F::kV2Segment_reserved_offset);
    FATPTE_CHECK(reserved == 0, Error::RESERVED_NOT_ZERO, base + F::kV2Segment_reserved_offset,
                 path("segments", i, "reserved"), "segment %u: reserved is %#x, must be 0", i, reserved);
    const std::uint32_t unknown = s.flags & ~F::kSegmentFlagsKnown;
    FATPTE_CHECK(unknown == 0, Error::UNKNOWN_SEGMENT_FLAGS, base + F::kV2Segment_flags_offset,
                 path("segments", i, "flags"), "segment %u: flags sets bits %#x, which this revision does not define",
                 i, unknown);
    FATPTE_CHECK(valid_alignment(s.alignment), Error::BAD_SEGMENT_ALIGNMENT, base + F::kV2Segment_alignment_offset,
                 path("segments", i, "alignment"), "segment %u: alignment %u is not a power of two from %u to %u", i,
                 s.alignment, F::kMinAlignment, F::kMaxAlignment);
    FATPTE_CHECK(in_bounds(s.offset, s.size, total), Error::SEGMENT_OUT_OF_BOUNDS, base + F::kV2Segment_size_offset,
                 path("segments", i, "size"),
                 "segment %u (offset %#" PRIx64 ", size %#" PRIx64 ") ends past the end of the container at "
                 "%#" PRIx64, i, s.offset, s.size, total);
    FATPTE_CHECK(s.offset % s.alignment == 0, Error::MISALIGNED_SEGMENT, base + F::kV2Segment_offset_offset,
                 path("segments", i, "offset"), "segment %u starts at %#" PRIx64 ", not a multiple of its alignment %u",
                 i, s.offset, s.alignment);
    Region reg;
    reg.start = s.offset;
    reg.end = s.end();
    reg.label = "segment " + std::to_string(i);
    reg.field = path("segments", i, "offset");
    reg.field_offset = base + F::kV2Segment_offset_offset;
    reg.rank = 1 + std::uint64_t{F::kMaxEntries} + i;
    st.regions.push_back(std::move(reg));
    st.segments.push_back(std::move(s));
  }
  return Status();
}

Status check_manifest_fields(Structure& st) {
  const Header& h = st.header;
  const std::uint64_t off = h.manifest_offset, size = h.manifest_size;
  if (size == 0) {
    if (off != 0 || h.manifest_checksum != 0) {
      const bool by_off = off != 0;
      return fail(Error::ABSENT_MANIFEST_NOT_ZERO,
                  by_off ? F::kV2Header_manifest_offset_offset : F::kV2Header_manifest_checksum_offset,
                  by_off ? "header.manifest_offset" : "header.manifest_checksum",
                  "manifest_size is 0 (no manifest) but manifest_offset is %#" PRIx64
                  " and manifest_checksum is %08x; both must be 0",
                  off, h.manifest_checksum);
    }
    return Status();
  }
  if (size > F::kMaxManifestSize) {
    return too_many(Error::MANIFEST_TOO_LARGE, size, F::kMaxManifestSize, F::kV2Header_manifest_size_offset,
                    "manifest_size");
  }
  FATPTE_CHECK(in_bounds(off, size, h.container_size), Error::MANIFEST_OUT_OF_BOUNDS,
               F::kV2Header_manifest_size_offset, "header.manifest_size",
               "the manifest (offset %#" PRIx64 ", size %#" PRIx64 ") ends past the end of the container at %#" PRIx64,
               off, size, h.container_size);
  FATPTE_CHECK(off % F::kManifestAlignment == 0, Error::MISALIGNED_MANIFEST, F::kV2Header_manifest_offset_offset,
               "header.manifest_offset", "manifest_offset %#" PRIx64 " is not a multiple of %u", off,
               F::kManifestAlignment);
  st.manifest_placed = true;
  Region reg;
  reg.start = off;
  reg.end = off + size;
  reg.label = "manifest";
  reg.field = "header.manifest_offset";
  reg.field_offset = F::kV2Header_manifest_offset_offset;
  reg.rank = 1 + std::uint64_t{F::kMaxEntries} + F::kMaxSegments;
  st.regions.push_back(std::move(reg));
  return Status();
}

// The signature slot (specs/nfat.md 4.9), only in a header long enough to hold it.
Status check_signature_fields(Structure& st) {
  const Header& h = st.header;
  if (h.header_size < F::kSignedHeaderSize) return Status();
  constexpr std::uint64_t kOffsetAt = F::kSignatureSlotOffset + F::kV2SignatureSlot_signature_offset_offset;
  constexpr std::uint64_t kSizeAt = F::kSignatureSlotOffset + F::kV2SignatureSlot_signature_size_offset;
  constexpr std::uint64_t kChecksumAt = F::kSignatureSlotOffset + F::kV2SignatureSlot_signature_checksum_offset;
  const std::uint64_t off = h.signature_offset, size = h.signature_size;
  if (size == 0) {
    if (off != 0 || h.signature_checksum != 0) {
      const bool by_off = off != 0;
      return fail(Error::ABSENT_SIGNATURE_NOT_ZERO, by_off ? kOffsetAt : kChecksumAt,
                  by_off ? "header.signature_offset" : "header.signature_checksum",
                  "signature_size is 0 (no signature) but signature_offset is %#" PRIx64
                  " and signature_checksum is %08x; both must be 0",
                  off, h.signature_checksum);
    }
    return Status();
  }
  if (size > F::kMaxSignatureSize) {
    return too_many(Error::SIGNATURE_TOO_LARGE, size, F::kMaxSignatureSize, kSizeAt, "signature_size");
  }
  FATPTE_CHECK(in_bounds(off, size, h.container_size), Error::SIGNATURE_OUT_OF_BOUNDS, kSizeAt,
               "header.signature_size",
               "the signature region (offset %#" PRIx64 ", size %#" PRIx64 ") ends past the end of the container at %#" PRIx64,
               off, size, h.container_size);
  FATPTE_CHECK(off % F::kSignatureAlignment == 0, Error::MISALIGNED_SIGNATURE, kOffsetAt, "header.signature_offset",
               "signature_offset %#" PRIx64 " is not a multiple of %u", off, F::kSignatureAlignment);
  st.signature_placed = true;
  Region reg;
  reg.start = off;
  reg.end = off + size;
  reg.label = "signature";
  reg.field = "header.signature_offset";
  reg.field_offset = kOffsetAt;
  reg.rank = 2 + std::uint64_t{F::kMaxEntries} + F::kMaxSegments;
  st.regions.push_back(std::move(reg));
  return Status();
}

// By sorting (name, index) rather than hashing the names: the file chooses them, and a string
// hash with a fixed seed lets it choose names that share one bucket (up to 65,536 of them, n^2 / 2
// comparisons). Reports what fatpte/format/structure.py's pass reports first: the first entry in
// table order whose name an earlier entry has, with that earlier entry.
Status check_duplicate_names(const Structure& st) {
  std::vector<const Entry*> by_name;
  by_name.reserve(st.entries.size());
  for (const Entry& e : st.entries) by_name.push_back(&e);
  std::sort(by_name.begin(), by_name.end(), [](const Entry* a, const Entry* b) {
    const int c = a->name.compare(b->name);
    return c != 0 ? c < 0 : a->index < b->index;
  });
  const Entry* repeat = nullptr;  // the earliest second holder of a name
  const Entry* first = nullptr;   // that name's first holder
  for (std::size_t i = 1, group = 0; i < by_name.size(); ++i) {
    if (by_name[i]->name != by_name[group]->name) {
      group = i;
    } else if (i == group + 1 && (repeat == nullptr || by_name[i]->index < repeat->index)) {
      repeat = by_name[i];
      first = by_name[group];
    }
  }
  if (repeat == nullptr) return Status();
  const Header& h = st.header;
  return fail(Error::DUPLICATE_NAME, std::uint64_t{h.header_size} + std::uint64_t{repeat->index} * h.entry_size,
              path("entries", repeat->index, "name"), "entry %u is named '%s', like entry %u; names must be unique",
              repeat->index, repeat->name.c_str(), first->index);
}

Status check_overlaps(const Structure& st) {
  // Entries pointing at exactly the same payload region share it lawfully.
  std::set<std::pair<std::uint64_t, std::uint64_t>> shared;
  std::vector<const Region*> regions;
  regions.reserve(st.regions.size());
  for (const Region& r : st.regions) {
    if (r.start == r.end) continue;
    if (r.is_entry && !shared.insert({r.start, r.end}).second) continue;
    regions.push_back(&r);
  }
  std::sort(regions.begin(), regions.end(), [](const Region* a, const Region* b) {
    // (start, rank): ties go to table order, so the header and tables, which cannot move, are
    // the region others are reported against (structure._check_overlaps).
    if (a->start != b->start) return a->start < b->start;
    return a->rank < b->rank;
  });
  std::uint64_t reach = 0;
  const Region* holder = nullptr;
  for (const Region* r : regions) {
    if (holder != nullptr && r->start < reach) {
      return fail(Error::REGIONS_OVERLAP, r->field_offset, r->field,
                  "the %s (%#" PRIx64 "..%#" PRIx64 ") overlaps the %s (%#" PRIx64 "..%#" PRIx64 ")",
                  r->label.c_str(), r->start, r->end, holder->label.c_str(), holder->start, holder->end);
    }
    if (r->end > reach) {
      reach = r->end;
      holder = r;
    }
  }
  return Status();
}

// The header's fields (section 4.2); the signature slot's when the header holds one (section 4.9).
Header read_v2_header(const std::uint8_t* p) {
  Header h;
  h.version = 2;
  h.header_size = read_u32le(p + F::kV2Header_header_size_offset);
  h.entry_size = read_u32le(p + F::kV2Header_entry_size_offset);
  h.entry_count = read_u32le(p + F::kV2Header_entry_count_offset);
  h.segment_entry_size = read_u32le(p + F::kV2Header_segment_entry_size_offset);
  h.segment_count = read_u32le(p + F::kV2Header_segment_count_offset);
  h.flags = read_u32le(p + F::kV2Header_flags_offset);
  h.container_size = read_u64le(p + F::kV2Header_container_size_offset);
  h.manifest_offset = read_u64le(p + F::kV2Header_manifest_offset_offset);
  h.manifest_size = read_u64le(p + F::kV2Header_manifest_size_offset);
  h.manifest_checksum = read_u32le(p + F::kV2Header_manifest_checksum_offset);
  h.header_checksum = read_u32le(p + F::kV2Header_header_checksum_offset);
  return h;
}

// Section 6.3 steps 2 and 3: container_size is the file's size.
Status check_container_size(const Header& h, std::uint64_t n) {
  const std::uint64_t total = h.container_size;
  FATPTE_CHECK(total <= n, Error::TRUNCATED_CONTAINER, F::kV2Header_container_size_offset, "header.container_size",
               "the header says the container is %" PRIu64 " bytes (%#" PRIx64 ") but the file has %" PRIu64
               " (%#" PRIx64 "): it was cut short, e.g. by an interrupted copy or download",
               total, total, n, n);
  FATPTE_CHECK(total >= n, Error::TRAILING_BYTES, total, "header.container_size",
               "the header says the container is %" PRIu64 " bytes (%#" PRIx64 ") but the file has %" PRIu64
               " (%#" PRIx64 "): %" PRIu64 " bytes follow the container",
               total, total, n, n, n - total);
  return Status();
}

// Section 6.3 steps 4 to 6: the header, entry and segment record sizes.
Status check_record_sizes(const Header& h) {
  FATPTE_RETURN_IF_ERROR(record_size("header_size", Error::BAD_HEADER_SIZE, h.header_size, F::kV2HeaderSize,
                                     F::kV2Header_header_size_offset));
  FATPTE_RETURN_IF_ERROR(record_size("entry_size", Error::BAD_ENTRY_SIZE, h.entry_size, F::kV2EntrySize,
                                     F::kV2Header_entry_size_offset));
  return record_size("segment_entry_size", Error::BAD_SEGMENT_ENTRY_SIZE, h.segment_entry_size, F::kV2SegmentSize,
                     F::kV2Header_segment_entry_size_offset);
}

// Section 6.3 steps 7 to 10: header flags, then the entry and segment counts.
Status check_flags_and_counts(const Header& h) {
  const std::uint32_t unknown = h.flags & ~F::kHeaderFlagsKnown;
  FATPTE_CHECK(unknown == 0, Error::UNKNOWN_HEADER_FLAGS, F::kV2Header_flags_offset, "header.flags",
               "flags sets bits %#x, which this revision does not define; a newer fatpte may read this file",
               unknown);
  FATPTE_CHECK(h.entry_count != 0, Error::NO_ENTRIES, F::kV2Header_entry_count_offset, "header.entry_count",
               "entry_count is 0: the container holds nothing");
  if (h.entry_count > F::kMaxEntries) {
    return too_many(Error::TOO_MANY_ENTRIES, h.entry_count, F::kMaxEntries, F::kV2Header_entry_count_offset,
                    "entry_count");
  }
  if (h.segment_count > F::kMaxSegments) {
    return too_many(Error::TOO_MANY_SEGMENTS, h.segment_count, F::kMaxSegments, F::kV2Header_segment_count_offset,
                    "segment_count");
  }
  return Status();
}

// Section 6.3 step 11: the tables end inside the container. Bounded by the limits of steps 4 to
// 10 (4096 * 65536 + 4096 * 2^20 + 4096), so no overflow.
Status check_table_end(const Header& h, std::uint64_t& table_end) {
  const std::uint64_t segments_at = std::uint64_t{h.header_size} + std::uint64_t{h.entry_count} * h.entry_size;
  table_end = segments_at + std::uint64_t{h.segment_count} * h.segment_entry_size;
  if (table_end > h.container_size) {
    return table_past_end(table_end, h.container_size,
                          std::to_string(h.entry_count) + " entries and " + std::to_string(h.segment_count) +
                              " segments");
  }
  return Status();
}

// Section 6.3 step 12: the CRC32C of [0, table_end), header_checksum's bytes taken as zero.
Status check_header_checksum(const std::uint8_t* p, const Header& h, std::uint64_t table_end) {
  const std::uint8_t zero[4] = {0, 0, 0, 0};
  std::uint32_t actual = crc32c(p, F::kHeaderChecksumOffset);
  actual = crc32c(zero, 4, actual);
  actual = crc32c(p + F::kHeaderChecksumOffset + 4, table_end - (F::kHeaderChecksumOffset + 4), actual);
  FATPTE_CHECK(actual == h.header_checksum, Error::HEADER_CHECKSUM_MISMATCH, F::kHeaderChecksumOffset,
               "header.header_checksum",
               "the header and tables (bytes 0..%#" PRIx64 ") have CRC32C %08x, but header_checksum says %08x: "
               "the header or a table entry was altered or damaged",
               table_end, actual, h.header_checksum);
  return Status();
}

// The signature slot's fields (section 4.9), read when the header is long enough to hold it;
// step 29 checks them.
void read_signature_slot(const std::uint8_t* p, Header& h) {
  if (h.header_size < F::kSignedHeaderSize) return;
  const std::uint8_t* slot = p + F::kSignatureSlotOffset;
  h.signature_offset = read_u64le(slot + F::kV2SignatureSlot_signature_offset_offset);
  h.signature_size = read_u32le(slot + F::kV2SignatureSlot_signature_size_offset);
  h.signature_checksum = read_u32le(slot + F::kV2SignatureSlot_signature_checksum_offset);
}

// After step 12: the header and tables [0, table_end) are the first placed region.
Region header_and_tables(std::uint64_t table_end) {
  Region head;
  head.start = 0;
  head.end = table_end;
  head.label = "header and tables";
  head.field = "header.header_size";
  head.field_offset = F::kV2Header_header_size_offset;
  head.rank = 0;
  return head;
}

// Section 6.3, the version 2 structural pass: a driver over its steps, in order.
Result<Structure> read_v2(Bytes buf) {
  const std::uint64_t n = buf.size;
  const std::uint8_t* p = buf.data;
  if (n < F::kV2HeaderSize) return short_header(n, F::kV2HeaderSize, "container_size");  // step 1
  Structure st;
  Header& h = st.header;
  h = read_v2_header(p);
  FATPTE_RETURN_IF_ERROR(check_container_size(h, n));  // steps 2, 3
  FATPTE_RETURN_IF_ERROR(check_record_sizes(h));        // steps 4 to 6
  FATPTE_RETURN_IF_ERROR(check_flags_and_counts(h));    // steps 7 to 10
  std::uint64_t table_end = 0;
  FATPTE_RETURN_IF_ERROR(check_table_end(h, table_end));             // step 11
  FATPTE_RETURN_IF_ERROR(check_header_checksum(p, h, table_end));  // step 12
  h.table_end = table_end;
  read_signature_slot(p, h);
  st.regions.push_back(header_and_tables(table_end));
  const std::uint64_t segments_at = std::uint64_t{h.header_size} + std::uint64_t{h.entry_count} * h.entry_size;
  FATPTE_RETURN_IF_ERROR(read_v2_entries(buf, st));                // steps 13 to 20
  FATPTE_RETURN_IF_ERROR(read_v2_segments(buf, st, segments_at));  // steps 21 to 26
  FATPTE_RETURN_IF_ERROR(check_manifest_fields(st));               // steps 27, 28
  FATPTE_RETURN_IF_ERROR(check_signature_fields(st));              // step 29
  FATPTE_RETURN_IF_ERROR(check_duplicate_names(st));               // step 30
  FATPTE_RETURN_IF_ERROR(check_overlaps(st));                      // step 31
  return st;
}

}  // namespace

Result<Structure> read_structure(Bytes buf) {
  const std::uint64_t n = buf.size;
  if (n < F::kMagicSize) return short_header(n, F::kMagicSize, "magic");
  if (std::memcmp(buf.data, F::kMagic, F::kMagicSize) != 0) {
    std::string got = detail::escape_bytes(buf.data, F::kMagicSize);
    return fail(Error::BAD_MAGIC, 0, "header.magic",
                "the file starts with %s, not 'NFAT': this is not an NFAT container", got.c_str());
  }
  if (n < F::kPreambleSize) return short_header(n, F::kPreambleSize, "version");
  const std::uint32_t version = read_u32le(buf.data + F::kV2Header_version_offset);
  if (version == F::kVersion1) return read_v1(buf);
  if (version == F::kVersion2) return read_v2(buf);
  return fail(Error::UNSUPPORTED_VERSION, F::kV2Header_version_offset, "header.version",
              "version %u is not supported (this reader knows 1 and 2)", version);
}

}  // namespace fatpte
