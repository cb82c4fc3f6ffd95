// SHA-256 (FIPS 180-4), for the manifest's optional payload digests (manifest/rules.cpp), which
// validation checks on unsigned runs too, and the keys of remembered verdicts and receipts
// (memory/identity.cpp). Signed paths hash with libcrypto (signature/), which
// libfatpte opens with dlopen only when a trusted key is loaded. This one stays hand-written because
// that libcrypto must stay unloaded on unsigned runs: opening libcrypto.so.3 (OpenSSL 3.0.22) and
// its first EVP_Digest cost 9.4 M instructions (callgrind) and about 2 ms, four times a whole
// `fatpte-run FILE --select-only --device x86-64-v3` (2.2 M); and a build without OpenSSL
// (FATPTE_SIGNATURES=OFF) or a device without libcrypto must still check digests. Its price is
// speed, paid back where the CPU tells it has more: x86-64's SHA extensions (SHA-NI), else AVX2
// and BMI2 (rotations without moves, the message schedule four words at a time); aarch64's SHA2
// instructions where getauxval(AT_HWCAP) has HWCAP_SHA2; chosen at run time. Each path agrees
// with the portable one on every test vector (loader/tests/select_test.cpp, on aarch64 under
// qemu-aarch64). 64 MiB here (2026-11-28, a loaded 2-core VM): portable 405 ms, AVX2+BMI2 347 ms,
// SHA-NI 86 ms. On aarch64, instructions a block (GCC 12, counted under qemu-aarch64 by
// bench/qemu_insn.c; bench/qemu_count.py): portable 2,044, SHA2 instructions 123.
#ifndef FATPTE_SRC_COMMON_SHA256_HPP_
#define FATPTE_SRC_COMMON_SHA256_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fatpte {
namespace detail {

// The ways a block can be hashed: the portable C++ one always, the others where the CPU has them.
enum class Sha256Path { kPortable, kAvx2Bmi2, kShaNi, kArmv8Sha2 };
bool sha256_path_available(Sha256Path path) noexcept;
// The path Sha256() takes on this CPU: SHA-NI, ARMv8 SHA2, AVX2+BMI2, the first available, else
// the portable one.
Sha256Path sha256_fastest_path() noexcept;
// aarch64's choice from the word getauxval(AT_HWCAP) gives: kArmv8Sha2 with HWCAP_SHA2 (bit 6),
// else kPortable. A function of the word alone, so that both answers are tested on any machine.
Sha256Path sha256_arm_path(std::uint64_t hwcap) noexcept;

// A digest over pieces given in turn (a text and what follows it), without joining them first.
class Sha256 {
 public:
  Sha256() noexcept;  // the fastest path this CPU has
  explicit Sha256(Sha256Path path) noexcept;  // one that sha256_path_available says it has
  void update(const void* data, std::size_t size) noexcept;
  std::array<std::uint8_t, 32> finish() noexcept;

 private:
  void (*blocks_)(std::uint32_t h[8], const std::uint8_t* p, std::size_t count) noexcept;
  std::uint32_t h_[8];
  std::uint8_t pending_[64];
  std::size_t used_ = 0;  // bytes in pending_
  std::uint64_t total_ = 0;
};

std::array<std::uint8_t, 32> sha256(const std::uint8_t* data, std::size_t size) noexcept;
// 64 lowercase hex digits.
std::string to_hex(const std::array<std::uint8_t, 32>& digest);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_COMMON_SHA256_HPP_
