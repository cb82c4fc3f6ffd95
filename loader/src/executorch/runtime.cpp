// ExecuTorch's runtime, log and libraries, process-wide (executorch/runtime.hpp).
#include "executorch/runtime.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include <executorch/runtime/core/error.h>
#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>

namespace fatpte {
namespace et {

struct CaptureAccess {
  static Capture*& current() {
    thread_local Capture* capture = nullptr;
    return capture;
  }
  static void keep(Capture& c, const char* message, std::size_t length) { add(c.lines_, message, length); }
  static void keep_fat(Capture& c, const char* message, std::size_t length) { add(c.fat_lines_, message, length); }
  static void add(std::vector<std::string>& lines, const char* message, std::size_t length) {
    if (lines.size() >= Capture::kMaxLines) return;
    std::string line(message, length < Capture::kMaxLineBytes ? length : Capture::kMaxLineBytes);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    lines.push_back(std::move(line));
  }
};

namespace {

::pal_emit_log_message_method previous_emit = nullptr;
std::atomic<bool> forwarding{false};  // an application hears ExecuTorch's lines only when it asks
std::atomic<bool> hooked{false};  // ensure_runtime has installed emit

void emit(et_timestamp_t timestamp, et_pal_log_level_t level, const char* filename, const char* function,
          std::size_t line, const char* message, std::size_t length) {
  Capture* c = CaptureAccess::current();
  if (c != nullptr && (level == kError || level == kFatal) && message != nullptr) {
    CaptureAccess::keep(*c, message, length);
  }
  static constexpr char kFat[] = "fatpte fat delegate: ";
  constexpr std::size_t kFatSize = sizeof kFat - 1;
  if (c != nullptr && level == kInfo && message != nullptr && length > kFatSize &&
      std::memcmp(message, kFat, kFatSize) == 0) {
    CaptureAccess::keep_fat(*c, message + kFatSize, length - kFatSize);
  }
  if (forwarding.load(std::memory_order_relaxed) && previous_emit != nullptr) {
    previous_emit(timestamp, level, filename, function, line, message, length);
  }
}

std::mutex& libraries_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void ensure_runtime() {
  // A function-local static rather than std::call_once, whose glibc pthread_once makes a futex
  // system call the first time: this runs at the start of every fat delegate's first init.
  static const bool kInstalled = [] {
    executorch::runtime::runtime_init();
    // The handler in place now (ExecuTorch's default, or one the application registered) keeps
    // receiving every line; only fields that are non-null replace the current ones.
    previous_emit = executorch::runtime::get_pal_impl()->emit_log_message;
    executorch::runtime::register_pal(executorch::runtime::PalImpl::create(emit, __FILE__));
    hooked.store(true, std::memory_order_release);
    return true;
  }();
  (void)kInstalled;
}

void set_forwarding(bool forward) { forwarding.store(forward, std::memory_order_relaxed); }

Capture::Capture() : active_(hooked.load(std::memory_order_acquire)) {
  if (!active_) return;
  outer_ = CaptureAccess::current();
  CaptureAccess::current() = this;
}

Capture::~Capture() {
  if (!active_) return;
  CaptureAccess::current() = outer_;
  // An outer capture also hears what was logged inside this one.
  if (outer_ != nullptr) {
    for (const std::string& l : lines_) CaptureAccess::keep(*outer_, l.data(), l.size());
    for (const std::string& l : fat_lines_) CaptureAccess::keep_fat(*outer_, l.data(), l.size());
  }
}

std::string Capture::text() const {
  std::string out;
  for (const std::string& l : lines_) out += (out.empty() ? "" : "; ") + l;
  return out;
}

Opened open_library(const std::string& path) {
  std::lock_guard<std::mutex> lock(libraries_mutex());
  static std::map<std::string, bool> opened;  // path -> loaded; never closed (see the header)
  Opened out;
  if (opened.count(path) != 0) {
    out.ok = true;
    out.already = true;
    return out;
  }
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    out.error = err != nullptr ? err : "unknown error";
    return out;
  }
  opened[path] = true;
  out.ok = true;
  return out;
}

std::string error_text(int error) {
  // to_string gives "Error::NotFound"; the reason reads "0x20 NotFound".
  std::string name = executorch::runtime::to_string(static_cast<executorch::runtime::Error>(error));
  if (name.rfind("Error::", 0) == 0) name.erase(0, 7);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%x ", static_cast<unsigned>(error));
  return buf + name;
}

}  // namespace et
}  // namespace fatpte
