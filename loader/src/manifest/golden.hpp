// An entry's golden calls as the manifest states them (specs/nfat-manifest.md section 11): their
// canonical encoding and its digest (11.3), and whether a golden tensor fits a method's tensor
// (11.2). fatpte/manifest/model.py's golden_encoding, golden_digest and golden_fit_problem.
#ifndef FATPTE_SRC_MANIFEST_GOLDEN_HPP_
#define FATPTE_SRC_MANIFEST_GOLDEN_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "nfat_manifest_generated.h"

namespace fatpte {
namespace detail {

// The provenance key that records the digest of an entry's golden calls.
inline constexpr const char* kGoldenDigestKey = "fatpte.golden.sha256";

// str("nfat.golden/1") list(call: str method, list(str input), list(output: str key, u64 atol, u64 rtol)).
std::vector<std::uint8_t> golden_encoding(const nfat::manifest::Entry& entry);
// The same of an entry that may have no manifest record (nullptr: no golden calls, an empty list).
std::vector<std::uint8_t> golden_encoding(const nfat::manifest::Entry* entry);
// The SHA-256 of golden_encoding(entry), lowercase hex.
std::string golden_digest_hex(const nfat::manifest::Entry& entry);
// The value of provenance key `key` of `entry`, or nullptr.
const ::flatbuffers::String* provenance_value(const nfat::manifest::Entry& entry, const char* key);

// The dtype of the one-element tensor a golden call gives for a method's value of ExecuTorch kind
// `kind` (Int, Double, Bool), or nullptr when `kind` is no such kind.
const char* golden_scalar_dtype(const std::string& kind);
// Whether a layout's dim order is empty or 0, 1, ..., rank - 1 (a golden tensor is row-major).
bool contiguous_layout(const nfat::manifest::TensorLayout& layout);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_MANIFEST_GOLDEN_HPP_
