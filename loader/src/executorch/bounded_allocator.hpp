// A bounded, growing MemoryAllocator for ExecuTorch's method and temp allocators.
#ifndef FATPTE_SRC_EXECUTORCH_BOUNDED_ALLOCATOR_HPP_
#define FATPTE_SRC_EXECUTORCH_BOUNDED_ALLOCATOR_HPP_

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <executorch/runtime/core/memory_allocator.h>

namespace fatpte {
namespace et {

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

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_EXECUTORCH_BOUNDED_ALLOCATOR_HPP_
