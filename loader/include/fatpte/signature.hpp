// signature.hpp: verifying a signed container (specs/nfat-signature.md) in C++, as
// fatpte/ops/signing/ does, with the same checks in the same order, so both report the same
// code, offset and field. Cryptography is OpenSSL's libcrypto; a build configured with
// -DFATPTE_SIGNATURES=OFF has these functions, which then fail with SIGNATURE_UNSUPPORTED.
//
// Verification is split so that a loader hashes only what it loads: `check_signature` runs
// steps 1 to 8 (bundle, signature, statement, the entries' table fields and manifest records,
// the named-data keys), which read no payload or segment byte; `check_entry_bytes` runs steps 9
// and 10 for one entry and the keys it uses, before that entry's bytes reach a backend. Before
// step 1 the manifest passes the loader's manifest rules and work budget (the container's memo,
// the same check selection and loading use) and each key's segment exists; the work after is
// linear in the entries and keys.
#ifndef FATPTE_SIGNATURE_HPP_
#define FATPTE_SIGNATURE_HPP_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/device.hpp"
#include "fatpte/result.hpp"

namespace fatpte {

// The public keys a verifier trusts (ECDSA P-256 or Ed25519, PEM SubjectPublicKeyInfo files).
class TrustedKeys {
 public:
  static Result<std::shared_ptr<const TrustedKeys>> load(const std::vector<std::string>& pem_paths);
  ~TrustedKeys();
  TrustedKeys(const TrustedKeys&) = delete;
  TrustedKeys& operator=(const TrustedKeys&) = delete;

  struct Key {
    std::string key_id;  // SHA-256 of the DER SubjectPublicKeyInfo, lowercase hex
    std::string source;
    void* pkey = nullptr;  // EVP_PKEY*, owned
  };
  const std::vector<Key>& keys() const noexcept { return keys_; }

 private:
  TrustedKeys() = default;
  std::vector<Key> keys_;
};

// What one entry of the container is, as far as the signature says.
enum class EntryState : int {
  kUnsigned = 0,  // not in the statement (E1307)
  kSigned = 1,    // table fields and manifest record match; bytes not hashed yet
  kVerified = 2,  // and its payload and named data hash as signed
  kTampered = 3,  // a field, its record or its bytes differ from the statement
};

using Digest = std::array<std::uint8_t, 32>;

namespace detail {
struct SignedEntries;  // signature/verify.cpp: what the statement says of every entry, for step 11
}  // namespace detail

// Steps 1 to 8 of the verification, and what steps 9 and 10 need.
struct SignatureCheck {
  std::string key_id;                    // the trusted key that verified the envelope
  std::vector<EntryState> states;        // per entry of the container, table order
  std::vector<std::string> thinned;      // signed entries the container does not hold
  Status first_error;                    // the first finding of steps 7 and 8 (OK when none)
  // For steps 9 and 10:
  std::vector<int> statement_index;      // per container entry: its index in the statement, -1 when unsigned
  std::vector<Digest> payload_digests;   // per statement entry: its subject's digest
  struct Key {
    std::string key;
    std::uint32_t segment = 0;
    bool signed_key = false;
    Digest digest{};
  };
  std::vector<Key> keys;                             // the manifest's keys, in its order
  std::vector<std::vector<std::uint32_t>> entry_keys;  // per container entry: indices into `keys` it lists
  // Per container entry: a signed entry with golden calls the signature does not vouch for
  // (specs/nfat-signature.md section 6.1: a statement before revision 3, no golden digest in its
  // signed provenance). A signed self-test does not run them, and never rejects the entry for them.
  std::vector<bool> golden_unsigned;
  // For step 11: the statement's entries, and where findings about the statement are reported
  // (the embedded signature's offset; kNoOffset for a detached one).
  std::shared_ptr<const detail::SignedEntries> statement;
  std::uint64_t signature_offset = kNoOffset;
};

// Steps 1 to 8 (`detached` may be empty: the embedded signature is used). A Result error is a
// failure of steps 1 to 6 (no per-entry report); failures of steps 7 and 8 are in first_error,
// with every entry's state.
Result<SignatureCheck> check_signature(const Container& c, const TrustedKeys& keys, Bytes detached);
// Steps 9 and 10 for entry `index` and the named-data keys it lists; updates its state.
Status check_entry_bytes(const Container& c, SignatureCheck& check, std::uint32_t index);
// Steps 9 and 10 for every signed entry, then every signed key, as Python's verify does.
Status check_all_bytes(const Container& c, SignatureCheck& check);
// Step 11, the downgrade check, when a caller asks for it (off by default, specs/nfat-signature.md
// section 6): selection replayed for `device` over the entries the statement lists, each held one
// as the container's manifest describes it and each thinned one as its `selection` says. E1308 at
// the statement entry that wins and was thinned away, or at a thinned one whose statement does
// not say what it needs (revision 1).
Status check_downgrade(const Container& c, const SignatureCheck& check, const DeviceProfile& device,
                       const std::vector<std::string>& prefer = {}, const std::vector<std::string>& exclude = {});

// Whether this build verifies signatures (FATPTE_SIGNATURES).
bool signatures_supported() noexcept;

}  // namespace fatpte

#endif  // FATPTE_SIGNATURE_HPP_
