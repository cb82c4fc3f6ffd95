// Memory for a loaded ExecuTorch method (executorch/memory.hpp).
#include "executorch/memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include <executorch/runtime/executor/program_validation.h>

#include "executorch/program.hpp"

namespace fatpte {
namespace et {

namespace R = executorch::runtime;

constexpr std::size_t kPlannedAlignment = 64;

Buffer aligned_copy(const std::uint8_t* data, std::size_t size) {
  const std::size_t rounded = (std::max<std::size_t>(size, 1) + kPlannedAlignment - 1) / kPlannedAlignment *
                              kPlannedAlignment;
  auto* p = static_cast<std::uint8_t*>(std::aligned_alloc(kPlannedAlignment, rounded));
  if (p == nullptr) return Buffer();
  if (size > 0) std::memcpy(p, data, size);
  std::memset(p + size, 0, rounded - size);
  return Buffer(p);
}

Reserved Reserved::map(std::size_t size) {
  Reserved r;
  const std::size_t length = std::max<std::size_t>(size, 1);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_NORESERVE
  flags |= MAP_NORESERVE;  // no swap is set aside: the pages are counted as the program writes them
#endif
  void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) return r;
  r.data_ = static_cast<std::uint8_t*>(p);
  r.size_ = length;
  return r;
}

Reserved::Reserved(Reserved&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Reserved& Reserved::operator=(Reserved&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Reserved::~Reserved() {
  if (data_ != nullptr) munmap(data_, size_);
}

std::string bytes_text(std::uint64_t n) {
  char buf[48];
  if (n >= (std::uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(n) / (std::uint64_t{1} << 30));
  } else if (n >= (std::uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  } else if (n >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", n);
  }
  return buf;
}

std::string et_reason(const char* what, R::Error error, const Capture& capture) {
  std::string out = std::string(what) + ": error " + error_text(static_cast<int>(error));
  if (!capture.lines().empty()) out += ": " + capture.text();
  return out;
}

std::string plan_memory(const R::MethodMeta& meta, const std::string& method, std::uint64_t limit,
                        const std::string& limit_origin, Reserved& arena, std::vector<R::Span<std::uint8_t>>& spans,
                        std::uint64_t& total) {
  Capture capture;
  total = 0;
  // Sized and bounded first, then reserved in one mapping: one system call however many buffers.
  std::vector<std::uint64_t> sizes;
  std::uint64_t reserved = 0;  // each buffer at a multiple of 64: at most the limit + 63 per buffer
  for (size_t i = 0; i < meta.num_memory_planned_buffers(); ++i) {
    R::Result<int64_t> size = meta.memory_planned_buffer_size(i);
    if (!size.ok() || size.get() < 0) return et_reason("ExecuTorch could not size a planned buffer", size.error(), capture);
    const auto n = static_cast<std::uint64_t>(size.get());
    if (n > limit - std::min(limit, total)) {
      const std::string before = total > 0 ? ", after " + bytes_text(total) : "";
      return "method '" + method + "' asks for more planned memory than the limit of " + bytes_text(limit) +
             " (buffer " + std::to_string(i) + " is " + bytes_text(n) + before + "): " + limit_origin;
    }
    total += n;
    reserved += (std::max<std::uint64_t>(n, 1) + kPlannedAlignment - 1) / kPlannedAlignment * kPlannedAlignment;
    sizes.push_back(n);
  }
  if (sizes.empty()) return "";
  if (reserved > std::numeric_limits<std::size_t>::max()) {
    return "cannot reserve " + bytes_text(total) + " of planned memory in this process's address space";
  }
  arena = Reserved::map(static_cast<std::size_t>(reserved));
  if (!arena) return "cannot reserve " + bytes_text(total) + " of planned memory (mmap: " + std::strerror(errno) + ")";
  std::uint8_t* at = arena.data();
  for (std::uint64_t n : sizes) {
    spans.emplace_back(at, static_cast<size_t>(n));
    at += (std::max<std::uint64_t>(n, 1) + kPlannedAlignment - 1) / kPlannedAlignment * kPlannedAlignment;
  }
  return "";
}

R::Result<R::Program> load_verified(R::DataLoader* loader, const void* flatbuffer) {
  const R::Error valid = R::validate_program(program_root(flatbuffer));
  if (valid != R::Error::Ok) return valid;
  return R::Program::load(loader, R::Program::Verification::Minimal);
}

}  // namespace et
}  // namespace fatpte
