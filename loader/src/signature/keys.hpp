// The keys room of signature/ (loader/layers.toml [rooms], lowest after libcrypto): the trusted
// public keys a verifier reads (specs/nfat-signature.md sections 5.2 and 5.4, TrustedKeys of
// fatpte/signature.hpp), their key ids, the two signature algorithms (ECDSA P-256 with SHA-256,
// Ed25519), and the libcrypto primitives every higher room hashes and decodes with. As
// fatpte/ops/signing/keys.py.
#ifndef FATPTE_SRC_SIGNATURE_KEYS_HPP_
#define FATPTE_SRC_SIGNATURE_KEYS_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fatpte/signature.hpp"

namespace fatpte {
namespace signing {

// SHA-256 with libcrypto. Every caller runs with a TrustedKeys in hand, so the library is open.
Digest sha256(const std::uint8_t* data, std::size_t size);
// A digest as lowercase hexadecimal.
std::string hex(const Digest& d);
// Standard base64, padded, nothing else (section 2; signing's _BASE64) decoded into `out`; false
// when `text` breaks the rule.
bool base64_decode(std::string_view text, std::vector<std::uint8_t>& out);
// Whether `sig` is `key`'s signature of `message` (Ed25519, or ECDSA P-256 over SHA-256).
bool verifies(const TrustedKeys::Key& key, const std::vector<std::uint8_t>& sig,
              const std::vector<std::uint8_t>& message);

}  // namespace signing
}  // namespace fatpte

#endif  // FATPTE_SRC_SIGNATURE_KEYS_HPP_
