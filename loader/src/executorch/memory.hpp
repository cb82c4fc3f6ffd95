// Memory for a loaded ExecuTorch method (executorch/method.hpp), shared by the loader's runner (run/et_runner.hpp) and the fat
// delegate's nested programs (delegate/fat_backend.hpp): aligned copies of a payload, the planned
// buffers a method's MethodMeta asks for (bounded, reserved rather than committed), the bounded
// allocators of its method and temp memory, and reasons made of ExecuTorch's errors.
#ifndef FATPTE_SRC_EXECUTORCH_MEMORY_HPP_
#define FATPTE_SRC_EXECUTORCH_MEMORY_HPP_

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/core/span.h>
#include <executorch/runtime/core/data_loader.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>

#include "executorch/runtime.hpp"

namespace fatpte {
namespace et {

// ---- a bounded, growing MemoryAllocator for ExecuTorch's method and temp allocators ----

namespace R = executorch::runtime;

// A MemoryAllocator that takes memory from malloc in blocks, as ExecuTorch asks for it, up to a
// fixed total: a program cannot make the loader reserve more than the limit, and a small
// program reserves little. reset() keeps the first block for the next round (the temp allocator
// is reset after each kernel).
class BoundedAllocator final : public R::MemoryAllocator {
 public:
  explicit BoundedAllocator(std::uint64_t limit) : MemoryAllocator(0, nullptr), limit_(limit) {}
  ~BoundedAllocator() override {
    for (Block& b : blocks_) std::free(b.base);
  }
  BoundedAllocator(const BoundedAllocator&) = delete;
  BoundedAllocator& operator=(const BoundedAllocator&) = delete;

  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
    if (!blocks_.empty()) {
      if (void* p = bump(blocks_.back(), size, alignment)) return p;
    }
    const std::uint64_t need = std::uint64_t{size} + alignment;
    const std::uint64_t block = std::max<std::uint64_t>(kBlockBytes, need);
    if (need < size || block > limit_ - std::min(limit_, reserved_)) {
      exceeded_ = true;
      return nullptr;
    }
    void* base = std::malloc(static_cast<size_t>(block));
    if (base == nullptr) return nullptr;
    blocks_.push_back(Block{static_cast<std::uint8_t*>(base), static_cast<size_t>(block), 0});
    reserved_ += block;
    peak_ = std::max(peak_, reserved_);
    return bump(blocks_.back(), size, alignment);
  }

  void reset() override {
    while (blocks_.size() > 1) {
      reserved_ -= blocks_.back().size;
      std::free(blocks_.back().base);
      blocks_.pop_back();
    }
    if (!blocks_.empty()) blocks_[0].used = 0;
    used_ = 0;
  }

  size_t used_size() const override { return static_cast<size_t>(used_); }
  size_t free_size() const override { return static_cast<size_t>(limit_ - std::min(limit_, reserved_)); }
  std::uint64_t peak() const noexcept { return peak_; }
  bool exceeded() const noexcept { return exceeded_; }
  std::uint64_t limit() const noexcept { return limit_; }

 private:
  static constexpr std::uint64_t kBlockBytes = 64 * 1024;
  struct Block {
    std::uint8_t* base;
    size_t size;
    size_t used;
  };

  void* bump(Block& b, size_t size, size_t alignment) {
    const auto at = reinterpret_cast<std::uintptr_t>(b.base) + b.used;
    const std::uintptr_t aligned = (at + alignment - 1) & ~static_cast<std::uintptr_t>(alignment - 1);
    const size_t start = static_cast<size_t>(aligned - reinterpret_cast<std::uintptr_t>(b.base));
    if (start > b.size || size > b.size - start) return nullptr;
    b.used = start + size;
    used_ += size;
    return b.base + start;
  }

  std::uint64_t limit_;
  std::uint64_t reserved_ = 0;
  std::uint64_t used_ = 0;
  std::uint64_t peak_ = 0;
  bool exceeded_ = false;
  std::vector<Block> blocks_;
};

struct FreeDeleter {
  void operator()(std::uint8_t* p) const noexcept { std::free(p); }
};
using Buffer = std::unique_ptr<std::uint8_t, FreeDeleter>;

// A copy of `size` bytes at `data` (a payload that does not lie aligned) in memory aligned to 64;
// null when out of memory. Its size is the payload's, which lies in the file: it is committed.
Buffer aligned_copy(const std::uint8_t* data, std::size_t size);

// Memory reserved, not committed: an anonymous private mapping (MAP_NORESERVE where the system has
// it), whose pages read as zero and cost nothing until the program writes them, as ExecuTorch's own
// Module gets from the allocator. So a small file that declares a large planned buffer takes
// address space, not memory; a page counts once written. Unmapped when destroyed.
class Reserved {
 public:
  Reserved() = default;
  // `size` bytes (at least one, page-aligned); empty when the system refuses the mapping.
  static Reserved map(std::size_t size);
  Reserved(Reserved&& other) noexcept;
  Reserved& operator=(Reserved&& other) noexcept;
  Reserved(const Reserved&) = delete;
  Reserved& operator=(const Reserved&) = delete;
  ~Reserved();

  std::uint8_t* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  explicit operator bool() const noexcept { return data_ != nullptr; }

 private:
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// "12 B", "3.5 KiB", "1.2 MiB", "16.0 GiB".
std::string bytes_text(std::uint64_t n);

// ExecuTorch's error and what it logged while failing, as one reason.
std::string et_reason(const char* what, executorch::runtime::Error error, const Capture& capture);

// The planned buffers of `meta` (method `method`), at most `limit` bytes in all, reserved in one
// mapping (`arena`, each buffer at a multiple of 64 in it) and appended to `spans`; "" when
// reserved, else why not: past the limit, the reason names the method, the buffer, its size and
// the limit, then `limit_origin` (where the limit comes from). `total` receives the bytes asked for.
std::string plan_memory(const executorch::runtime::MethodMeta& meta, const std::string& method, std::uint64_t limit,
                        const std::string& limit_origin, Reserved& arena,
                        std::vector<executorch::runtime::Span<std::uint8_t>>& spans, std::uint64_t& total);

// Program::load of a program whose flatbuffer read_program (executorch/program.hpp) has verified;
// `loader` serves the same bytes, which start at `flatbuffer`. ExecuTorch's InternalConsistency
// is that verification (the flatbuffers verifier of the same schema over the same program_size
// bytes) followed by validate_program (tensor sizes that cannot overflow, list element types).
// The verification is not run a second time: validate_program runs here, then Program::load with
// Minimal. What ExecuTorch logs on the way is kept by the caller's Capture.
executorch::runtime::Result<executorch::runtime::Program> load_verified(executorch::runtime::DataLoader* loader,
                                                                        const void* flatbuffer);

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_EXECUTORCH_MEMORY_HPP_
