// crc32c.hpp: the checksum of every NFAT v2 region (specs/nfat.md), hardware-accelerated where
// the CPU has the instruction.
#ifndef FATPTE_CRC32C_HPP_
#define FATPTE_CRC32C_HPP_

#include <cstddef>
#include <cstdint>

namespace fatpte {

// CRC32C (Castagnoli) of data[0:size], continuing from `value` like Python's crc32c(data, value).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t value = 0) noexcept;

}  // namespace fatpte

#endif  // FATPTE_CRC32C_HPP_
