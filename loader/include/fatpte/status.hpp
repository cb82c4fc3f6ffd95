// status.hpp: the pinned error values (format_generated.h, generated from fatpte/errors.py) and
// Status, one broken rule with its code, byte offset, field path and message, as Python's
// FatpteError carries them; the check-and-return macros every check uses.
//
// Nothing in libfatpte throws on untrusted input: every problem is a Status. (Allocation failure
// can still throw std::bad_alloc; the C API in fatpte.h catches everything.)
#ifndef FATPTE_STATUS_HPP_
#define FATPTE_STATUS_HPP_

#include <cstdint>
#include <memory>
#include <string>

#include "fatpte/format_generated.h"

namespace fatpte {

// An offset that is not known (Python's `offset=None`).
inline constexpr std::uint64_t kNoOffset = ~std::uint64_t{0};

// The generated table's row for `code`, or nullptr for a value no ErrorCode has.
const ErrorInfo* error_info(Error code) noexcept;
// "E0203", or "E????" for an unknown value.
const char* error_tag(Error code) noexcept;
// The command line's exit status for an error, by its category (docs/cli.md's table, Python's
// fatpte.cli.exit_codes): 1 invalid, 2 usage (an unknown value too), 3 no fit, 4 I/O, 5 not
// verified, 6 disagrees. Every tool ends through it, so each error exits as in Python.
int exit_status(Error code) noexcept;

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

}  // namespace fatpte

#endif  // FATPTE_STATUS_HPP_
