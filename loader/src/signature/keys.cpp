// The keys room of signature/ (signature/keys.hpp): trusted-key files read under section 5.4's
// rules, key ids (section 5.2), TrustedKeys, and the libcrypto primitives (SHA-256, base64, the
// two signature algorithms) the higher rooms use.
#include "signature/keys.hpp"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/json.hpp"

#if FATPTE_WITH_OPENSSL
#include "signature/libcrypto.hpp"
#endif

namespace fatpte {

#if FATPTE_WITH_OPENSSL
namespace {

// OpenSSL, opened by TrustedKeys::load (signature/libcrypto.hpp). Every other function here runs with a
// TrustedKeys in hand, so the library is open by then.
const detail::LibCrypto& ossl() { return *detail::libcrypto(nullptr); }

bool base64_char(std::uint8_t c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

}  // namespace

namespace signing {

// The rule is checked here, the bytes are decoded by libcrypto's EVP_DecodeBlock (which alone
// would take surrounding whitespace).
bool base64_decode(std::string_view text, std::vector<std::uint8_t>& out) {
  const std::size_t n = text.size();
  std::size_t data = 0;
  while (data < n && base64_char(static_cast<std::uint8_t>(text[data]))) ++data;
  const std::size_t pad = n - data;
  for (std::size_t k = data; k < n; ++k) {
    if (text[k] != '=') return false;
  }
  if (n % 4 != 0 || pad > 2) return false;  // whole quads, padded with one or two '='
  out.resize(n / 4 * 3);
  if (n == 0) return true;
  const int got = ossl().decode_block(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                      static_cast<int>(n));  // n <= 64 MiB, the bundle's limit
  if (got < 0 || static_cast<std::size_t>(got) != out.size()) return false;
  out.resize(out.size() - pad);
  return true;
}

Digest sha256(const std::uint8_t* data, std::size_t size) {
  Digest d{};
  unsigned int n = 0;
  ossl().digest(data, size, d.data(), &n, ossl().sha256(), nullptr);
  return d;
}

std::string hex(const Digest& d) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (const std::uint8_t b : d) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

// Whether the signature vouches for the golden calls of an entry whose record matched `s` (section
// 6.1): the statement states their digest (revision 3; step 7e checked it), or the signed record's

bool verifies(const TrustedKeys::Key& trusted, const std::vector<std::uint8_t>& sig,
              const std::vector<std::uint8_t>& message) {
  EVP_PKEY* key = static_cast<EVP_PKEY*>(trusted.pkey);
  const detail::LibCrypto& f = ossl();
  EVP_MD_CTX* ctx = f.md_ctx_new();
  if (ctx == nullptr) return false;
  const bool ed = f.pkey_get_id(key) == EVP_PKEY_ED25519;
  bool ok = f.digest_verify_init(ctx, nullptr, ed ? nullptr : f.sha256(), nullptr, key) == 1 &&
            f.digest_verify(ctx, sig.data(), sig.size(), message.data(), message.size()) == 1;
  f.md_ctx_free(ctx);
  return ok;
}

}  // namespace signing

namespace {

using signing::base64_decode;
using signing::hex;
using signing::sha256;

// ---- trusted-key files (specs/nfat-signature.md section 5.4) ----

constexpr std::uint64_t kMaxKeyFileSize = 64 << 10;  // signing.MAX_KEY_FILE_SIZE
constexpr std::string_view kPemBegin = "-----BEGIN PUBLIC KEY-----";
constexpr std::string_view kPemEnd = "-----END PUBLIC KEY-----";
constexpr std::uint8_t kEcPublicKeyOid[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01};        // 1.2.840.10045.2.1
constexpr std::uint8_t kPrime256v1Oid[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};  // 1.2.840.10045.3.1.7
// The canonical P-256 SubjectPublicKeyInfo of section 5.2 before its point: SEQUENCE { SEQUENCE {
// id-ecPublicKey, prime256v1 }, BIT STRING (no unused bits) { 04 || X || Y } }, 91 bytes in all.
constexpr std::uint8_t kP256SpkiHead[] = {0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
                                          0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00};
constexpr std::size_t kP256Point = 65;

// The lines of ASCII text as Python's str.splitlines cuts them (LF, CR, CRLF, VT, FF, FS, GS, RS).
std::vector<std::string_view> text_lines(std::string_view t) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e') {
      lines.push_back(t.substr(start, i - start));
      if (c == '\r' && i + 1 < t.size() && t[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < t.size()) lines.push_back(t.substr(start));
  return lines;
}

// One DER element inside [pos, end): its tag and its contents' range; false when it does not fit.
struct DerElement {
  std::uint8_t tag;
  std::size_t begin, end;
};
bool der_element(const std::vector<std::uint8_t>& d, std::size_t pos, std::size_t end, DerElement& out) {
  if (end < 2 || pos > end - 2) return false;
  const std::uint8_t tag = d[pos];
  std::size_t size = d[pos + 1];
  pos += 2;
  if ((size & 0x80) != 0) {
    const std::size_t n = size & 0x7F;
    if (n < 1 || n > 4 || n > end - pos) return false;
    size = 0;
    for (std::size_t k = 0; k < n; ++k) size = size << 8 | d[pos + k];
    pos += n;
  }
  if (size > end - pos) return false;
  out = DerElement{tag, pos, pos + size};
  return true;
}

// Whether a SubjectPublicKeyInfo is an ECDSA key on anything but the named curve prime256v1
// (explicit parameters, another curve, none): refused before it is parsed, as RFC 5480 forbids
// explicit parameters in public keys. Another algorithm, or DER too damaged to tell, is left to
// d2i_PUBKEY. As signing/keys.py's _ec_parameters.
bool ec_off_named_p256(const std::vector<std::uint8_t>& der) {
  DerElement outer, algorithm, oid, params;
  if (!der_element(der, 0, der.size(), outer) || outer.tag != 0x30) return false;
  if (!der_element(der, outer.begin, outer.end, algorithm) || algorithm.tag != 0x30) return false;
  if (!der_element(der, algorithm.begin, algorithm.end, oid) || oid.tag != 0x06 ||
      oid.end - oid.begin != sizeof kEcPublicKeyOid ||
      std::memcmp(der.data() + oid.begin, kEcPublicKeyOid, sizeof kEcPublicKeyOid) != 0) {
    return false;
  }
  return !der_element(der, oid.end, algorithm.end, params) || params.tag != 0x06 ||
         params.end - params.begin != sizeof kPrime256v1Oid ||
         std::memcmp(der.data() + params.begin, kPrime256v1Oid, sizeof kPrime256v1Oid) != 0;
}

// The DER SubjectPublicKeyInfo a trusted-key file holds: ASCII; after leading and trailing space,
// tab, CR and LF, exactly one PEM block labelled PUBLIC KEY and nothing else (no certificate or
// private key before it, no text); its lines base64, together standard base64 (section 2); an
// ECDSA key on the named curve P-256. INVALID_ARGUMENT at field `key` otherwise.
Status key_file_der(const std::string& text, const std::string& path, std::vector<std::uint8_t>& der) {
  const auto refuse = [&path](const char* why) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "key", "%s is not a trusted-key file: %s", path.c_str(), why);
  };
  for (const char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return refuse("it holds bytes that are not ASCII");
  }
  std::string_view t(text);
  const std::size_t first = t.find_first_not_of(" \t\r\n");
  t = first == std::string_view::npos ? std::string_view() : t.substr(first, t.find_last_not_of(" \t\r\n") - first + 1);
  const std::vector<std::string_view> lines = text_lines(t);
  if (lines.size() < 2 || lines.front() != kPemBegin || lines.back() != kPemEnd) {
    return refuse("it must hold one PEM block, -----BEGIN PUBLIC KEY----- to -----END PUBLIC KEY-----, and nothing "
                  "else (no certificate, no private key, no other text)");
  }
  std::string body;
  for (std::size_t k = 1; k + 1 < lines.size(); ++k) {
    if (lines[k].empty() || lines[k].find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") !=
                                std::string_view::npos) {
      return refuse("a line of the PEM block is not base64 (or a second block follows the first)");
    }
    body += lines[k];
  }
  if (!base64_decode(body, der)) return refuse("the PEM block is not standard base64");
  if (ec_off_named_p256(der)) {
    return refuse("an ECDSA key must name its curve, P-256 (prime256v1); explicit curve parameters are refused "
                  "(RFC 5480): convert it with `openssl ec -pubin -in KEY -param_enc named_curve`");
  }
  return Status();
}

// The key a trusted-key file holds, with its id (section 5.2): the SHA-256 of the canonical
// SubjectPublicKeyInfo, so a compressed point has the id of the same key uncompressed.
Status trusted_key(const std::string& path, EVP_PKEY*& key, std::string& key_id) {
  const detail::LibCrypto& f = ossl();
  bool more = false;
  Result<std::string> text = json::read_head(path, kMaxKeyFileSize, "the key", more);
  if (!text.ok()) return text.error();
  if (more) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "key", "%s is larger than %llu bytes: not a key file",
                path.c_str(), static_cast<unsigned long long>(kMaxKeyFileSize));
  }
  std::vector<std::uint8_t> der;
  FATPTE_RETURN_IF_ERROR(key_file_der(text.value(), path, der));
  // Strict DER, as Python's parser: the whole block is one SubjectPublicKeyInfo that encodes back
  // to the same bytes (no trailing data, no BER lengths).
  const unsigned char* p = der.data();
  key = f.d2i_pubkey(nullptr, &p, static_cast<long>(der.size()));
  unsigned char* back = nullptr;
  const int n = key == nullptr ? -1 : f.i2d_pubkey(key, &back);
  const bool exact = key != nullptr && p == der.data() + der.size() && n == static_cast<int>(der.size()) &&
                     std::memcmp(back, der.data(), der.size()) == 0;
  if (back != nullptr) f.crypto_free(back, OPENSSL_FILE, OPENSSL_LINE);
  if (!exact) {
    if (key != nullptr) f.pkey_free(key);
    key = nullptr;
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "key", "%s is not a PEM public key (a DER SubjectPublicKeyInfo)",
                path.c_str());
  }
  const int type = f.pkey_get_id(key);
  std::uint8_t point[kP256Point + 1] = {0};
  std::size_t point_size = 0;
  char group[64] = {0};
  std::size_t group_size = 0;
  const bool p256 = type == EVP_PKEY_EC &&
                    f.pkey_get_utf8_string_param(key, "group", group, sizeof group, &group_size) == 1 &&
                    std::strcmp(group, "prime256v1") == 0 &&
                    f.pkey_get_octet_string_param(key, "encoded-pub-key", point, sizeof point, &point_size) == 1 &&
                    point_size == kP256Point && point[0] == 0x04;
  if (type != EVP_PKEY_ED25519 && !p256) {
    f.pkey_free(key);
    key = nullptr;
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "key", "%s holds a key other than ECDSA P-256 or Ed25519",
                path.c_str());
  }
  if (p256) {  // re-encoded uncompressed on its named curve
    std::vector<std::uint8_t> canonical(kP256SpkiHead, kP256SpkiHead + sizeof kP256SpkiHead);
    canonical.insert(canonical.end(), point, point + kP256Point);
    key_id = hex(sha256(canonical.data(), canonical.size()));
  } else {  // Ed25519 has one form (RFC 8410), the bytes read
    key_id = hex(sha256(der.data(), der.size()));
  }
  return Status();
}

}  // namespace

bool signatures_supported() noexcept { return true; }

TrustedKeys::~TrustedKeys() {
  for (Key& k : keys_) ossl().pkey_free(static_cast<EVP_PKEY*>(k.pkey));
}

Result<std::shared_ptr<const TrustedKeys>> TrustedKeys::load(const std::vector<std::string>& pem_paths) {
  std::string why;
  const detail::LibCrypto* lib = detail::libcrypto(&why);
  FATPTE_CHECK(lib != nullptr, Error::SIGNATURE_UNSUPPORTED, kNoOffset, "key", "%s", why.c_str());
  std::shared_ptr<TrustedKeys> out(new TrustedKeys());
  for (const std::string& path : pem_paths) {
    EVP_PKEY* key = nullptr;
    std::string id;
    FATPTE_RETURN_IF_ERROR(trusted_key(path, key, id));
    out->keys_.push_back(Key{id, path, key});
  }
  FATPTE_CHECK(!out->keys_.empty(), Error::INVALID_ARGUMENT, kNoOffset, "key", "no trusted public key");
  return std::shared_ptr<const TrustedKeys>(out);
}

#else  // !FATPTE_WITH_OPENSSL

bool signatures_supported() noexcept { return false; }

TrustedKeys::~TrustedKeys() = default;

Result<std::shared_ptr<const TrustedKeys>> TrustedKeys::load(const std::vector<std::string>&) {
  return fail(Error::SIGNATURE_UNSUPPORTED, kNoOffset, "signature",
              "libfatpte was built without signature support (FATPTE_SIGNATURES=OFF, no OpenSSL)");
}

#endif  // FATPTE_WITH_OPENSSL

}  // namespace fatpte
