// Memory for a loaded ExecuTorch method (executorch/memory.hpp).
#include "executorch/memory.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <executorch/runtime/executor/program_validation.h>

#include "executorch/program.hpp"

namespace fatpte {
namespace et {

namespace R = executorch::runtime;

constexpr std::size_t kPlannedAlignment = 64;

Buffer zeroed(std::size_t size) {
  const std::size_t rounded = (std::max<std::size_t>(size, 1) + kPlannedAlignment - 1) / kPlannedAlignment *
                              kPlannedAlignment;
  auto* p = static_cast<std::uint8_t*>(std::aligned_alloc(kPlannedAlignment, rounded));
  if (p != nullptr) std::memset(p, 0, rounded);
  return Buffer(p);
}

std::string bytes_text(std::uint64_t n) {
  char buf[48];
  if (n >= (std::uint64_t{1} << 20)) {
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
                        std::vector<Buffer>& buffers, std::vector<R::Span<std::uint8_t>>& spans, std::uint64_t& total) {
  Capture capture;
  total = 0;
  for (size_t i = 0; i < meta.num_memory_planned_buffers(); ++i) {
    R::Result<int64_t> size = meta.memory_planned_buffer_size(i);
    if (!size.ok() || size.get() < 0) return et_reason("ExecuTorch could not size a planned buffer", size.error(), capture);
    const auto n = static_cast<std::uint64_t>(size.get());
    if (n > limit - std::min(limit, total)) {
      return "method '" + method + "' asks for more planned memory than the limit of " + bytes_text(limit) +
             " (buffer " + std::to_string(i) + " is " + bytes_text(n) + ")";
    }
    total += n;
    Buffer b = zeroed(static_cast<std::size_t>(n));
    if (!b) return "cannot allocate planned buffer " + std::to_string(i) + " (" + bytes_text(n) + ")";
    spans.emplace_back(b.get(), static_cast<size_t>(n));
    buffers.push_back(std::move(b));
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
