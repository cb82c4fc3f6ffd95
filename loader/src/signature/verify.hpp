// The verify room of signature/ (loader/layers.toml [rooms], the highest): fatpte/signature.hpp's
// check_signature, check_entry_bytes, check_all_bytes and check_downgrade, specs/nfat-signature.md
// section 6 as a driver over one function per numbered step, in the canonical order that
// fatpte/ops/signing/verification.py follows too. Here: steps 1 to 8 with their work counted, so
// tests can show it is bounded by the input (issue 33: S2, S5, S6) by counting, not timing.
#ifndef FATPTE_SRC_SIGNATURE_VERIFY_HPP_
#define FATPTE_SRC_SIGNATURE_VERIFY_HPP_

#include <cstdint>

#include "fatpte/container.hpp"
#include "fatpte/result.hpp"
#include "fatpte/signature.hpp"

namespace fatpte {
namespace detail {

struct SignatureWork {
  std::uint64_t json_bytes = 0;         // the most a parsed bundle or statement held (json::Document::memory)
  std::uint64_t records_looked_up = 0;  // manifest records found for table entries (one lookup each)
  std::uint64_t record_bytes = 0;       // canonical record bytes built and hashed
};

// check_signature, adding its work to `*work` when not null.
Result<SignatureCheck> check_signature(const Container& c, const TrustedKeys& keys, Bytes detached,
                                       SignatureWork* work);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_SIGNATURE_VERIFY_HPP_
