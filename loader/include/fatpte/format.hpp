// format.hpp: the decoded NFAT header and tables (specs/nfat.md), and the structural pass that
// reads them, mirroring fatpte/format/structure.py check for check in the canonical order of
// specs/nfat.md section 6, so both report the same first error for any file. It reads the header
// and the tables only, never a payload byte.
#ifndef FATPTE_FORMAT_HPP_
#define FATPTE_FORMAT_HPP_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fatpte/result.hpp"

namespace fatpte {

// ---- the decoded container ----

struct Header {
  std::uint32_t version = 0;
  std::uint32_t header_size = 0;
  std::uint32_t entry_size = 0;
  std::uint32_t entry_count = 0;
  std::uint32_t segment_entry_size = 0;
  std::uint32_t segment_count = 0;
  std::uint32_t flags = 0;
  std::uint64_t container_size = 0;
  std::uint64_t manifest_offset = 0;
  std::uint64_t manifest_size = 0;
  std::uint32_t manifest_checksum = 0;
  std::uint32_t header_checksum = 0;
  std::uint64_t table_end = 0;  // first byte after the header and its tables
  // The signature slot (header bytes 64..80 when header_size >= 80); all 0 without one.
  std::uint64_t signature_offset = 0;
  std::uint32_t signature_size = 0;
  std::uint32_t signature_checksum = 0;
};

// One specialization; offsets are absolute in both versions. Version 1 has no name, alignment,
// checksum, kind or priority: name is the backend id, alignment 1, has_checksum false.
struct Entry {
  std::uint32_t index = 0;
  std::string name;
  std::string backend_id;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::array<std::uint8_t, 4> payload_kind{};
  std::uint32_t alignment = 1;
  bool has_checksum = false;
  std::uint32_t checksum = 0;
  std::int32_t priority = 0;
  std::uint32_t flags = 0;
  std::uint64_t end() const noexcept { return offset + size; }
};

struct Segment {
  std::uint32_t index = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t alignment = 1;
  std::uint32_t checksum = 0;
  std::uint32_t flags = 0;
  std::uint64_t end() const noexcept { return offset + size; }
};

// A byte range the spec gives a meaning to, with the field that places it.
struct Region {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::string label;
  std::string field;
  std::uint64_t field_offset = 0;
  std::uint64_t rank = 0;  // table order, the tie-break of the overlap sweep
  bool is_entry = false;
};

// What the structural pass learned about a container that passed it.
struct Structure {
  Header header;
  std::vector<Entry> entries;
  std::vector<Segment> segments;
  std::vector<Region> regions;  // placed regions in table order
  bool manifest_placed = false;
  bool signature_placed = false;
};

// A read-only byte range: a whole container, or a payload inside one.
struct Bytes {
  const std::uint8_t* data = nullptr;
  std::uint64_t size = 0;
};

// The structural pass (fatpte/format/structure.py): header and tables only, never a payload byte.
Result<Structure> read_structure(Bytes buf);

}  // namespace fatpte

#endif  // FATPTE_FORMAT_HPP_
