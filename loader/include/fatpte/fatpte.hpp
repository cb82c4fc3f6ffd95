// fatpte.hpp: the C++ interface of libfatpte: Error values, Status and Result<T>, the decoded
// view of a container, and the structural and content checks. It mirrors the Python reference
// (fatpte/format/structure.py, fatpte/container/integrity.py) check for check, in the canonical order of
// specs/nfat.md section 6, so both report the same first error for any file.
//
// Nothing here throws on untrusted input: every problem is a Status carrying the pinned error
// code, the byte offset, the field path and a message with the numbers involved. (Allocation
// failure can still throw std::bad_alloc; the C API in fatpte.h catches everything.)
#ifndef FATPTE_FATPTE_HPP_
#define FATPTE_FATPTE_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fatpte/format_generated.h"

namespace fatpte {

// An offset that is not known (Python's `offset=None`).
inline constexpr std::uint64_t kNoOffset = ~std::uint64_t{0};

// The generated table's row for `code`, or nullptr for a value no ErrorCode has.
const ErrorInfo* error_info(Error code) noexcept;
// "E0203", or "E????" for an unknown value.
const char* error_tag(Error code) noexcept;

// Text safe to write to a terminal, as fatpte.errors does it in Python: printable() escapes every
// control character (newline included), the backslash and the bidirectional controls as \xNN or
// \uNNNN, for a string from a file; terminal_safe() escapes the same but keeps newlines and
// backslashes, for a whole message as it is written. The tools print through them.
std::string printable(const std::string& text);
std::string terminal_safe(const std::string& text);

// Success, or one broken rule: what, where, and the numbers. An OK Status is one null pointer,
// so the checks' success path (a Status returned by every check) makes, moves and destroys
// nothing else; the rule broken lives on the heap, made only when a check fails.
class Status {
 public:
  Status() noexcept = default;  // OK
  // A Status of code Error::OK is OK whatever else it is given.
  Status(Error code, std::uint64_t offset, std::string field, std::string message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  bool ok() const noexcept { return failure_ == nullptr; }
  Error code() const noexcept { return failure_ ? failure_->code : Error::OK; }
  std::uint64_t offset() const noexcept { return failure_ ? failure_->offset : kNoOffset; }
  // "" when OK.
  const std::string& field() const noexcept;
  const std::string& message() const noexcept;
  // `E0203 at 0x48 (entries[2].size): payload ends at ...`, like Python's Finding.describe().
  std::string describe() const;

 private:
  struct Failure {
    Error code;
    std::uint64_t offset;
    std::string field;
    std::string message;
  };
  std::unique_ptr<Failure> failure_;
};

// A failed Status with a printf-style message; the format names the numbers involved.
Status fail(Error code, std::uint64_t offset, std::string field, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

// A value or a failed Status, never both and never neither: ok() is exactly "has a value", and
// error() of an ok Result is an OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) {
      // An OK status without a value would make ok() lie; turn the caller's bug into an error.
      status_ = Status(Error::INVALID_ARGUMENT, kNoOffset, "", "Result built from an OK status without a value");
    }
  }

  bool ok() const noexcept { return value_.has_value(); }
  const Status& error() const noexcept { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Status status_;
};

// Return the Status of `expr` from the enclosing function when it failed.
#define FATPTE_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::fatpte::Status fatpte_status_ = (expr); \
    if (!fatpte_status_.ok()) {               \
      return fatpte_status_;                  \
    }                                         \
  } while (0)

// Return a failed Status (code, offset, field, printf message) unless `cond` holds.
#define FATPTE_CHECK(cond, code, offset, field, ...)                        \
  do {                                                                      \
    if (!(cond)) {                                                          \
      return ::fatpte::fail((code), (offset), (field), __VA_ARGS__);        \
    }                                                                       \
  } while (0)

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
// The content pass (fatpte/container/integrity.py) over a container that passed read_structure.
Status check_integrity(Bytes buf, const Structure& st);
// Both passes: OK, or the first error Python's validate_buffer(...).first_error reports.
Status validate_buffer(Bytes buf);
// The content checks of one payload (CRC32C, then payload kind; nothing for a version 1 entry)
// and of one segment (CRC32C), with the codes, offsets and messages check_integrity gives, so a
// loader can check exactly the bytes it is about to hand out.
Status check_payload_integrity(Bytes buf, const Header& header, const Entry& entry);
Status check_segment_integrity(Bytes buf, const Header& header, const Segment& segment);

// CRC32C (Castagnoli) of data[0:size], continuing from `value` like Python's crc32c(data, value).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t value = 0) noexcept;

namespace detail {
struct ContainerMemo;  // manifest_view.cpp
}  // namespace detail

// An open container: a read-only mapping (or borrowed memory) that passed the structural pass.
class Container {
 public:
  // Map `path` read-only and run the structural pass.
  static Result<std::unique_ptr<Container>> open_file(const std::string& path);
  // Borrow `data` (the caller keeps it alive and unchanged) and run the structural pass.
  static Result<std::unique_ptr<Container>> open_memory(const void* data, std::size_t size);

  ~Container();
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  // The content checks (checksums, padding, payload kinds); the structure passed at open.
  Status validate() const;

  const Header& header() const noexcept { return structure_.header; }
  std::uint32_t version() const noexcept { return structure_.header.version; }
  const std::vector<Entry>& entries() const noexcept { return structure_.entries; }
  const std::vector<Segment>& segments() const noexcept { return structure_.segments; }
  Bytes bytes() const noexcept { return buf_; }
  // The payload of entry `index`, zero-copy, pointing into the mapping.
  Result<Bytes> payload(std::uint32_t index) const;
  // The entry with this name, else the only entry with this backend id (v1: the first).
  Result<std::uint32_t> find(const std::string& name_or_backend_id) const;

 private:
  friend struct detail::ContainerMemo;
  Container() = default;
  Bytes buf_;
  void* mapping_ = nullptr;  // non-null when this object owns an mmap of buf_
  Structure structure_;
  // The manifest's checks (CRC32C, identifier, every rule), run once however many times
  // selection, loading and signature checks ask for the manifest; a validate() that passed has
  // run them (manifest_status_ stays OK). A mutex and a flag rather than std::call_once, whose
  // glibc pthread_once makes a futex system call the first time, in the middle of every load.
  mutable std::mutex manifest_mutex_;
  mutable bool manifest_checked_ = false;
  mutable Status manifest_status_;
};

}  // namespace fatpte

#endif  // FATPTE_FATPTE_HPP_
