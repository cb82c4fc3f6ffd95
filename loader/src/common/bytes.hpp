// Explicit little-endian field reads and overflow-safe range checks. Fields are never read by
// casting a struct over the mapping: that would depend on the host's byte order and alignment.
#ifndef FATPTE_SRC_COMMON_BYTES_HPP_
#define FATPTE_SRC_COMMON_BYTES_HPP_

#include <cstdint>

namespace fatpte {
namespace detail {

inline std::uint32_t read_u32le(const std::uint8_t* p) noexcept {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

inline std::int32_t read_i32le(const std::uint8_t* p) noexcept {
  // Two's complement by definition of the format; the conversion below is well defined in C++17
  // for values that fit and implementation-defined (two's complement everywhere) otherwise.
  std::uint32_t u = read_u32le(p);
  return u <= 0x7FFFFFFFu ? static_cast<std::int32_t>(u)
                          : -static_cast<std::int32_t>(~u) - 1;
}

inline std::uint64_t read_u64le(const std::uint8_t* p) noexcept {
  return static_cast<std::uint64_t>(read_u32le(p)) | (static_cast<std::uint64_t>(read_u32le(p + 4)) << 32);
}

// True when [offset, offset + size) lies inside [0, total); cannot overflow.
inline bool in_bounds(std::uint64_t offset, std::uint64_t size, std::uint64_t total) noexcept {
  return size <= total && offset <= total - size;
}

inline bool is_power_of_two(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_COMMON_BYTES_HPP_
