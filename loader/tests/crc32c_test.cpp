// CRC32C: the standard check value, continuation, and agreement of the hardware and table paths.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "fatpte/fatpte.hpp"

namespace fatpte {
namespace detail {
std::uint32_t crc32c_soft(const void* data, std::size_t size, std::uint32_t value) noexcept;
}

TEST(Crc32c, StandardCheckValue) {
  const char text[] = "123456789";
  EXPECT_EQ(crc32c(text, 9), 0xE3069283u);
  EXPECT_EQ(detail::crc32c_soft(text, 9, 0), 0xE3069283u);
  EXPECT_EQ(crc32c(text, 0), 0u);
}

TEST(Crc32c, ContinuesFromAPreviousValue) {
  const char text[] = "123456789";
  EXPECT_EQ(crc32c(text + 4, 5, crc32c(text, 4)), 0xE3069283u);
}

TEST(Crc32c, HardwareAndTableAgreeOnEveryLengthAndOffset) {
  std::mt19937 rng(7);
  std::vector<std::uint8_t> data(300);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  for (std::size_t start = 0; start < 9; ++start) {
    for (std::size_t len = 0; start + len <= data.size(); len += 7) {
      ASSERT_EQ(crc32c(data.data() + start, len, 0x1234u), detail::crc32c_soft(data.data() + start, len, 0x1234u))
          << start << " " << len;
    }
  }
}

}  // namespace fatpte
