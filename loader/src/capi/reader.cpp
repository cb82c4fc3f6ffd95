// fatpte_reader: a container read through the caller's read_at callback (specs/remote.md), so an
// on-device runtime plugs in its own HTTP client. It reads what Python's fatpte/container/remote.py
// reads, in the same order: the first kPrefixSize bytes, then the rest of the header, tables and
// manifest in one more call when they lie past them, and nothing else until an entry is fetched.
//
// The bytes land in an anonymous mapping as large as the file, reserved without memory
// (MAP_NORESERVE) and unreadable (PROT_NONE) except for the pages fetched: the container is an
// ordinary fatpte_container over that mapping, so selection, the entry queries and fatpte_load work
// unchanged, and a read of a byte never fetched stops the process at once instead of seeing
// zeros. The container knows which byte ranges were fetched (Container::set_presence, from the
// reader's RangeSet): a load tries no entry whose bytes were not all fetched (dispatch.hpp). The
// structural pass reads only what the plan fetched: metadata_end() names the tables only when
// the header passes the checks that guard their reading (format/structure.cpp, the same rule as
// Python's structure.metadata_ranges).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capi/c_handles.hpp"
#include "common/bytes.hpp"
#include "capi/range_set.hpp"
#include "container/golden.hpp"
#include "fatpte/crc32c.hpp"
#include "fatpte/fatpte.h"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"
#include "nfat_manifest_generated.h"

namespace M = nfat::manifest;
namespace F = fatpte::format;

struct fatpte_reader {
  fatpte_read_at_fn read_at = nullptr;
  void* user = nullptr;
  std::uint64_t size = 0;
  std::uint8_t* region = nullptr;
  std::size_t region_size = 0;  // whole pages
  fatpte_container* container = nullptr;
  std::uint64_t bytes_read = 0;
  std::uint64_t calls = 0;
  fatpte::detail::RangeSet fetched;  // the byte ranges read so far
};

namespace {

using fatpte::detail::read_u32le;
using fatpte::detail::read_u64le;

void set_error(fatpte_error* error, fatpte_status code, std::uint64_t offset, const char* field,
               const std::string& message) noexcept {
  if (error == nullptr) return;
  error->code = code;
  error->offset = offset;
  std::snprintf(error->field, sizeof error->field, "%s", field);
  std::snprintf(error->message, sizeof error->message, "%s: %s", fatpte_status_tag(code), message.c_str());
}

std::size_t page_size() noexcept {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

bool record_size_ok(std::uint32_t value, std::uint32_t minimum) noexcept {
  return value >= minimum && value <= F::kMaxRecordSize && value % F::kRecordSizeMultiple == 0;
}

// The end of the header and tables that the structural pass reads, when the header passes the
// checks that come before they are read; nothing otherwise (the pass then stops at the header).
// `head` holds min(size, kPrefixSize) bytes.
std::optional<std::uint64_t> table_end(const std::uint8_t* head, std::uint64_t have, std::uint64_t size) noexcept {
  if (size < F::kPreambleSize || have < F::kPreambleSize || std::memcmp(head, F::kMagic, F::kMagicSize) != 0) {
    return std::nullopt;
  }
  const std::uint32_t version = read_u32le(head + 4);
  if (version == F::kVersion1) {
    if (size < F::kV1HeaderSize) return std::nullopt;
    const std::uint64_t count = read_u32le(head + F::kV1Header_entry_count_offset);
    const std::uint64_t end = F::kV1HeaderSize + count * F::kV1EntrySize;
    if (count == 0 || count > F::kMaxEntries || end > size) return std::nullopt;
    return end;
  }
  if (version != F::kVersion2 || size < F::kV2HeaderSize) return std::nullopt;
  const std::uint64_t total = read_u64le(head + F::kV2Header_container_size_offset);
  const std::uint32_t header_size = read_u32le(head + F::kV2Header_header_size_offset);
  const std::uint32_t entry_size = read_u32le(head + F::kV2Header_entry_size_offset);
  const std::uint32_t segment_entry_size = read_u32le(head + F::kV2Header_segment_entry_size_offset);
  const std::uint64_t count = read_u32le(head + F::kV2Header_entry_count_offset);
  const std::uint64_t segments = read_u32le(head + F::kV2Header_segment_count_offset);
  const std::uint32_t flags = read_u32le(head + F::kV2Header_flags_offset);
  if (total != size || !record_size_ok(header_size, F::kV2HeaderSize) || !record_size_ok(entry_size, F::kV2EntrySize) ||
      !record_size_ok(segment_entry_size, F::kV2SegmentSize) || (flags & ~F::kHeaderFlagsKnown) != 0 || count == 0 ||
      count > F::kMaxEntries || segments > F::kMaxSegments) {
    return std::nullopt;
  }
  const std::uint64_t end = header_size + count * entry_size + segments * segment_entry_size;
  if (end > total) return std::nullopt;
  return end;
}

// A range to read and, unless it is kRaw, to compare with the CRC32C the tables state. Small:
// an entry may list a million keys; the words of an error are made only when one is reported.
struct Want {
  enum Kind : std::uint8_t { kRaw, kPayload, kNamedData, kGolden, kSignature };
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t checksum = 0;
  Kind kind = kRaw;
  std::uint32_t index = 0;     // the entry's (kPayload) or the segment's
  const char* name = nullptr;  // the entry's name, or the key (valid for the fetch)
};

Want want(Want::Kind kind, std::uint64_t offset, std::uint64_t size, std::uint32_t checksum, std::uint32_t index,
          const char* name) {
  Want w;
  w.kind = kind;
  w.offset = offset;
  w.size = size;
  w.checksum = checksum;
  w.index = index;
  w.name = name;
  return w;
}

// The status, field and words of a range that arrived damaged.
fatpte_status mismatch(const Want& w, std::string& field, std::string& what) {
  const std::string seg = "segments[" + std::to_string(w.index) + "]";
  switch (w.kind) {
    case Want::kPayload:
      field = "entries[" + std::to_string(w.index) + "].checksum";
      what = "the payload of '" + std::string(w.name) + "'";
      return FATPTE_E_PAYLOAD_CHECKSUM_MISMATCH;
    case Want::kSignature:
      field = "header.signature_checksum";
      what = "the signature region";
      return FATPTE_E_SIGNATURE_CHECKSUM_MISMATCH;
    default:
      field = seg + ".checksum";
      what = std::string(w.kind == Want::kGolden ? "the golden tensor '" : "the named data '") + w.name + "' (" +
             seg + ")";
      return FATPTE_E_SEGMENT_CHECKSUM_MISMATCH;
  }
}

// The pages of a batch of ranges not yet fetched, made writable for the reads in runs of touching
// pages and read-only again when the batch ends: a pair of mprotect calls per run, not per range
// (an entry of 160,000 keys made 320,000 of them, most of its fetch time). A run covers only
// pages one of the ranges touches, so no other page becomes readable.
class Window {
 public:
  explicit Window(fatpte_reader* r) : r_(r) {}
  ~Window() {
    for (const auto& [first, last] : runs_) {
      mprotect(r_->region + first, static_cast<std::size_t>(last - first), PROT_READ);
    }
  }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  fatpte_status open(const std::vector<Want>& wants, fatpte_error* error) {
    const std::size_t page = page_size();
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
    for (const Want& w : wants) {
      if (r_->fetched.contains(w.offset, w.offset + w.size)) continue;
      spans.emplace_back(w.offset / page * page,
                         std::min<std::uint64_t>(r_->region_size, (w.offset + w.size + page - 1) / page * page));
    }
    std::sort(spans.begin(), spans.end());
    std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;
    for (const auto& [first, last] : spans) {
      if (!runs.empty() && first <= runs.back().second) {
        runs.back().second = std::max(runs.back().second, last);
      } else {
        runs.emplace_back(first, last);
      }
    }
    for (const auto& [first, last] : runs) {
      if (mprotect(r_->region + first, static_cast<std::size_t>(last - first), PROT_READ | PROT_WRITE) != 0) {
        set_error(error, FATPTE_E_IO_ERROR, first, "", "cannot make room for the bytes read");
        return FATPTE_E_IO_ERROR;
      }
      runs_.emplace_back(first, last);
    }
    return FATPTE_OK;
  }

 private:
  fatpte_reader* r_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> runs_;  // made writable, restored at the end
};

// One range, its pages writable (Window): read unless it was, then its CRC32C checked.
fatpte_status fetch_one(fatpte_reader* r, const Want& w, fatpte_error* error) {
  const std::uint64_t start = w.offset, end = w.offset + w.size;
  if (!r->fetched.contains(start, end)) {
    r->calls += 1;
    const fatpte_status status = r->read_at(r->user, start, r->region + start, static_cast<std::size_t>(w.size));
    if (status != FATPTE_OK) {
      char text[160];
      std::snprintf(text, sizeof text, "read_at(%#llx, %llu) failed: %s", static_cast<unsigned long long>(start),
                    static_cast<unsigned long long>(w.size), fatpte_status_message(status));
      set_error(error, status, start, "", text);
      return status;
    }
    r->bytes_read += w.size;
    r->fetched.add(start, end);
  }
  if (w.kind == Want::kRaw) return FATPTE_OK;
  const std::uint32_t actual = fatpte::crc32c(r->region + start, static_cast<std::size_t>(w.size));
  if (actual != w.checksum) {
    std::string field, what;
    const fatpte_status code = mismatch(w, field, what);
    char text[256];
    std::snprintf(text, sizeof text, "%s arrived with CRC32C %08x, but the table says %08x", what.c_str(), actual,
                  w.checksum);
    set_error(error, code, fatpte::kNoOffset, field.c_str(), text);
    return code;
  }
  return FATPTE_OK;
}

// Every range of `wants`, in their order, each read once: the first error stops the batch.
fatpte_status fetch_all(fatpte_reader* r, const std::vector<Want>& wants, fatpte_error* error) {
  Window window(r);
  fatpte_status s = window.open(wants, error);
  for (std::size_t i = 0; s == FATPTE_OK && i < wants.size(); ++i) s = fetch_one(r, wants[i], error);
  return s;
}

fatpte_status fetch(fatpte_reader* r, std::uint64_t start, std::uint64_t end, fatpte_error* error) {
  if (end <= start) return FATPTE_OK;
  return fetch_all(r, {want(Want::kRaw, start, end - start, 0, 0, nullptr)}, error);
}


void release(fatpte_reader* r) noexcept {
  if (r->container != nullptr) fatpte_close(r->container);
  if (r->region != nullptr) munmap(r->region, r->region_size);
  delete r;
}

}  // namespace

extern "C" {

fatpte_status fatpte_reader_open(fatpte_read_at_fn read_at, void* user, uint64_t file_size, fatpte_reader** out,
                                 fatpte_error* error) noexcept {
  if (read_at == nullptr || out == nullptr) {
    set_error(error, FATPTE_E_INVALID_ARGUMENT, FATPTE_NO_OFFSET, "", "read_at and out must not be NULL");
    return FATPTE_E_INVALID_ARGUMENT;
  }
  *out = nullptr;
  auto* r = new (std::nothrow) fatpte_reader();
  if (r == nullptr) {
    set_error(error, FATPTE_E_IO_ERROR, FATPTE_NO_OFFSET, "", "out of memory");
    return FATPTE_E_IO_ERROR;
  }
  r->read_at = read_at;
  r->user = user;
  r->size = file_size;
  try {
    const std::size_t page = page_size();
    if (file_size > 0) {
      if (file_size > SIZE_MAX - page) {
        release(r);
        set_error(error, FATPTE_E_INVALID_ARGUMENT, FATPTE_NO_OFFSET, "", "the file is larger than the address space");
        return FATPTE_E_INVALID_ARGUMENT;
      }
      r->region_size = static_cast<std::size_t>((file_size + page - 1) / page * page);
      void* m = mmap(nullptr, r->region_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) {
        r->region_size = 0;
        release(r);
        set_error(error, FATPTE_E_IO_ERROR, FATPTE_NO_OFFSET, "", "cannot reserve address space for the file");
        return FATPTE_E_IO_ERROR;
      }
      r->region = static_cast<std::uint8_t*>(m);
    }
    const std::uint64_t prefix = std::min<std::uint64_t>(file_size, FATPTE_PREFIX_SIZE);
    fatpte_status s = fetch(r, 0, prefix, error);
    // What the structural pass and the manifest reader read (the same plan as Python's).
    const std::optional<std::uint64_t> tables = s == FATPTE_OK ? table_end(r->region, prefix, file_size) : std::nullopt;
    std::uint64_t end = tables.value_or(prefix);
    std::uint64_t m_start = 0;
    std::uint64_t m_end = 0;
    if (tables && read_u32le(r->region + 4) == F::kVersion2) {
      const std::uint64_t offset = read_u64le(r->region + F::kV2Header_manifest_offset_offset);
      const std::uint64_t length = read_u64le(r->region + F::kV2Header_manifest_size_offset);
      if (length > 0 && length <= F::kMaxManifestSize && fatpte::detail::in_bounds(offset, length, file_size)) {
        m_start = offset;
        m_end = offset + length;
      }
    }
    if (m_end > 0 && m_start <= std::max(end, prefix) + FATPTE_PREFIX_SIZE) {
      end = std::max(end, m_end);  // the manifest follows the tables: one request for both
      m_end = 0;
    }
    if (s == FATPTE_OK && end > prefix) s = fetch(r, prefix, end, error);
    if (s == FATPTE_OK && m_end > 0) s = fetch(r, m_start, m_end, error);
    if (s == FATPTE_OK) s = fatpte_open_memory(r->region, static_cast<std::size_t>(file_size), &r->container, error);
    if (s != FATPTE_OK) {
      release(r);
      return s;
    }
    const fatpte::detail::RangeSet* fetched = &r->fetched;
    r->container->impl->set_presence(
        [fetched](std::uint64_t offset, std::uint64_t size) { return fetched->contains(offset, offset + size); });
  } catch (...) {
    release(r);
    set_error(error, FATPTE_E_IO_ERROR, FATPTE_NO_OFFSET, "", "out of memory");
    return FATPTE_E_IO_ERROR;
  }
  *out = r;
  if (error != nullptr) {
    error->code = FATPTE_OK;
    error->offset = FATPTE_NO_OFFSET;
    error->field[0] = error->message[0] = '\0';
  }
  return FATPTE_OK;
}

const fatpte_container* fatpte_reader_container(const fatpte_reader* reader) noexcept {
  return reader == nullptr ? nullptr : reader->container;
}

fatpte_status fatpte_reader_fetch_entry(fatpte_reader* r, uint32_t index, fatpte_error* error) noexcept {
  if (r == nullptr || r->container == nullptr) {
    set_error(error, FATPTE_E_INVALID_ARGUMENT, FATPTE_NO_OFFSET, "", "no reader");
    return FATPTE_E_INVALID_ARGUMENT;
  }
  try {
    uint32_t count = 0;
    fatpte_entry_count(r->container, &count);
    if (index >= count) {
      set_error(error, FATPTE_E_ENTRY_NOT_FOUND, FATPTE_NO_OFFSET, "",
                "entry index " + std::to_string(index) + " is out of range (the container holds " +
                    std::to_string(count) + ")");
      return FATPTE_E_ENTRY_NOT_FOUND;
    }
    uint64_t offset = 0, size = 0;
    uint32_t checksum = 0;
    int has_checksum = 0;
    const char* name = "";
    fatpte_entry_offset(r->container, index, &offset);
    fatpte_entry_size(r->container, index, &size);
    fatpte_entry_checksum(r->container, index, &checksum, &has_checksum);
    fatpte_entry_name(r->container, index, &name);
    // The payload, then each listed key's segment, read in that order in one batch (Window).
    std::vector<Want> wants{
        want(has_checksum != 0 ? Want::kPayload : Want::kRaw, offset, size, checksum, index, name)};
    uint32_t version = 0;
    fatpte_version(r->container, &version);
    const std::uint8_t* h = r->region;
    const std::uint64_t m_size = version == F::kVersion2 ? read_u64le(h + F::kV2Header_manifest_size_offset) : 0;
    if (m_size == 0) return fetch_all(r, wants, error);
    // The entry's named data: its manifest entry's keys, each key's segment (opening verified the
    // manifest's CRC32C; the flatbuffers verifier runs here before anything is read from it).
    const std::uint8_t* m = h + read_u64le(h + F::kV2Header_manifest_offset_offset);
    ::flatbuffers::Verifier verifier(m, static_cast<std::size_t>(m_size));
    if (!M::VerifyManifestBuffer(verifier)) {
      set_error(error, FATPTE_E_MANIFEST_CORRUPT, FATPTE_NO_OFFSET, "manifest",
                "the manifest is not a well-formed flatbuffer of specs/nfat_manifest.fbs");
      return FATPTE_E_MANIFEST_CORRUPT;
    }
    const M::Manifest* root = M::GetManifest(m);
    if (root->entries() == nullptr || root->named_data() == nullptr) return fetch_all(r, wants, error);
    const std::uint32_t seg_at = read_u32le(h + F::kV2Header_header_size_offset) +
                                 read_u32le(h + F::kV2Header_entry_count_offset) *
                                     read_u32le(h + F::kV2Header_entry_size_offset);
    const std::uint32_t seg_stride = read_u32le(h + F::kV2Header_segment_entry_size_offset);
    const std::uint32_t seg_count = read_u32le(h + F::kV2Header_segment_count_offset);
    std::map<std::string, std::uint32_t> segment_of;
    for (const auto* item : *root->named_data()) {
      if (item->key() != nullptr) segment_of.emplace(item->key()->str(), item->segment());
    }
    for (const auto* e : *root->entries()) {
      if (e->name() == nullptr || e->name()->str() != name || e->named_data() == nullptr) continue;
      for (const auto* key : *e->named_data()) {
        const auto found = segment_of.find(key->str());
        if (found == segment_of.end() || found->second >= seg_count) continue;  // validate reports it
        const std::uint8_t* rec = h + seg_at + static_cast<std::uint64_t>(found->second) * seg_stride;
        wants.push_back(want(Want::kNamedData, read_u64le(rec + F::kV2Segment_offset_offset),
                             read_u64le(rec + F::kV2Segment_size_offset),
                             read_u32le(rec + F::kV2Segment_checksum_offset), found->second, key->c_str()));
      }
    }
    return fetch_all(r, wants, error);
  } catch (...) {
    set_error(error, FATPTE_E_IO_ERROR, FATPTE_NO_OFFSET, "", "out of memory");
    return FATPTE_E_IO_ERROR;
  }
}

fatpte_status fatpte_reader_fetch_golden(fatpte_reader* r, uint32_t index, fatpte_error* error) noexcept {
  if (r == nullptr || r->container == nullptr) {
    set_error(error, FATPTE_E_INVALID_ARGUMENT, FATPTE_NO_OFFSET, "", "no reader");
    return FATPTE_E_INVALID_ARGUMENT;
  }
  try {
    const fatpte::Container* c = fatpte::capi::container_of(r->container);
    if (index >= c->entries().size()) {
      set_error(error, FATPTE_E_ENTRY_NOT_FOUND, FATPTE_NO_OFFSET, "", "entry index " + std::to_string(index) +
                " is out of range (the container holds " + std::to_string(c->entries().size()) + ")");
      return FATPTE_E_ENTRY_NOT_FOUND;
    }
    // The golden keys from the verified manifest (opening fetched it); their segments' records lie
    // in the tables, fetched too.
    auto calls = fatpte::golden_calls(*c, index);
    if (!calls.ok()) return fatpte::capi::to_status(calls.error(), error);
    std::vector<bool> done(c->segments().size(), false);  // each segment fetched once
    std::vector<Want> wants;
    for (const fatpte::GoldenCallSpec& call : calls.value()) {
      std::vector<const fatpte::GoldenTensor*> tensors;
      for (const fatpte::GoldenTensor& t : call.inputs) tensors.push_back(&t);
      for (const fatpte::GoldenOutputSpec& o : call.outputs) tensors.push_back(&o.want);
      for (const fatpte::GoldenTensor* t : tensors) {
        if (t->segment >= done.size() || done[t->segment]) continue;  // golden_calls checked the index
        done[t->segment] = true;
        const fatpte::Segment& s = c->segments()[t->segment];
        wants.push_back(want(Want::kGolden, s.offset, s.size, s.checksum, t->segment, t->key.c_str()));
      }
    }
    return fetch_all(r, wants, error);
  } catch (...) {
    set_error(error, FATPTE_E_IO_ERROR, FATPTE_NO_OFFSET, "", "out of memory");
    return FATPTE_E_IO_ERROR;
  }
}

fatpte_status fatpte_reader_fetch_signature(fatpte_reader* r, fatpte_error* error) noexcept {
  if (r == nullptr || r->container == nullptr) {
    set_error(error, FATPTE_E_INVALID_ARGUMENT, FATPTE_NO_OFFSET, "", "no reader");
    return FATPTE_E_INVALID_ARGUMENT;
  }
  try {
    uint32_t version = 0;
    fatpte_version(r->container, &version);
    const std::uint8_t* h = r->region;
    // Opening checked the slot's placement (format/structure.cpp), and the slot lies in the prefix.
    if (version != F::kVersion2 || read_u32le(h + F::kV2Header_header_size_offset) < F::kSignedHeaderSize) {
      return FATPTE_OK;
    }
    const std::uint8_t* slot = h + F::kSignatureSlotOffset;
    const std::uint64_t size = read_u32le(slot + F::kV2SignatureSlot_signature_size_offset);
    if (size == 0) return FATPTE_OK;
    return fetch_all(r,
                     {want(Want::kSignature, read_u64le(slot + F::kV2SignatureSlot_signature_offset_offset), size,
                           read_u32le(slot + F::kV2SignatureSlot_signature_checksum_offset), 0, nullptr)},
                     error);
  } catch (...) {
    set_error(error, FATPTE_E_IO_ERROR, FATPTE_NO_OFFSET, "", "out of memory");
    return FATPTE_E_IO_ERROR;
  }
}

fatpte_status fatpte_reader_stats(const fatpte_reader* r, uint64_t* bytes_read, uint64_t* calls) noexcept {
  if (r == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  if (bytes_read != nullptr) *bytes_read = r->bytes_read;
  if (calls != nullptr) *calls = r->calls;
  return FATPTE_OK;
}

void fatpte_reader_close(fatpte_reader* reader) noexcept {
  if (reader != nullptr) release(reader);
}

}  // extern "C"

std::uint64_t fatpte::capi::reader_steps(const fatpte_reader* reader) noexcept {
  return reader == nullptr ? 0 : reader->fetched.steps();
}
