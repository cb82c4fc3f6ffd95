// libFuzzer target for signed containers (issue 33) under AddressSanitizer and
// UndefinedBehaviorSanitizer: fatpte::check_signature, check_all_bytes and check_downgrade (for
// x86-64-v3), as fatpte-verify and `fatpte-run --require-signature` run them, on a signature
// region built from valid structure. The input's first byte says what the rest is:
//
//   0  a bundle, in place of the embedded one of specs/vectors/v2-signed.nfat
//   1  a bundle, given detached for v2-sig-stripped.nfat (v2-signed without its region)
//   2  a statement (the envelope's payload), signed here with the Ed25519 conformance test key
//      (tests/support/vectors.py test_key: its seed is the SHA-256 of "fatpte conformance key
//      ed25519"), so every check after the signature reads it; embedded as in 0
//   3  a statement signed so, given detached as in 1
//   *  a whole container, with its own region
//
// The seed corpus (fuzz/seed_corpus.py) holds the vectors' bundles and statements, and those of
// the structure-aware generator (tests/strategies.hostile_signed_cases). Any sanitizer report,
// crash or leak is a finding.
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/crc32c.hpp"
#include "fatpte/format_generated.h"
#include "fatpte/profile.hpp"
#include "fatpte/signature.hpp"

#ifndef FATPTE_ROOT
#error "FATPTE_ROOT must name the repository"
#endif

namespace {

namespace F = fatpte::format;

const std::string kVectors = std::string(FATPTE_ROOT) + "/specs/vectors/";
constexpr const char* kPayloadType = "application/vnd.in-toto+json";
constexpr const char* kEd25519Id = "85b03ae42c4871a3dc7db5689fcdec52c6efc8b9886d62f9d63b7c4fb14aa459";

std::vector<std::uint8_t> file(const std::string& name) {
  std::ifstream in(kVectors + name, std::ios::binary);
  std::vector<std::uint8_t> out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (out.empty()) {
    std::fprintf(stderr, "fuzz_loader_signature: cannot read %s%s\n", kVectors.c_str(), name.c_str());
    std::abort();
  }
  return out;
}

std::uint64_t le(const std::vector<std::uint8_t>& b, std::size_t at, int size) {
  std::uint64_t v = 0;
  for (int k = size - 1; k >= 0; --k) v = v << 8 | b[at + static_cast<std::size_t>(k)];
  return v;
}
void put(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v, int size) {
  for (int k = 0; k < size; ++k) b[at + static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(v >> (8 * k));
}

struct Fixed {
  std::vector<std::uint8_t> signed_file = file("v2-signed.nfat");
  std::vector<std::uint8_t> stripped = file("v2-sig-stripped.nfat");
  std::shared_ptr<const fatpte::TrustedKeys> keys;
  fatpte::DeviceProfile device;
  EVP_PKEY* signer = nullptr;

  Fixed() {
    auto k = fatpte::TrustedKeys::load({kVectors + "trusted-ed25519.pub.pem", kVectors + "trusted-p256.pub.pem"});
    // By path: this program is not in the loader's build folder, so a profile name would be looked
    // up beside it as in an install tree (docs/cpp.md, "Install trees and the search order").
    auto d = fatpte::load_profile(std::string(FATPTE_ROOT) + "/specs/devices/x86-64-v3.json");
    if (!k.ok() || !d.ok()) {
      std::fprintf(stderr, "fuzz_loader_signature: the vector keys or the x86-64-v3 profile do not load\n");
      std::abort();
    }
    keys = k.value();
    device = d.value();
    const char label[] = "fatpte conformance key ed25519";
    unsigned char seed[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(label), sizeof label - 1, seed);
    signer = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed, sizeof seed);
  }
};

const Fixed& fixed() {
  static const Fixed& f = *new Fixed();  // never destroyed: the keys outlive every input
  return f;
}

std::string base64(const std::uint8_t* data, std::size_t size) {
  std::string out(4 * ((size + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]), data, static_cast<int>(size));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// A bundle whose envelope holds `statement`, signed with the Ed25519 test key (bundle_for's shape).
std::string bundle_over(const std::uint8_t* statement, std::size_t size) {
  std::string message = "DSSEv1 " + std::to_string(std::strlen(kPayloadType)) + " " + kPayloadType + " " +
                        std::to_string(size) + " ";
  message.append(reinterpret_cast<const char*>(statement), size);
  unsigned char sig[64];
  std::size_t sig_size = sizeof sig;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, fixed().signer) == 1 &&
                  EVP_DigestSign(ctx, sig, &sig_size, reinterpret_cast<const unsigned char*>(message.data()),
                                 message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) std::abort();
  return std::string("{\"mediaType\":\"application/vnd.dev.sigstore.bundle.v0.3+json\",") +
         "\"verificationMaterial\":{\"publicKey\":{\"hint\":\"" + kEd25519Id + "\"},\"tlogEntries\":[]}," +
         "\"dsseEnvelope\":{\"payload\":\"" + base64(statement, size) + "\",\"payloadType\":\"" + kPayloadType +
         "\",\"signatures\":[{\"sig\":\"" + base64(sig, sig_size) + "\",\"keyid\":\"\"}]}}";
}

// v2-signed.nfat with `bundle` as its region (last in the file): its size, CRC32C, the
// container's size and the header checksum written anew, as tests/support/vectors.with_bundle does.
std::vector<std::uint8_t> with_bundle(const std::string& bundle) {
  std::vector<std::uint8_t> out = fixed().signed_file;
  const std::size_t slot = F::kSignatureSlotOffset;
  const std::size_t at = static_cast<std::size_t>(le(out, slot, 8));
  out.resize(at);
  out.insert(out.end(), bundle.begin(), bundle.end());
  put(out, slot + 8, bundle.size(), 4);
  put(out, slot + 12, fatpte::crc32c(bundle.data(), bundle.size()), 4);
  put(out, F::kV2Header_container_size_offset, out.size(), 8);
  const std::uint64_t tables = le(out, F::kV2Header_header_size_offset, 4) +
                               le(out, F::kV2Header_entry_size_offset, 4) * le(out, F::kV2Header_entry_count_offset, 4) +
                               le(out, F::kV2Header_segment_entry_size_offset, 4) *
                                   le(out, F::kV2Header_segment_count_offset, 4);
  put(out, F::kHeaderChecksumOffset, 0, 4);
  put(out, F::kHeaderChecksumOffset, fatpte::crc32c(out.data(), static_cast<std::size_t>(tables)), 4);
  return out;
}

void verify(const std::vector<std::uint8_t>& container, const std::string* detached) {
  auto c = fatpte::Container::open_memory(container.data(), container.size());
  if (!c.ok()) return;
  const fatpte::Bytes sig = detached == nullptr
                                ? fatpte::Bytes{nullptr, 0}
                                : fatpte::Bytes{reinterpret_cast<const std::uint8_t*>(detached->data()),
                                                detached->size()};
  auto check = fatpte::check_signature(*c.value(), *fixed().keys, sig);
  if (!check.ok()) return;
  fatpte::SignatureCheck& done = check.value();
  const fatpte::Status bytes = fatpte::check_all_bytes(*c.value(), done);
  if (done.first_error.ok() && bytes.ok()) (void)fatpte::check_downgrade(*c.value(), done, fixed().device);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  ++data;
  --size;
  if (mode > 3) {
    verify(std::vector<std::uint8_t>(data, data + size), nullptr);
    return 0;
  }
  const std::string bundle = mode >= 2 ? bundle_over(data, size) : std::string(reinterpret_cast<const char*>(data), size);
  if (mode % 2 == 0) {
    verify(with_bundle(bundle), nullptr);
  } else {
    verify(fixed().stripped, &bundle);
  }
  return 0;
}
