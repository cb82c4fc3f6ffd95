// Status: formatting a broken rule the way Python's Finding.describe() does, and lookups in the
// generated error table.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <utility>

#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {

const ErrorInfo* error_info(Error code) noexcept {
  for (const ErrorInfo& info : kErrorInfo) {
    if (info.code == static_cast<std::int32_t>(code)) return &info;
  }
  return nullptr;
}

const char* error_tag(Error code) noexcept {
  const ErrorInfo* info = error_info(code);
  return info == nullptr ? "E????" : info->tag;
}

int exit_status(Error code) noexcept {
  const ErrorInfo* info = error_info(code);
  const std::string category = info != nullptr ? info->category : "usage";
  if (category == "selection") return 3;
  if (category == "io") return 4;
  if (category == "usage") return 2;
  if (category == "unverified") return 5;
  if (category == "disagrees") return 6;
  return 1;
}

Status::Status(Error code, std::uint64_t offset, std::string field, std::string message) {
  if (code != Error::OK) failure_.reset(new Failure{code, offset, std::move(field), std::move(message)});
}

Status::Status(const Status& other) {
  if (other.failure_) failure_.reset(new Failure(*other.failure_));
}

Status& Status::operator=(const Status& other) {
  if (this != &other) failure_.reset(other.failure_ ? new Failure(*other.failure_) : nullptr);
  return *this;
}

namespace {
const std::string kEmpty;
}  // namespace

const std::string& Status::field() const noexcept { return failure_ ? failure_->field : kEmpty; }

const std::string& Status::message() const noexcept { return failure_ ? failure_->message : kEmpty; }

std::string Status::describe() const {
  if (ok()) return "OK";
  const Failure& f = *failure_;
  std::string out = error_tag(f.code);
  const ErrorInfo* info = error_info(f.code);
  if (info != nullptr && info->warning) out += " warning";
  if (f.offset != kNoOffset) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " at %#" PRIx64, f.offset);
    out += f.offset == 0 ? " at 0x0" : buf;
  }
  if (!f.field.empty()) out += " (" + f.field + ")";
  out += ": ";
  out += f.message;
  return out;
}

Status fail(Error code, std::uint64_t offset, std::string field, const char* format, ...) {
  // Measured first: a selection failure lists every entry and can run to many kilobytes.
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string message(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(&message[0], message.size() + 1, format, again);
  va_end(again);
  return Status(code, offset, std::move(field), std::move(message));
}

}  // namespace fatpte
