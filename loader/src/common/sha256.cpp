// SHA-256 (FIPS 180-4 section 6.2), over pieces. The 64 rounds of a block are written out eight at
// a time with the working variables renamed instead of moved (step 3's a..h), after the whole
// message schedule (step 1) and its sums with the constants. The rounds are one body, compiled
// twice: portable (its schedule vectorized by the compiler, two words at a time), and for x86-64
// CPUs with AVX2 and BMI2, whose schedule is written four words at a time (schedule_x4). Callgrind:
// 3,200 and 2,170 instructions a block (2,370 with the compiler's schedule; the loop that moved
// eight variables a round took 4,000). CPUs with the SHA extensions hash a block in their
// instructions: x86-64's (blocks_sha_ni) and ARMv8's (blocks_armv8_sha2). A receipt hashes 16 blocks.
#include "common/sha256.hpp"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FATPTE_SHA_X86 1
#include <immintrin.h>

#include "fatpte/cpu_words.hpp"
#endif

// GCC only: clang 14's arm_neon.h declares the SHA2 intrinsics only when the whole file is compiled
// for them, so a clang build for aarch64 runs the portable path.
#if defined(__aarch64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FATPTE_SHA_ARM 1
#include <arm_neon.h>

#include "fatpte/cpu_words.hpp"
#endif

namespace fatpte {
namespace detail {
namespace {

constexpr std::uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline std::uint32_t rotr(std::uint32_t x, int n) noexcept { return (x >> n) | (x << (32 - n)); }

inline std::uint32_t big_endian(const std::uint8_t* p) noexcept {
  return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 |
         static_cast<std::uint32_t>(p[2]) << 8 | static_cast<std::uint32_t>(p[3]);
}

// One round: T1 and T2 of step 3, with d += T1 and h = T1 + T2 standing for the shifts. Maj in the
// form whose a ^ b is the next round's b ^ c, which compilers keep (3% fewer instructions).
#define FATPTE_SHA_ROUND(a, b, c, d, e, f, g, h, i)                                                          \
  do {                                                                                                     \
    const std::uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + (g ^ (e & (f ^ g))) + kw[i]; \
    d += t1;                                                                                               \
    h = t1 + (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + (b ^ ((a ^ b) & (b ^ c)));                       \
  } while (0)

// Step 3 and 4 for one block, from its message schedule added to the constants (kw[i] = K[i] + W[i]).
__attribute__((always_inline)) inline void rounds(std::uint32_t h[8], const std::uint32_t kw[64]) noexcept {
  std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; i += 8) {
    FATPTE_SHA_ROUND(a, b, c, d, e, f, g, k, i);
    FATPTE_SHA_ROUND(k, a, b, c, d, e, f, g, i + 1);
    FATPTE_SHA_ROUND(g, k, a, b, c, d, e, f, i + 2);
    FATPTE_SHA_ROUND(f, g, k, a, b, c, d, e, i + 3);
    FATPTE_SHA_ROUND(e, f, g, k, a, b, c, d, i + 4);
    FATPTE_SHA_ROUND(d, e, f, g, k, a, b, c, i + 5);
    FATPTE_SHA_ROUND(c, d, e, f, g, k, a, b, i + 6);
    FATPTE_SHA_ROUND(b, c, d, e, f, g, k, a, i + 7);
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

#undef FATPTE_SHA_ROUND

// Step 1 to 4 for one block at p.
__attribute__((always_inline)) inline void block(std::uint32_t h[8], const std::uint8_t* p) noexcept {
  std::uint32_t w[64], kw[64];
  for (int i = 0; i < 16; ++i) w[i] = big_endian(p + 4 * i);
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  for (int i = 0; i < 64; ++i) kw[i] = kK[i] + w[i];
  rounds(h, kw);
}

void blocks_portable(std::uint32_t h[8], const std::uint8_t* p, std::size_t count) noexcept {
  for (; count != 0; --count, p += 64) block(h, p);
}

#ifdef FATPTE_SHA_X86
#define FATPTE_AVX2 __attribute__((target("avx2,bmi2"), always_inline)) inline

// sigma0 and sigma1 of step 1 on four words (a rotation is two shifts: their bits do not overlap).
FATPTE_AVX2 __m128i small_sigma(__m128i x, int r1, int r2, int s) noexcept {
  const __m128i rot1 = _mm_xor_si128(_mm_srli_epi32(x, r1), _mm_slli_epi32(x, 32 - r1));
  const __m128i rot2 = _mm_xor_si128(_mm_srli_epi32(x, r2), _mm_slli_epi32(x, 32 - r2));
  return _mm_xor_si128(_mm_xor_si128(rot1, rot2), _mm_srli_epi32(x, s));
}

// Step 1 four words at a time, and kw = K + W in the same pass. W[i..i+3] takes sigma1 of
// W[i-2..i+1]: the first two known, the last two the words just made, shifted into place (a lane
// of zeros adds sigma1(0) = 0). The compiler's own vectorization took two words at a time.
FATPTE_AVX2 void schedule_x4(const std::uint8_t* p, std::uint32_t w[64], std::uint32_t kw[64]) noexcept {
  const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);  // each word's bytes
  const auto at = [](const std::uint32_t* q) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)); };
  const auto put = [](std::uint32_t* q, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(q), v); };
  for (int i = 0; i < 16; i += 4) {
    const __m128i m = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4 * i)), swap);
    put(w + i, m);
    put(kw + i, _mm_add_epi32(m, at(kK + i)));
  }
  for (int i = 16; i < 64; i += 4) {
    __m128i t = _mm_add_epi32(_mm_add_epi32(at(w + i - 16), at(w + i - 7)), small_sigma(at(w + i - 15), 7, 18, 3));
    t = _mm_add_epi32(t, small_sigma(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + i - 2)), 17, 19, 10));
    t = _mm_add_epi32(t, small_sigma(_mm_slli_si128(t, 8), 17, 19, 10));
    put(w + i, t);
    put(kw + i, _mm_add_epi32(t, at(kK + i)));
  }
}

__attribute__((target("avx2,bmi2"))) void blocks_avx2_bmi2(std::uint32_t h[8], const std::uint8_t* p,
                                                            std::size_t count) noexcept {
  std::uint32_t w[64], kw[64];
  for (; count != 0; --count, p += 64) {
    schedule_x4(p, w, kw);
    rounds(h, kw);
  }
}

#undef FATPTE_AVX2

// Four rounds at a time in the SHA extensions' instructions, the state held as ABEF and CDGH.
__attribute__((target("sha,sse4.1"))) void blocks_sha_ni(std::uint32_t h[8], const std::uint8_t* p,
                                                          std::size_t count) noexcept {
  const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);  // each word's bytes
  const __m128i dcba = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)), 0xB1);
  const __m128i hgfe = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4)), 0x1B);
  __m128i abef = _mm_alignr_epi8(dcba, hgfe, 8), cdgh = _mm_blend_epi16(hgfe, dcba, 0xF0);
  for (; count != 0; --count, p += 64) {
    const __m128i abef_was = abef, cdgh_was = cdgh;
    __m128i m[4];  // W of the next four groups of four rounds
    for (int g = 0; g < 4; ++g) {
      m[g] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)), swap);
    }
    for (int g = 0; g < 16; ++g) {
      __m128i kw = _mm_add_epi32(m[g & 3], _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK + 4 * g)));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, kw);
      if (g < 12) {  // W of group g + 4 (step 1), from groups g to g + 3
        const __m128i sum = _mm_add_epi32(_mm_sha256msg1_epu32(m[g & 3], m[(g + 1) & 3]),
                                          _mm_alignr_epi8(m[(g + 3) & 3], m[(g + 2) & 3], 4));
        m[g & 3] = _mm_sha256msg2_epu32(sum, m[(g + 3) & 3]);
      }
      kw = _mm_shuffle_epi32(kw, 0x0E);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, kw);
    }
    abef = _mm_add_epi32(abef, abef_was);
    cdgh = _mm_add_epi32(cdgh, cdgh_was);
  }
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B), dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}
#endif

#ifdef FATPTE_SHA_ARM
// Four rounds at a time in ARMv8's SHA2 instructions, the state held as ABCD and EFGH. GCC 12's
// arm_neon.h declares them under "+crypto" (SHA2 and AES) and refuses to inline them into a
// "+sha2" function; only SHA2 instructions are used, so a CPU with SHA2 and without AES runs it.
__attribute__((target("+crypto"))) void blocks_armv8_sha2(std::uint32_t h[8], const std::uint8_t* p,
                                                           std::size_t count) noexcept {
  uint32x4_t abcd = vld1q_u32(h), efgh = vld1q_u32(h + 4);
  for (; count != 0; --count, p += 64) {
    const uint32x4_t abcd_was = abcd, efgh_was = efgh;
    uint32x4_t m[4];  // W of the next four groups of four rounds, each word's bytes swapped
    for (int g = 0; g < 4; ++g) m[g] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * g)));
    // Unrolled, so that m stays in registers (GCC 12 at -O2 kept the loop and m on the stack: 417
    // instructions a block, against 123 unrolled).
#pragma GCC unroll 16
    for (int g = 0; g < 16; ++g) {
      const uint32x4_t kw = vaddq_u32(m[g & 3], vld1q_u32(kK + 4 * g));
      if (g < 12) {  // W of group g + 4 (step 1), from groups g to g + 3
        m[g & 3] = vsha256su1q_u32(vsha256su0q_u32(m[g & 3], m[(g + 1) & 3]), m[(g + 2) & 3], m[(g + 3) & 3]);
      }
      const uint32x4_t abcd_before = abcd;
      abcd = vsha256hq_u32(abcd, efgh, kw);
      efgh = vsha256h2q_u32(efgh, abcd_before, kw);
    }
    abcd = vaddq_u32(abcd, abcd_was);
    efgh = vaddq_u32(efgh, efgh_was);
  }
  vst1q_u32(h, abcd);
  vst1q_u32(h + 4, efgh);
}
#endif

using Blocks = void (*)(std::uint32_t h[8], const std::uint8_t* p, std::size_t count) noexcept;

Blocks blocks_of(Sha256Path path) noexcept {
#ifdef FATPTE_SHA_X86
  if (path == Sha256Path::kShaNi) return blocks_sha_ni;
  if (path == Sha256Path::kAvx2Bmi2) return blocks_avx2_bmi2;
#endif
#ifdef FATPTE_SHA_ARM
  if (path == Sha256Path::kArmv8Sha2) return blocks_armv8_sha2;
#endif
  (void)path;
  return blocks_portable;
}

}  // namespace

bool sha256_path_available(Sha256Path path) noexcept {
#ifdef FATPTE_SHA_X86
  // From probe::x86_words (glibc's record of the cpuid words, as crc32c.cpp): under valgrind,
  // whose CPU lacks the SHA extensions, these are its words, so the portable paths run there.
  static const probe::X86Words kWords = probe::x86_words();
  const bool ymm = ((kWords.leaf1_ecx >> 27) & 1u) != 0 && ((kWords.leaf1_ecx >> 28) & 1u) != 0 &&
                   (kWords.xcr0 & 6u) == 6u;  // OSXSAVE, AVX, and the OS saves the YMM state
  if (path == Sha256Path::kAvx2Bmi2) return ymm && ((kWords.leaf7_ebx >> 5) & 1u) && ((kWords.leaf7_ebx >> 8) & 1u);
  if (path == Sha256Path::kShaNi) {
    return ((kWords.leaf7_ebx >> 29) & 1u) && ((kWords.leaf1_ecx >> 19) & 1u) && ((kWords.leaf1_ecx >> 9) & 1u);
  }
#endif
#ifdef FATPTE_SHA_ARM
  // From probe::arm_words, the reader of the AT_HWCAP words the host probe decodes too.
  static const bool kSha2 = sha256_arm_path(probe::arm_words().hwcap) == Sha256Path::kArmv8Sha2;
  if (path == Sha256Path::kArmv8Sha2) return kSha2;
#endif
  return path == Sha256Path::kPortable;
}

Sha256Path sha256_arm_path(std::uint64_t hwcap) noexcept {
  constexpr std::uint64_t kHwcapSha2 = 1u << 6;  // HWCAP_SHA2, arch/arm64/include/uapi/asm/hwcap.h
  return (hwcap & kHwcapSha2) != 0 ? Sha256Path::kArmv8Sha2 : Sha256Path::kPortable;
}

Sha256Path sha256_fastest_path() noexcept {
  static const Sha256Path kFastest = [] {
    for (const Sha256Path path : {Sha256Path::kShaNi, Sha256Path::kArmv8Sha2, Sha256Path::kAvx2Bmi2}) {
      if (sha256_path_available(path)) return path;
    }
    return Sha256Path::kPortable;
  }();
  return kFastest;
}

Sha256::Sha256() noexcept : Sha256(sha256_fastest_path()) {}

Sha256::Sha256(Sha256Path path) noexcept
    : blocks_(blocks_of(path)),
      h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::update(const void* data, std::size_t size) noexcept {
  if (size == 0) return;
  const auto* p = static_cast<const std::uint8_t*>(data);
  total_ += size;
  if (used_ != 0) {
    const std::size_t take = size < 64 - used_ ? size : 64 - used_;
    std::memcpy(pending_ + used_, p, take);
    used_ += take;
    p += take;
    size -= take;
    if (used_ < 64) return;
    blocks_(h_, pending_, 1);
    used_ = 0;
  }
  blocks_(h_, p, size / 64);
  used_ = size % 64;
  if (used_ != 0) std::memcpy(pending_, p + size - used_, used_);
}

std::array<std::uint8_t, 32> Sha256::finish() noexcept {
  const std::uint64_t bits = total_ * 8;  // step 5.1.1: a one bit, zeros, the length in bits
  std::uint8_t tail[128] = {0};
  std::memcpy(tail, pending_, used_);
  tail[used_] = 0x80;
  const std::size_t tail_len = used_ + 9 <= 64 ? 64 : 128;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<std::uint8_t>(bits >> (8 * i));
  blocks_(h_, tail, tail_len / 64);
  std::array<std::uint8_t, 32> out{};
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<std::uint8_t>(h_[i] >> (24 - 8 * j));
  }
  return out;
}

std::array<std::uint8_t, 32> sha256(const std::uint8_t* data, std::size_t size) noexcept {
  Sha256 s;
  if (size != 0) s.update(data, size);
  return s.finish();
}

std::string to_hex(const std::array<std::uint8_t, 32>& digest) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(64, '0');
  for (std::size_t i = 0; i < 32; ++i) {
    out[2 * i] = kDigits[digest[i] >> 4];
    out[2 * i + 1] = kDigits[digest[i] & 15];
  }
  return out;
}

}  // namespace detail
}  // namespace fatpte
