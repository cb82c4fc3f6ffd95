// SeenTable: what a walker of an untrusted file remembers having reached, by a 64-bit key made
// from a position in the file (manifest/verify.cpp). Open addressing with linear probing, grown
// to keep it at most half full: one allocation per doubling, where a node-based map makes one
// per object.
//
// The file chooses the positions, so a fixed hash would let it choose the slots too: keys that
// all land on one slot make every insertion walk the whole cluster, n^2 / 2 probes for n objects
// (a 64 MiB manifest holds up to a million). Slots are a mix of the key under a secret of this
// process, drawn once from the kernel: without it, no file can aim its positions at a slot.
#ifndef FATPTE_SRC_COMMON_SEEN_TABLE_HPP_
#define FATPTE_SRC_COMMON_SEEN_TABLE_HPP_

#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/random.h>
#endif

namespace fatpte {
namespace detail {

// 64 random bits, the same for the life of the process: one getrandom() the first time (it
// never blocks); where that gives nothing, where this secret lies in memory (randomized by
// ASLR).
inline std::uint64_t process_secret() noexcept {
  static const std::uint64_t kSecret = [] {
    std::uint64_t s = 0;
#if defined(__linux__)
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof s)) s = 0;
#endif
    if (s == 0) s = reinterpret_cast<std::uintptr_t>(&kSecret) * 0x9e3779b97f4a7c15ULL;
    return s;
  }();
  return kSecret;
}

template <typename Value>
class SeenTable {
 public:
  // `secret` mixes every key before it picks a slot; a test passes 0 to show what keys aimed at
  // the unkeyed mix do.
  explicit SeenTable(std::uint64_t secret = process_secret()) : secret_(secret) {}

  const Value* find(std::uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = slot(key);; i = next(i)) {
      ++probes_;
      if (slots_[i].key == 0) return nullptr;
      if (slots_[i].key == key + 1) return &slots_[i].value;
    }
  }

  // `key` must not be present, nor be the largest 64-bit value.
  void put(std::uint64_t key, Value value) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    std::size_t i = slot(key);
    for (++probes_; slots_[i].key != 0; ++probes_) i = next(i);
    slots_[i] = Slot{key + 1, value};
    ++used_;
  }

  std::size_t size() const noexcept { return used_; }
  // Slots looked at by every find and put so far, growth included: the work the file caused.
  std::uint64_t probes() const noexcept { return probes_; }

 private:
  struct Slot {
    std::uint64_t key;  // the key + 1; 0 is an empty slot
    Value value;
  };

  // splitmix64's finalizer of the key under the secret: every bit of the key moves the slot.
  std::size_t slot(std::uint64_t key) const {
    std::uint64_t z = (key ^ secret_) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<std::size_t>(z ^ (z >> 31)) & (slots_.size() - 1);
  }

  std::size_t next(std::size_t i) const { return (i + 1) & (slots_.size() - 1); }

  void grow() {
    std::vector<Slot> old(slots_.empty() ? 64 : 2 * slots_.size(), Slot{0, Value{}});
    old.swap(slots_);
    used_ = 0;
    for (const Slot& s : old) {
      if (s.key != 0) put(s.key - 1, s.value);
    }
  }

  std::uint64_t secret_;
  std::vector<Slot> slots_;
  std::size_t used_ = 0;
  mutable std::uint64_t probes_ = 0;
};

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_COMMON_SEEN_TABLE_HPP_
