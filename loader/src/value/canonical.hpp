// The canonical-bytes writer (specs/nfat-signature.md section 4's primitives): what both the
// signing records (signature/records.hpp) and the golden-call digest (manifest/golden.hpp,
// specs/nfat-manifest.md 11.3) write, so the two encodings share one definition of u8, u32, i32,
// u64, str, bytes, opt and list. fatpte/manifest/canonical.py's primitives.
#ifndef FATPTE_SRC_VALUE_CANONICAL_HPP_
#define FATPTE_SRC_VALUE_CANONICAL_HPP_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace fatpte {
namespace detail {

// Appends canonical primitives to a byte string: integers little-endian, `str` and `bytes` a u32
// length then the bytes, `opt` a u8 0 or 1 before the value, `list` a u32 count before the items.
class CanonicalWriter {
 public:
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u32(std::uint32_t v) { little_endian(v, 4); }
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void u64(std::uint64_t v) { little_endian(v, 8); }
  // A double as the u64 of its IEEE 754 bits (the golden tolerances of specs/nfat-manifest.md 11.3).
  void f64(double v);
  // str(s): its UTF-8 bytes, as the manifest holds them.
  void str(std::string_view s) { bytes(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()); }
  void bytes(const std::uint8_t* data, std::size_t size);
  // opt(X)'s flag: writes u8 1 when `present`, else u8 0, and returns `present`; the caller then
  // writes X when it is.
  bool opt(bool present) {
    u8(present ? 1 : 0);
    return present;
  }
  // list(X) over `items` (a pointer to a sized, iterable container; nullptr: the empty list), each
  // item written by `each(writer, item)`.
  template <typename Items, typename Each>
  void list(const Items* items, Each&& each) {
    u32(items == nullptr ? 0 : static_cast<std::uint32_t>(items->size()));
    if (items == nullptr) return;
    for (const auto& item : *items) each(*this, item);
  }

  const std::vector<std::uint8_t>& bytes() const noexcept { return out_; }
  std::vector<std::uint8_t> take() noexcept { return std::move(out_); }

 private:
  void little_endian(std::uint64_t v, int size) {
    for (int k = 0; k < size; ++k) out_.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
  }
  std::vector<std::uint8_t> out_;
};

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_VALUE_CANONICAL_HPP_
