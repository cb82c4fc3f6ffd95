// Verifying signed containers (specs/nfat-signature.md), mirroring fatpte/ops/signing/ check for
// check and in its order: the bundle read as strict JSON, the DSSE signature with OpenSSL's
// libcrypto, the in-toto statement, then the container's entries and named-data keys against it.
// Every input is bounded (64 MiB bundle of at most 4096 JSON values, 16 levels of JSON, 16
// signatures of at most 512 base64 characters), so a hostile bundle costs work linear in its size.
#include "fatpte/signature.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/json.hpp"
#include "common/text.hpp"
#include "container/manifest_view.hpp"
#include "device/requirements.hpp"
#include "manifest/golden.hpp"
#include "nfat_manifest_generated.h"
#include "signature/check.hpp"

#if FATPTE_WITH_OPENSSL
#include "signature/libcrypto.hpp"
#endif

namespace fatpte {

// What the statement says of every entry, in its order (each an Entry whose index is its place
// in the statement), and its `selection` member: what the downgrade check (step 11) ranks.
struct detail::SignedEntries {
  std::vector<Entry> entries;
  std::vector<std::optional<detail::Requirements>> selections;
};

#if FATPTE_WITH_OPENSSL
namespace {

namespace F = format;
namespace M = nfat::manifest;

// OpenSSL, opened by TrustedKeys::load (signature/libcrypto.hpp). Every other function here runs with a
// TrustedKeys in hand, so the library is open by then.
const detail::LibCrypto& ossl() { return *detail::libcrypto(nullptr); }

constexpr const char* kBundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json";
constexpr const char* kPayloadType = "application/vnd.in-toto+json";
constexpr const char* kStatementType = "https://in-toto.io/Statement/v1";
constexpr const char* kPredicateType = "https://fatpte.dev/nfat-signature/v1";
constexpr const char* kEntrySubject = "entries/";
constexpr const char* kNamedDataSubject = "named_data/";
constexpr const char* kEntryRecordTag = "nfat.manifest.entry/1";
constexpr const char* kNamedDataRecordTag = "nfat.named_data/1";
constexpr int kMaxJsonDepth = 16;           // signing.MAX_JSON_DEPTH
constexpr std::size_t kMaxSignatures = 16;  // signing.MAX_SIGNATURES
constexpr std::size_t kMaxSigBase64 = 512;  // signing.MAX_SIG_BASE64
constexpr std::size_t kMaxHint = 256;       // signing.MAX_HINT
constexpr std::size_t kMaxTextBytes = 4096;  // signing.MAX_TEXT_BYTES
constexpr std::size_t kMaxBundleValues = 4096;  // signing.MAX_BUNDLE_VALUES

// ---- strict JSON (specs/nfat-signature.md section 2) ----

using json::Kind;
using json::Value;

// Section 2's rules: UTF-8, no key twice, integers of 64 bits only, 16 levels counting scalars
// (signing.MAX_JSON_DEPTH, as Python counts them), no lone surrogate; and for the bundle, read
// before anything vouches for it, at most kMaxBundleValues values, refused as they are counted.
Result<json::Document> read_json(const std::uint8_t* data, std::size_t size, std::size_t max_values) {
  json::Options rules;
  rules.utf8 = true;
  rules.max_depth = kMaxJsonDepth;
  rules.fractions = false;
  rules.int64 = true;
  rules.max_values = max_values;
  return json::parse(std::string_view(reinterpret_cast<const char*>(data), size), rules);
}

// ---- findings ----

// Every finding about the bundle or the statement is at the embedded signature's offset (none for
// a detached one); `code` is SIGNATURE_MALFORMED unless said otherwise.
struct Where {
  std::uint64_t offset;
};

Status malformed(const Where& w, const std::string& field, const std::string& what,
                 Error code = Error::SIGNATURE_MALFORMED) {
  return fail(code, w.offset, field, "%s", what.c_str());
}

// Python's _get: `obj` must be an object holding `key` of `kind`.
Status get(const Where& w, const Value& obj, const char* key, Kind kind, const std::string& path, Value& out,
           bool required = true) {
  out = Value();
  if (!obj.is(Kind::kObject)) return malformed(w, path, path + " must be a JSON object");
  const Value v = obj.find(key);
  const std::string at = path + "." + key;
  if (!v) {
    if (required) return malformed(w, at, at + " is missing");
    return Status();
  }
  if (!v.is(kind)) return malformed(w, at, at + " has the wrong JSON type");
  out = v;
  return Status();
}

// A JSON syntax error of a document, at its field.
Status not_json(const Where& w, const std::string& field, const Status& why) {
  return malformed(w, field, "not a JSON document of the documented shape: " + why.message() +
                                 (why.offset() == kNoOffset ? "" : " (byte " + std::to_string(why.offset()) + ")"));
}

bool base64_char(std::uint8_t c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

// Standard base64, padded, nothing else (signing._BASE64): the rule is checked here, the bytes are
// decoded by libcrypto's EVP_DecodeBlock (which alone would take surrounding whitespace). Bundles
// are read with trusted keys loaded, so libcrypto is open by then.
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

bool hex_digest(std::string_view text, Digest& out) {
  if (text.size() != 64) return false;
  for (std::size_t k = 0; k < 64; ++k) {
    const char c = text[k];
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else {
      return false;
    }
    if (k % 2 == 0) {
      out[k / 2] = static_cast<std::uint8_t>(v << 4);
    } else {
      out[k / 2] |= static_cast<std::uint8_t>(v);
    }
  }
  return true;
}

// ---- the bundle and the statement ----

struct Envelope {
  std::string payload_type;
  std::vector<std::uint8_t> payload;
  std::vector<std::vector<std::uint8_t>> signatures;
  bool has_hint = false;
  std::string hint;
};

Status read_bundle(const Where& w, Bytes data, Envelope& env, detail::SignatureWork& work) {
  const std::string p = "signature";
  if (data.size > F::kMaxSignatureSize) return malformed(w, p, "the bundle is above the limit of 64 MiB");
  Result<json::Document> doc = read_json(data.data, static_cast<std::size_t>(data.size), kMaxBundleValues);
  if (!doc.ok()) return not_json(w, p, doc.error());
  work.json_bytes = std::max<std::uint64_t>(work.json_bytes, doc.value().memory());
  const Value root = doc.value().root();
  if (!root.is(Kind::kObject)) return malformed(w, p, "the bundle must be a JSON object");
  Value media;
  FATPTE_RETURN_IF_ERROR(get(w, root, "mediaType", Kind::kString, p, media));
  if (media.text() != kBundleMediaType) {
    return malformed(w, p + ".mediaType", "mediaType is not " + std::string(kBundleMediaType),
                     Error::SIGNATURE_UNSUPPORTED);
  }
  Value e;
  FATPTE_RETURN_IF_ERROR(get(w, root, "dsseEnvelope", Kind::kObject, p, e));
  const std::string ep = p + ".dsseEnvelope";
  Value type;
  FATPTE_RETURN_IF_ERROR(get(w, e, "payloadType", Kind::kString, ep, type));
  if (type.text() != kPayloadType) {
    return malformed(w, ep + ".payloadType", "payloadType is not " + std::string(kPayloadType),
                     Error::SIGNATURE_UNSUPPORTED);
  }
  env.payload_type = type.text();
  Value payload;
  FATPTE_RETURN_IF_ERROR(get(w, e, "payload", Kind::kString, ep, payload));
  if (!base64_decode(payload.text(), env.payload)) return malformed(w, ep + ".payload", "the payload is not base64");
  Value sigs;
  FATPTE_RETURN_IF_ERROR(get(w, e, "signatures", Kind::kArray, ep, sigs));
  if (sigs.size() == 0 || sigs.size() > kMaxSignatures) {
    return malformed(w, ep + ".signatures", "the envelope holds " + std::to_string(sigs.size()) +
                                                " signatures; 1 to 16 are allowed");
  }
  for (const Value item : sigs.items()) {
    const std::string sp = ep + ".signatures[" + std::to_string(env.signatures.size()) + "]";
    Value sig;
    FATPTE_RETURN_IF_ERROR(get(w, item, "sig", Kind::kString, sp, sig));
    if (sig.text().size() > kMaxSigBase64) return malformed(w, sp + ".sig", "sig is above 512 characters");
    std::vector<std::uint8_t> raw;
    if (!base64_decode(sig.text(), raw)) return malformed(w, sp + ".sig", "sig is not base64");
    env.signatures.push_back(std::move(raw));
  }
  Value material;
  FATPTE_RETURN_IF_ERROR(get(w, root, "verificationMaterial", Kind::kObject, p, material, false));
  if (material) {
    Value pub;
    FATPTE_RETURN_IF_ERROR(get(w, material, "publicKey", Kind::kObject, p + ".verificationMaterial", pub, false));
    if (pub) {
      Value hint;
      const std::string hp = p + ".verificationMaterial.publicKey";
      FATPTE_RETURN_IF_ERROR(get(w, pub, "hint", Kind::kString, hp, hint, false));
      if (hint) {
        if (hint.text().size() > kMaxHint) return malformed(w, hp + ".hint", "hint is above 256 bytes");
        env.has_hint = true;
        env.hint = hint.text();
      }
    }
  }
  return Status();
}

struct SignedEntry {
  std::string name, backend_id;
  std::array<std::uint8_t, 4> payload_kind{};
  std::int64_t priority = 0, alignment = 0;
  Digest payload{}, record{};
  // What selection reads of its record (revision 2, section 3.2); absent in a revision 1 statement.
  std::optional<detail::Requirements> selection;
  // The golden digest of its golden calls (revision 3, section 3.2); absent before revision 3.
  std::optional<Digest> golden;
};
struct SignedKey {
  std::string key;
  Digest digest{}, record{};
};
struct Statement {
  std::vector<SignedEntry> entries;
  std::vector<SignedKey> keys;
};

bool id_ok(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (const char c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Status get_digest(const Where& w, const Value& obj, const char* key, const std::string& path, Digest& out,
                  bool* present = nullptr) {
  Value v;
  FATPTE_RETURN_IF_ERROR(get(w, obj, key, Kind::kString, path, v, present == nullptr));
  if (present != nullptr) {
    *present = static_cast<bool>(v);
    if (!v) return Status();
  }
  const std::string at = path + "." + key;
  if (!hex_digest(v.text(), out)) return malformed(w, at, at + " must be 64 lowercase hexadecimal digits");
  return Status();
}

// An integer member: the parser refused every number but integers of 64 bits (section 2).
Status get_int(const Where& w, const Value& obj, const char* key, const std::string& path, std::int64_t low,
               std::int64_t high, std::int64_t& out) {
  Value v;
  FATPTE_RETURN_IF_ERROR(get(w, obj, key, Kind::kNumber, path, v));
  bool negative = false;
  std::uint64_t magnitude = 0;
  json::integer(v, negative, magnitude);
  const std::int64_t n = negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
  if (n < low || n > high) return malformed(w, path + "." + key, path + "." + key + " is out of range");
  out = n;
  return Status();
}

// An integer from 0 to `high` (Python's _number): `v` is the value at `path`.
Status number(const Where& w, const Value& v, const std::string& path, std::uint64_t high, std::uint64_t& out) {
  bool negative = false;
  std::uint64_t magnitude = 0;
  if (!v.is(Kind::kNumber) || !json::integer(v, negative, magnitude) || negative || magnitude > high) {
    return malformed(w, path, path + " must be an integer from 0 to " + std::to_string(high));
  }
  out = magnitude;
  return Status();
}

// An array of words of 1 to 4096 bytes (Python's _words); `present` false when it is absent and
// may be.
Status words(const Where& w, const Value& obj, const char* key, const std::string& path, bool required,
             std::vector<std::string>& out, bool& present) {
  Value v;
  FATPTE_RETURN_IF_ERROR(get(w, obj, key, Kind::kArray, path, v, required));
  present = static_cast<bool>(v);
  std::size_t i = 0;
  for (const Value item : v.items()) {
    const std::string at = path + "." + key + "[" + std::to_string(i++) + "]";
    if (!item.is(Kind::kString) || item.text().empty() || item.text().size() > kMaxTextBytes) {
      return malformed(w, at, at + " must be a string of 1 to 4096 bytes");
    }
    out.emplace_back(item.text());
  }
  return Status();
}

// A statement entry's `selection` member (section 3.2), its shape checked in the order Python's
// _selection checks it: accelerators, backend_abi, os, arch, cpu_features, min_memory_bytes,
// executorch_backends.
Status read_selection(const Where& w, const Value& obj, const std::string& path, detail::Requirements& out) {
  constexpr std::uint64_t kMaxJsonInt = (std::uint64_t{1} << 63) - 1;
  Value list;
  FATPTE_RETURN_IF_ERROR(get(w, obj, "accelerators", Kind::kArray, path, list));
  std::size_t i = 0;
  for (const Value a : list.items()) {
    const std::string ap = path + ".accelerators[" + std::to_string(i++) + "]";
    detail::AccRequirement acc;
    Value v;
    FATPTE_RETURN_IF_ERROR(get(w, a, "kind", Kind::kString, ap, v));
    acc.kind = std::string(v.text());
    Value targets;
    FATPTE_RETURN_IF_ERROR(get(w, a, "targets", Kind::kArray, ap, targets));
    std::size_t j = 0;
    for (const Value t : targets.items()) {
      const std::string tp = ap + ".targets[" + std::to_string(j++) + "]";
      if (!t.is(Kind::kArray) || t.size() != 3) return malformed(w, tp, tp + " must be [match, major, minor]");
      std::uint64_t parts[3] = {0, 0, 0};
      const std::uint64_t highs[3] = {255, detail::kU32Max, detail::kU32Max};
      std::size_t n = 0;
      for (const Value part : t.items()) {
        FATPTE_RETURN_IF_ERROR(number(w, part, tp + "[" + std::to_string(n) + "]", highs[n], parts[n]));
        ++n;
      }
      acc.targets.push_back({static_cast<std::uint8_t>(parts[0]), static_cast<std::uint32_t>(parts[1]),
                             static_cast<std::uint32_t>(parts[2])});
    }
    FATPTE_RETURN_IF_ERROR(get(w, a, "min_memory_bytes", Kind::kNumber, ap, v));
    FATPTE_RETURN_IF_ERROR(number(w, v, ap + ".min_memory_bytes", kMaxJsonInt, acc.min_memory_bytes));
    out.accelerators.push_back(std::move(acc));
  }
  Value abi;
  FATPTE_RETURN_IF_ERROR(get(w, obj, "backend_abi", Kind::kArray, path, abi, false));
  if (abi) {
    if (abi.size() != 2) return malformed(w, path + ".backend_abi", path + ".backend_abi must be [min, max]");
    std::uint64_t bounds[2] = {0, 0};
    std::size_t n = 0;
    for (const Value b : abi.items()) {
      FATPTE_RETURN_IF_ERROR(number(w, b, path + ".backend_abi[" + std::to_string(n) + "]", detail::kU32Max, bounds[n]));
      ++n;
    }
    out.has_abi = true;
    out.abi_min = static_cast<std::uint32_t>(bounds[0]);
    out.abi_max = static_cast<std::uint32_t>(bounds[1]);
  }
  bool present = false;
  FATPTE_RETURN_IF_ERROR(words(w, obj, "os", path, true, out.os, present));
  FATPTE_RETURN_IF_ERROR(words(w, obj, "arch", path, true, out.arch, present));
  FATPTE_RETURN_IF_ERROR(words(w, obj, "cpu_features", path, true, out.cpu_features, present));
  Value v;
  FATPTE_RETURN_IF_ERROR(get(w, obj, "min_memory_bytes", Kind::kNumber, path, v));
  FATPTE_RETURN_IF_ERROR(number(w, v, path + ".min_memory_bytes", kMaxJsonInt, out.min_memory_bytes));
  std::vector<std::string> backends;
  FATPTE_RETURN_IF_ERROR(words(w, obj, "executorch_backends", path, false, backends, present));
  if (present) out.executorch_backends = std::move(backends);
  return Status();
}

Status read_statement(const Where& w, const std::vector<std::uint8_t>& payload, Statement& st,
                      detail::SignatureWork& work) {
  const std::string p = "signature.statement";
  Result<json::Document> doc = read_json(payload.data(), payload.size(), 0);
  if (!doc.ok()) return not_json(w, p, doc.error());
  work.json_bytes = std::max<std::uint64_t>(work.json_bytes, doc.value().memory());
  const Value root = doc.value().root();
  if (!root.is(Kind::kObject)) return malformed(w, p, "the statement must be a JSON object");
  Value v;
  FATPTE_RETURN_IF_ERROR(get(w, root, "_type", Kind::kString, p, v));
  if (v.text() != kStatementType) {
    return malformed(w, p + "._type", "_type is not in-toto Statement v1", Error::SIGNATURE_UNSUPPORTED);
  }
  FATPTE_RETURN_IF_ERROR(get(w, root, "predicateType", Kind::kString, p, v));
  if (v.text() != kPredicateType) {
    return malformed(w, p + ".predicateType", "predicateType is not " + std::string(kPredicateType),
                     Error::SIGNATURE_UNSUPPORTED);
  }
  Value pred;
  FATPTE_RETURN_IF_ERROR(get(w, root, "predicate", Kind::kObject, p, pred));
  const std::string pp = p + ".predicate";
  FATPTE_RETURN_IF_ERROR(get(w, pred, "format_version", Kind::kNumber, pp, v));
  if (v.text() != std::to_string(F::kVersion2)) {
    return malformed(w, pp + ".format_version", "format_version is not 2", Error::SIGNATURE_UNSUPPORTED);
  }
  Value entries;
  FATPTE_RETURN_IF_ERROR(get(w, pred, "entries", Kind::kArray, pp, entries));
  if (entries.size() == 0 || entries.size() > F::kMaxEntries) {
    return malformed(w, pp + ".entries", "the statement lists no entry, or more than 65536");
  }
  std::set<std::string> names;
  for (const Value e : entries.items()) {
    const std::string ep = pp + ".entries[" + std::to_string(st.entries.size()) + "]";
    SignedEntry se;
    FATPTE_RETURN_IF_ERROR(get(w, e, "name", Kind::kString, ep, v));
    if (!id_ok(v.text())) return malformed(w, ep + ".name", "name is not 1 to 32 characters of [A-Za-z0-9_.-]");
    se.name = v.text();
    FATPTE_RETURN_IF_ERROR(get(w, e, "backend_id", Kind::kString, ep, v));
    if (!id_ok(v.text())) {
      return malformed(w, ep + ".backend_id", "backend_id is not 1 to 32 characters of [A-Za-z0-9_.-]");
    }
    se.backend_id = v.text();
    if (!names.insert(se.name).second) return malformed(w, ep + ".name", "entry '" + se.name + "' is listed twice");
    FATPTE_RETURN_IF_ERROR(get(w, e, "payload_kind", Kind::kString, ep, v));
    Digest kind{};
    const std::string padded = std::string(v.text()) + std::string(56, '0');
    if (v.text().size() != 8 || !hex_digest(padded, kind)) {
      return malformed(w, ep + ".payload_kind", "payload_kind must be 8 lowercase hexadecimal digits");
    }
    std::memcpy(se.payload_kind.data(), kind.data(), 4);
    FATPTE_RETURN_IF_ERROR(get_int(w, e, "priority", ep, INT32_MIN, INT32_MAX, se.priority));
    FATPTE_RETURN_IF_ERROR(get_int(w, e, "alignment", ep, F::kMinAlignment, F::kMaxAlignment, se.alignment));
    if ((se.alignment & (se.alignment - 1)) != 0) {
      return malformed(w, ep + ".alignment", "alignment is not a power of two");
    }
    FATPTE_RETURN_IF_ERROR(get_digest(w, e, "record_sha256", ep, se.record));
    Value selection;
    FATPTE_RETURN_IF_ERROR(get(w, e, "selection", Kind::kObject, ep, selection, false));
    if (selection) {
      se.selection.emplace();
      FATPTE_RETURN_IF_ERROR(read_selection(w, selection, ep + ".selection", *se.selection));
    }
    Digest golden{};
    bool has_golden = false;
    FATPTE_RETURN_IF_ERROR(get_digest(w, e, "golden_sha256", ep, golden, &has_golden));
    if (has_golden) se.golden = golden;
    st.entries.push_back(std::move(se));
  }
  Value keys;
  FATPTE_RETURN_IF_ERROR(get(w, pred, "named_data", Kind::kArray, pp, keys));
  if (keys.size() > F::kMaxSegments) return malformed(w, pp + ".named_data", "more keys than 1048576");
  for (const Value k : keys.items()) {
    const std::string kp = pp + ".named_data[" + std::to_string(st.keys.size()) + "]";
    SignedKey sk;
    FATPTE_RETURN_IF_ERROR(get(w, k, "key", Kind::kString, kp, v));
    if (v.text().empty() || v.text().size() > kMaxTextBytes) {
      return malformed(w, kp + ".key", "a key is 1 to 4096 bytes");
    }
    if (!st.keys.empty() && !(st.keys.back().key < v.text())) {
      return malformed(w, kp + ".key", "keys must be unique and sorted bytewise");
    }
    sk.key = v.text();
    FATPTE_RETURN_IF_ERROR(get_digest(w, k, "record_sha256", kp, sk.record));
    st.keys.push_back(std::move(sk));
  }
  Value subjects;
  FATPTE_RETURN_IF_ERROR(get(w, root, "subject", Kind::kArray, p, subjects));
  const std::size_t want = st.entries.size() + st.keys.size();
  if (subjects.size() != want) {
    return malformed(w, p + ".subject", "the statement needs one subject per entry, then one per named-data key");
  }
  std::size_t i = 0;
  for (const Value s : subjects.items()) {
    const std::string sp = p + ".subject[" + std::to_string(i) + "]";
    const bool entry = i < st.entries.size();
    const std::string name = entry ? kEntrySubject + st.entries[i].name
                                   : kNamedDataSubject + st.keys[i - st.entries.size()].key;
    FATPTE_RETURN_IF_ERROR(get(w, s, "name", Kind::kString, sp, v));
    if (v.text() != name) return malformed(w, sp + ".name", "subject " + std::to_string(i) + " is not named " + name);
    Value digest;
    FATPTE_RETURN_IF_ERROR(get(w, s, "digest", Kind::kObject, sp, digest));
    Digest d;
    FATPTE_RETURN_IF_ERROR(get_digest(w, digest, "sha256", sp + ".digest", d));
    if (entry) {
      st.entries[i].payload = d;
    } else {
      st.keys[i - st.entries.size()].digest = d;
    }
    ++i;
  }
  return Status();
}

// ---- canonical records (fatpte/manifest/canonical.py) ----

class Record {
 public:
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u32(std::uint32_t v) {
    for (int k = 0; k < 4; ++k) out_.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
  }
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void u64(std::uint64_t v) {
    for (int k = 0; k < 8; ++k) out_.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
  }
  void raw(const std::uint8_t* p, std::size_t n) {
    u32(static_cast<std::uint32_t>(n));
    out_.insert(out_.end(), p, p + n);
  }
  void text(const ::flatbuffers::String* s) { raw(reinterpret_cast<const std::uint8_t*>(s->data()), s->size()); }
  void text(const char* s) { raw(reinterpret_cast<const std::uint8_t*>(s), std::strlen(s)); }
  void opt_text(const ::flatbuffers::String* s) {
    u8(s != nullptr);
    if (s != nullptr) text(s);
  }
  void strings(const ::flatbuffers::Vector<::flatbuffers::Offset<::flatbuffers::String>>* v) {
    u32(v == nullptr ? 0 : v->size());
    if (v != nullptr) {
      for (const auto* s : *v) text(s);
    }
  }
  const std::vector<std::uint8_t>& bytes() const { return out_; }

 private:
  std::vector<std::uint8_t> out_;
};

template <typename T>
std::uint32_t count(const ::flatbuffers::Vector<::flatbuffers::Offset<T>>* v) {
  return v == nullptr ? 0 : v->size();
}

void tensors(Record& r, const ::flatbuffers::Vector<::flatbuffers::Offset<M::TensorSpec>>* v) {
  r.u32(count(v));
  if (v == nullptr) return;
  for (const auto* t : *v) {
    r.text(t->dtype());
    r.u32(count(t->shape()));
    if (t->shape() != nullptr) {
      for (const auto* d : *t->shape()) {
        r.u64(d->size());
        r.opt_text(d->symbol());
      }
    }
    r.opt_text(t->name());
  }
}

std::vector<std::uint8_t> entry_record(const M::Entry* e) {
  Record r;
  r.text(kEntryRecordTag);
  r.u8(e != nullptr);
  if (e == nullptr) return r.bytes();
  r.text(e->name());
  const M::Requirements* q = e->requires_();
  r.strings(q == nullptr ? nullptr : q->os());
  r.strings(q == nullptr ? nullptr : q->arch());
  r.strings(q == nullptr ? nullptr : q->cpu_features());
  const auto* accs = q == nullptr ? nullptr : q->accelerators();
  r.u32(count(accs));
  if (accs != nullptr) {
    for (const auto* a : *accs) {
      r.text(a->kind());
      r.u32(count(a->targets()));
      if (a->targets() != nullptr) {
        for (const auto* t : *a->targets()) {
          r.u8(static_cast<std::uint8_t>(t->match()));
          r.u32(t->major());
          r.u32(t->minor());
        }
      }
      r.u64(a->min_memory_bytes());
    }
  }
  r.u64(q == nullptr ? 0 : q->min_memory_bytes());
  const M::AbiRange* abi = q == nullptr ? nullptr : q->backend_abi();
  r.u8(abi != nullptr);
  if (abi != nullptr) {
    r.u32(abi->min());
    r.u32(abi->max());
  }
  const M::Signature* sig = e->signature();
  r.u8(sig != nullptr);
  if (sig != nullptr) {
    r.u32(count(sig->methods()));
    if (sig->methods() != nullptr) {
      for (const auto* m : *sig->methods()) {
        r.text(m->name());
        tensors(r, m->inputs());
        tensors(r, m->outputs());
        tensors(r, m->buffers());
      }
    }
  }
  r.strings(e->named_data());
  r.opt_text(e->source_digest());
  const auto* sha = e->payload_sha256();
  r.u8(sha != nullptr && sha->size() != 0);
  if (sha != nullptr && sha->size() != 0) r.raw(sha->data(), sha->size());
  r.u32(count(e->provenance()));
  if (e->provenance() != nullptr) {
    for (const auto* kv : *e->provenance()) {
      r.text(kv->key());
      r.text(kv->value());
    }
  }
  r.u8(e->executorch_backends() != nullptr);
  if (e->executorch_backends() != nullptr) r.strings(e->executorch_backends());
  return r.bytes();
}

std::vector<std::uint8_t> named_data_record(const M::NamedData* nd) {
  Record r;
  r.text(kNamedDataRecordTag);
  r.text(nd->key());
  const M::TensorLayout* lay = nd->layout();
  r.u8(lay != nullptr);
  if (lay != nullptr) {
    r.text(lay->dtype());
    r.u32(lay->sizes() == nullptr ? 0 : lay->sizes()->size());
    if (lay->sizes() != nullptr) {
      for (const std::int32_t s : *lay->sizes()) r.i32(s);
    }
    r.u32(lay->dim_order() == nullptr ? 0 : lay->dim_order()->size());
    if (lay->dim_order() != nullptr) {
      for (const std::uint8_t d : *lay->dim_order()) r.u8(d);
    }
  }
  return r.bytes();
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
// provenance does (specs/nfat-manifest.md 11.3, which E0423 holds the calls to). An entry without
// calls has nothing to vouch for. Python's golden_vouched.
bool golden_vouched(const SignedEntry& s, const M::Entry* me) {
  if (me == nullptr || me->golden() == nullptr || me->golden()->size() == 0 || s.golden) return true;
  return detail::provenance_value(*me, detail::kGoldenDigestKey) != nullptr;
}

bool verifies(EVP_PKEY* key, const std::vector<std::uint8_t>& sig, const std::vector<std::uint8_t>& message) {
  const detail::LibCrypto& f = ossl();
  EVP_MD_CTX* ctx = f.md_ctx_new();
  if (ctx == nullptr) return false;
  const bool ed = f.pkey_get_id(key) == EVP_PKEY_ED25519;
  bool ok = f.digest_verify_init(ctx, nullptr, ed ? nullptr : f.sha256(), nullptr, key) == 1 &&
            f.digest_verify(ctx, sig.data(), sig.size(), message.data(), message.size()) == 1;
  f.md_ctx_free(ctx);
  return ok;
}

std::vector<std::uint8_t> pae(const std::string& type, const std::vector<std::uint8_t>& body) {
  const std::string head = "DSSEv1 " + std::to_string(type.size()) + " " + type + " " + std::to_string(body.size()) + " ";
  std::vector<std::uint8_t> out(head.begin(), head.end());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// Where manifest entry `me` sits in the manifest's list (for a finding's field), found by sorting
// the list's addresses once, on the first finding that needs it: never a scan per entry.
class ManifestPositions {
 public:
  explicit ManifestPositions(const M::Manifest* root) : root_(root) {}
  std::size_t of(const M::Entry* me) {
    if (sorted_.empty() && root_ != nullptr && root_->entries() != nullptr) {
      const auto* list = root_->entries();
      for (::flatbuffers::uoffset_t j = 0; j < list->size(); ++j) sorted_.emplace_back(list->Get(j), j);
      std::sort(sorted_.begin(), sorted_.end());
    }
    const auto at = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(me, std::size_t{0}));
    return at != sorted_.end() && at->first == me ? at->second : 0;
  }

 private:
  const M::Manifest* root_;
  std::vector<std::pair<const M::Entry*, std::size_t>> sorted_;
};

// Steps 7d and 7e for table entry `e` (its record at `base`), whose manifest record is `me`
// (nullptr: none), against statement entry `s`: each finding goes to `tamper`.
template <typename Tamper>
void check_record(const Container& c, const Entry& e, const M::Entry* me, const SignedEntry& s, std::uint64_t base,
                  ManifestPositions& positions, detail::SignatureWork& work, Tamper&& tamper) {
  const Header& h = c.header();
  const std::uint8_t* manifest_base = c.bytes().data + h.manifest_offset;
  const std::uint64_t at =
      me == nullptr ? base
                    : h.manifest_offset + static_cast<std::uint64_t>(reinterpret_cast<const std::uint8_t*>(me) -
                                                                     manifest_base);
  // The field of a finding (the manifest entry's position, found only when one needs it).
  const auto field = [&](const char* below) {
    return me == nullptr ? "entries[" + std::to_string(e.index) + "].name"
                         : "manifest.entries[" + std::to_string(positions.of(me)) + "]" + below;
  };
  const std::vector<std::uint8_t> record = entry_record(me);
  work.record_bytes += record.size();
  if (sha256(record.data(), record.size()) != s.record) {
    tamper(fail(Error::SIGNED_RECORD_MISMATCH, at, field(""), "entry '%s': its manifest record differs from the signed one",
                e.name.c_str()));
  }
  // Step 7e: the golden calls a revision 3 statement vouches for, or their absence.
  const std::vector<std::uint8_t> golden = detail::golden_encoding(me);
  work.record_bytes += golden.size();
  if (s.golden && sha256(golden.data(), golden.size()) != *s.golden) {
    tamper(fail(Error::SIGNED_RECORD_MISMATCH, at, field(".golden"),
                "entry '%s': its golden calls are not the signed ones (the statement states golden calls with "
                "SHA-256 %s...): they were added, changed or removed after signing",
                e.name.c_str(), hex(*s.golden).substr(0, 16).c_str()));
  }
}

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

Result<SignatureCheck> check_signature(const Container& c, const TrustedKeys& keys, Bytes detached) {
  return detail::check_signature(c, keys, detached, nullptr);
}

Result<SignatureCheck> detail::check_signature(const Container& c, const TrustedKeys& keys, Bytes detached,
                                               SignatureWork* counted) {
  SignatureWork uncounted;
  SignatureWork& work = counted != nullptr ? *counted : uncounted;
  const Header& h = c.header();
  // Before step 1: the manifest, through the loader's one accessor (every rule of
  // specs/nfat-manifest.md section 2 and its work budget, checked once per container), and each
  // named-data key's segment. Records are then built only from a manifest that passed, in work
  // bounded by its size.
  Result<ManifestView> view = manifest_view(c);
  if (!view.ok()) return view.error();
  const M::Manifest* root = view.value().root();
  const auto* nds = root == nullptr ? nullptr : root->named_data();
  if (nds != nullptr) {
    for (::flatbuffers::uoffset_t j = 0; j < nds->size(); ++j) {
      FATPTE_CHECK(nds->Get(j)->segment() < c.segments().size(), Error::NAMED_DATA_BAD_SEGMENT, h.manifest_offset,
                   "manifest.named_data[" + std::to_string(j) + "].segment",
                   "named-data key '%s' points at segment %u, but the segment table has %zu",
                   nds->Get(j)->key()->c_str(), nds->Get(j)->segment(), c.segments().size());
    }
  }
  // Step 1: the signature.
  Bytes data = detached;
  Where w{kNoOffset};
  if (data.data == nullptr) {
    if (c.version() != F::kVersion2 || h.signature_size == 0) {
      return fail(Error::SIGNATURE_REQUIRED, kNoOffset, "signature",
                  "the container carries no signature region and no detached signature was given");
    }
    // A container read through the C reader holds only what it fetched (Container::present).
    FATPTE_CHECK(c.present(h.signature_offset, h.signature_size), Error::INVALID_ARGUMENT, h.signature_offset,
                 "header.signature_offset", "the signature region was not fetched (fatpte_reader_fetch_signature)");
    data = Bytes{c.bytes().data + h.signature_offset, h.signature_size};
    w.offset = h.signature_offset;
  }
  // Steps 2 and 3: the bundle.
  Envelope env;
  FATPTE_RETURN_IF_ERROR(read_bundle(w, data, env, work));
  // Step 4: the signature, before anything of the statement is read.
  const std::vector<std::uint8_t> message = pae(env.payload_type, env.payload);
  std::vector<const TrustedKeys::Key*> named, candidates;
  for (const auto& k : keys.keys()) {
    if (env.has_hint && k.key_id == env.hint) named.push_back(&k);
  }
  if (named.empty()) {
    for (const auto& k : keys.keys()) candidates.push_back(&k);
  } else {
    candidates = named;
  }
  const TrustedKeys::Key* signer = nullptr;
  for (const auto& sig : env.signatures) {
    for (const auto* k : candidates) {
      if (verifies(static_cast<EVP_PKEY*>(k->pkey), sig, message)) {
        signer = k;
        break;
      }
    }
    if (signer != nullptr) break;
  }
  if (signer == nullptr) {
    if (!named.empty()) {
      return malformed(w, "signature.dsseEnvelope.signatures[0].sig",
                       "the signature does not verify with the trusted key it names (" + named[0]->source +
                           "): the statement was altered after signing, or the signature is damaged",
                       Error::SIGNATURE_INVALID);
    }
    return malformed(w, "signature.dsseEnvelope.signatures[0].sig",
                     "the container is signed by a key that is not among the trusted keys",
                     Error::SIGNATURE_UNTRUSTED);
  }
  // Step 5: the statement.
  Statement st;
  FATPTE_RETURN_IF_ERROR(read_statement(w, env.payload, st, work));
  std::map<std::string, int> signed_index;
  for (std::size_t i = 0; i < st.entries.size(); ++i) signed_index[st.entries[i].name] = static_cast<int>(i);
  // Step 6: a signature of another container.
  bool any = false;
  for (const Entry& e : c.entries()) any = any || signed_index.count(e.name) != 0;
  if (c.version() != F::kVersion2 || !any) {
    return fail(Error::SIGNATURE_NOT_FOR_CONTAINER, w.offset, "signature",
                "the signature describes none of this container's entries: it belongs to another container");
  }

  SignatureCheck check;
  check.key_id = signer->key_id;
  check.signature_offset = w.offset;
  auto signed_entries = std::make_shared<detail::SignedEntries>();
  for (std::size_t k = 0; k < st.entries.size(); ++k) {
    const SignedEntry& se = st.entries[k];
    Entry e;
    e.index = static_cast<std::uint32_t>(k);
    e.name = se.name;
    e.backend_id = se.backend_id;
    e.payload_kind = se.payload_kind;
    e.alignment = static_cast<std::uint32_t>(se.alignment);
    e.priority = static_cast<std::int32_t>(se.priority);
    signed_entries->entries.push_back(std::move(e));
    signed_entries->selections.push_back(se.selection);
  }
  check.statement = std::move(signed_entries);
  for (const auto& se : st.entries) check.payload_digests.push_back(se.payload);
  auto note = [&check](Status s) {
    if (check.first_error.ok()) check.first_error = std::move(s);
  };
  // Each table entry's manifest record comes from the view's index (O(1) each), so verifying is
  // linear in the entries, never a scan of the manifest per entry.
  ManifestPositions positions(root);
  // Step 7: entries.
  int last = -1;
  std::set<std::string> present;
  for (const Entry& e : c.entries()) {
    present.insert(e.name);
    const std::uint64_t base = std::uint64_t{h.header_size} + std::uint64_t{e.index} * h.entry_size;
    const std::string p = "entries[" + std::to_string(e.index) + "]";
    auto it = signed_index.find(e.name);
    if (it == signed_index.end()) {
      check.states.push_back(EntryState::kUnsigned);
      check.statement_index.push_back(-1);
      check.golden_unsigned.push_back(false);
      note(fail(Error::ENTRY_NOT_SIGNED, base, p + ".name",
                "entry '%s' is not in the signed statement: it was added after signing", e.name.c_str()));
      continue;
    }
    const int k = it->second;
    const SignedEntry& s = st.entries[static_cast<std::size_t>(k)];
    EntryState state = EntryState::kSigned;
    auto tamper = [&](Status why) {
      state = EntryState::kTampered;
      note(std::move(why));
    };
    if (k < last) {
      tamper(fail(Error::SIGNED_RECORD_MISMATCH, base, p + ".name",
                  "entry '%s' was moved: it comes after '%s' in the table but before it in the signed statement",
                  e.name.c_str(), st.entries[static_cast<std::size_t>(last)].name.c_str()));
    }
    last = std::max(last, k);
    if (e.backend_id != s.backend_id) {
      tamper(fail(Error::SIGNED_RECORD_MISMATCH, base + F::kV2Entry_backend_id_offset, p + ".backend_id",
                  "entry '%s': backend_id is '%s', the signed statement says '%s'", e.name.c_str(),
                  e.backend_id.c_str(), s.backend_id.c_str()));
    }
    if (e.payload_kind != s.payload_kind) {
      tamper(fail(Error::SIGNED_RECORD_MISMATCH, base + F::kV2Entry_payload_kind_offset, p + ".payload_kind",
                  "entry '%s': payload_kind differs from the signed statement", e.name.c_str()));
    }
    if (e.priority != s.priority) {
      tamper(fail(Error::SIGNED_RECORD_MISMATCH, base + F::kV2Entry_priority_offset, p + ".priority",
                  "entry '%s': priority is %d, the signed statement says %" PRId64, e.name.c_str(), e.priority,
                  s.priority));
    }
    if (e.alignment != s.alignment) {
      tamper(fail(Error::SIGNED_RECORD_MISMATCH, base + F::kV2Entry_alignment_offset, p + ".alignment",
                  "entry '%s': alignment is %u, the signed statement says %" PRId64, e.name.c_str(), e.alignment,
                  s.alignment));
    }
    const M::Entry* me = view.value().entry(e.index);
    ++work.records_looked_up;
    check_record(c, e, me, s, base, positions, work, tamper);
    check.golden_unsigned.push_back(!golden_vouched(s, me));
    check.states.push_back(state);
    check.statement_index.push_back(k);
  }
  for (const auto& se : st.entries) {
    if (present.count(se.name) == 0) check.thinned.push_back(se.name);
  }
  // Step 8: named-data keys.
  std::map<std::string, std::size_t> signed_keys;
  for (std::size_t i = 0; i < st.keys.size(); ++i) signed_keys[st.keys[i].key] = i;
  std::map<std::string, std::size_t> key_index;
  if (nds != nullptr) {
    for (::flatbuffers::uoffset_t j = 0; j < nds->size(); ++j) {
      const M::NamedData* nd = nds->Get(j);
      SignatureCheck::Key key;
      key.key = nd->key()->str();
      key.segment = nd->segment();
      const std::string where = "manifest.named_data[" + std::to_string(j) + "]";
      auto it = signed_keys.find(key.key);
      if (it == signed_keys.end()) {
        note(fail(Error::NAMED_DATA_NOT_SIGNED, h.manifest_offset, where,
                  "named-data key '%s' is not in the signed statement: it was added after signing", key.key.c_str()));
      } else {
        key.signed_key = true;
        key.digest = st.keys[it->second].digest;
        const std::vector<std::uint8_t> record = named_data_record(nd);
        work.record_bytes += record.size();
        if (sha256(record.data(), record.size()) != st.keys[it->second].record) {
          note(fail(Error::SIGNED_NAMED_DATA_MISMATCH, h.manifest_offset, where,
                    "named-data key '%s': its tensor layout differs from the signed one", key.key.c_str()));
        }
      }
      key_index[key.key] = check.keys.size();
      check.keys.push_back(std::move(key));
    }
  }
  // The keys each entry lists, for step 10 of a loader that hashes only what it loads.
  for (const Entry& e : c.entries()) {
    std::vector<std::uint32_t> used;
    const M::Entry* me = view.value().entry(e.index);
    ++work.records_looked_up;
    if (me != nullptr && me->named_data() != nullptr) {
      for (const auto* key : *me->named_data()) {
        auto it = key_index.find(key->str());
        if (it != key_index.end()) used.push_back(static_cast<std::uint32_t>(it->second));
      }
    }
    check.entry_keys.push_back(std::move(used));
  }
  return check;
}

Status check_downgrade(const Container& c, const SignatureCheck& check, const DeviceProfile& device,
                       const std::vector<std::string>& prefer, const std::vector<std::string>& exclude) {
  if (!check.statement) return Status();
  const detail::SignedEntries& statement = *check.statement;
  Result<ManifestView> view = manifest_view(c);
  if (!view.ok()) return view.error();
  std::map<std::string, std::uint32_t> held;
  for (const Entry& e : c.entries()) held.emplace(e.name, e.index);
  const auto at = [](std::size_t k) { return "signature.statement.predicate.entries[" + std::to_string(k) + "]"; };
  std::vector<detail::Requirements> requirements(statement.entries.size());
  std::vector<detail::Candidate> candidates;
  for (std::size_t k = 0; k < statement.entries.size(); ++k) {
    const Entry& e = statement.entries[k];
    auto it = held.find(e.name);
    if (it != held.end()) {
      requirements[k] = detail::requirements_of(view.value().entry(it->second));
    } else if (!statement.selections[k]) {
      return fail(Error::SIGNED_RECORD_MISMATCH, check.signature_offset, at(k),
                  "entry '%s' was thinned away and the signed statement does not say what it needs (no "
                  "`selection`: signed before revision 2), so it cannot be shown that it would not run on '%s': "
                  "sign the container again to check thinning",
                  detail::printable(e.name).c_str(), detail::printable(device.name).c_str());
    } else {
      requirements[k] = *statement.selections[k];
    }
    candidates.push_back({&e, &requirements[k]});
  }
  const Selection s = detail::rank(candidates, device, prefer, exclude);
  if (s.fits && held.count(statement.entries[s.chosen].name) == 0) {
    const Entry& e = statement.entries[s.chosen];
    return fail(Error::SIGNED_RECORD_MISMATCH, check.signature_offset, at(s.chosen),
                "entry '%s' (%s) is what '%s' gets among the signed entries, and it was thinned away: the "
                "container offers this device a weaker entry (a downgrade)",
                detail::printable(e.name).c_str(), detail::printable(e.backend_id).c_str(),
                detail::printable(device.name).c_str());
  }
  return Status();
}

namespace {

Status check_payload(const Container& c, SignatureCheck& check, std::uint32_t index) {
  const int k = check.statement_index[index];
  if (k < 0) return Status();
  const Entry& e = c.entries()[index];
  FATPTE_CHECK(c.present(e.offset, e.size), Error::INVALID_ARGUMENT, e.offset, "entries[" + std::to_string(index) + "]",
               "the payload of '%s' was not fetched (fatpte_reader_fetch_entry)", e.name.c_str());
  const Digest got = sha256(c.bytes().data + e.offset, static_cast<std::size_t>(e.size));
  if (got != check.payload_digests[static_cast<std::size_t>(k)]) {
    check.states[index] = EntryState::kTampered;
    const Header& h = c.header();
    return fail(Error::SIGNED_PAYLOAD_MISMATCH,
                std::uint64_t{h.header_size} + std::uint64_t{index} * h.entry_size + F::kV2Entry_offset_offset,
                "entries[" + std::to_string(index) + "].offset",
                "the payload of '%s' has SHA-256 %s..., not the signed one: its bytes were changed after signing",
                e.name.c_str(), hex(got).substr(0, 16).c_str());
  }
  return Status();
}

Status check_key(const Container& c, const SignatureCheck::Key& key) {
  if (!key.signed_key || key.segment >= c.segments().size()) return Status();
  const Segment& s = c.segments()[key.segment];
  FATPTE_CHECK(c.present(s.offset, s.size), Error::INVALID_ARGUMENT, s.offset,
               "segments[" + std::to_string(s.index) + "]",
               "named-data key '%s' was not fetched (fatpte_reader_fetch_entry)", key.key.c_str());
  const Digest got = sha256(c.bytes().data + s.offset, static_cast<std::size_t>(s.size));
  if (got == key.digest) return Status();
  const Header& h = c.header();
  const std::uint64_t at = std::uint64_t{h.header_size} + std::uint64_t{h.entry_count} * h.entry_size +
                           std::uint64_t{s.index} * h.segment_entry_size;
  return fail(Error::SIGNED_NAMED_DATA_MISMATCH, at, "segments[" + std::to_string(s.index) + "].offset",
              "the bytes of named-data key '%s' (segment %u) were changed after signing", key.key.c_str(), s.index);
}

}  // namespace

Status check_entry_bytes(const Container& c, SignatureCheck& check, std::uint32_t index) {
  FATPTE_CHECK(index < check.states.size(), Error::ENTRY_NOT_FOUND, kNoOffset, "", "no entry %u", index);
  Status first = check_payload(c, check, index);
  // The keys the entry lists, in the manifest's key order (steps 9 and 10 restricted to it).
  std::vector<std::uint32_t> keys = check.entry_keys[index];
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const std::uint32_t k : keys) {
    Status s = check_key(c, check.keys[k]);
    if (!s.ok()) {
      check.states[index] = EntryState::kTampered;
      if (first.ok()) first = std::move(s);
    }
  }
  if (first.ok() && check.states[index] == EntryState::kSigned) check.states[index] = EntryState::kVerified;
  return first;
}

Status check_all_bytes(const Container& c, SignatureCheck& check) {
  Status first;
  for (std::uint32_t i = 0; i < check.states.size(); ++i) {
    Status s = check_payload(c, check, i);
    if (first.ok() && !s.ok()) first = std::move(s);
  }
  for (const auto& key : check.keys) {
    Status s = check_key(c, key);
    if (first.ok() && !s.ok()) first = std::move(s);
  }
  if (first.ok()) {
    for (auto& state : check.states) {
      if (state == EntryState::kSigned) state = EntryState::kVerified;
    }
  }
  return first;
}

#else  // !FATPTE_WITH_OPENSSL

bool signatures_supported() noexcept { return false; }

TrustedKeys::~TrustedKeys() = default;

namespace {
Status unsupported() {
  return fail(Error::SIGNATURE_UNSUPPORTED, kNoOffset, "signature",
              "libfatpte was built without signature support (FATPTE_SIGNATURES=OFF, no OpenSSL)");
}
}  // namespace

Result<std::shared_ptr<const TrustedKeys>> TrustedKeys::load(const std::vector<std::string>&) { return unsupported(); }
Result<SignatureCheck> check_signature(const Container&, const TrustedKeys&, Bytes) { return unsupported(); }
Result<SignatureCheck> detail::check_signature(const Container&, const TrustedKeys&, Bytes, SignatureWork*) {
  return unsupported();
}
Status check_entry_bytes(const Container&, SignatureCheck&, std::uint32_t) { return unsupported(); }
Status check_all_bytes(const Container&, SignatureCheck&) { return unsupported(); }
Status check_downgrade(const Container&, const SignatureCheck&, const DeviceProfile&, const std::vector<std::string>&,
                       const std::vector<std::string>&) {
  return unsupported();
}

#endif  // FATPTE_WITH_OPENSSL

}  // namespace fatpte
