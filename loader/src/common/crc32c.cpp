// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every NFAT v2 region.
// Uses the SSE4.2 crc32 instruction when the CPU has it and a slicing-by-8 table otherwise;
// both give the same value (tests/crc32c_test.cpp checks the standard vector and agreement).
#include <cstring>

#include "fatpte/crc32c.hpp"
#include "fatpte/cpu_words.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FATPTE_CRC_X86 1
#include <nmmintrin.h>
#endif

namespace fatpte {
namespace {

struct Tables {
  std::uint32_t t[8][256];
  Tables() noexcept {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};

const Tables& tables() noexcept {
  static const Tables kTables;
  return kTables;
}

std::uint32_t crc_soft(std::uint32_t crc, const std::uint8_t* p, std::size_t n) noexcept {
  const Tables& T = tables();
  while (n >= 8) {
    std::uint32_t lo = (static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                        static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24) ^ crc;
    crc = T.t[7][lo & 0xFF] ^ T.t[6][(lo >> 8) & 0xFF] ^ T.t[5][(lo >> 16) & 0xFF] ^ T.t[4][lo >> 24] ^
          T.t[3][p[4]] ^ T.t[2][p[5]] ^ T.t[1][p[6]] ^ T.t[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ T.t[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#ifdef FATPTE_CRC_X86
__attribute__((target("sse4.2"))) std::uint32_t crc_hw(std::uint32_t crc, const std::uint8_t* p,
                                                         std::size_t n) noexcept {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);  // little-endian host: x86_64
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  std::uint32_t c32 = static_cast<std::uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

// SSE4.2 is cpuid(1).ecx bit 20, from probe::x86_words(), which reads glibc's record of the
// cpuid it ran at start-up: a cpuid instruction of our own (or __builtin_cpu_supports, whose
// libgcc initializer runs a dozen) traps to the hypervisor in a virtual machine.
bool have_sse42() noexcept {
  static const bool kHave = ((probe::x86_words().leaf1_ecx >> 20) & 1u) != 0;
  return kHave;
}
#endif

}  // namespace

namespace detail {
// Exposed for the agreement test only.
std::uint32_t crc32c_soft(const void* data, std::size_t size, std::uint32_t value) noexcept {
  return ~crc_soft(~value, static_cast<const std::uint8_t*>(data), size);
}
}  // namespace detail

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t value) noexcept {
  const auto* p = static_cast<const std::uint8_t*>(data);
#ifdef FATPTE_CRC_X86
  if (have_sse42()) return ~crc_hw(~value, p, size);
#endif
  return ~crc_soft(~value, p, size);
}

}  // namespace fatpte
