// result.hpp: Result<T>, a value or the Status that says why there is none.
#ifndef FATPTE_RESULT_HPP_
#define FATPTE_RESULT_HPP_

#include <optional>
#include <utility>

#include "fatpte/status.hpp"

namespace fatpte {

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

}  // namespace fatpte

#endif  // FATPTE_RESULT_HPP_
