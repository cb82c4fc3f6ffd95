// SHA-256 (FIPS 180-4), for the manifest's optional payload digests (manifest/rules.cpp), which
// validation checks on unsigned runs too. Signed paths hash with libcrypto (signature/), which
// libfatpte opens with dlopen only when a trusted key is loaded. This one stays hand-written because
// that libcrypto must stay unloaded on unsigned runs: opening libcrypto.so.3 (OpenSSL 3.0.22) and
// its first EVP_Digest cost 9.4 M instructions (callgrind) and about 2 ms, four times a whole
// `fatpte-run FILE --select-only --device x86-64-v3` (2.2 M); and a build without OpenSSL
// (FATPTE_SIGNATURES=OFF) or a device without libcrypto must still check digests. Its price is
// speed: 64 MiB in ~210 ms here against ~36 ms for libcrypto's (SHA-NI), even at about 1 MiB.
#ifndef FATPTE_SRC_COMMON_SHA256_HPP_
#define FATPTE_SRC_COMMON_SHA256_HPP_

#include <array>
#include <cstddef>
#include <cstdint>

namespace fatpte {
namespace detail {

std::array<std::uint8_t, 32> sha256(const std::uint8_t* data, std::size_t size) noexcept;

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_COMMON_SHA256_HPP_
