// SHA-256 (FIPS 180-4), for the manifest's optional payload digests. Small and dependency-free:
// the loader links no crypto library, and digests are checked once per validation.
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
