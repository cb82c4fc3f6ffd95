// The bundle room of signature/ (signature/bundle.hpp): the Sigstore bundle and its DSSE envelope
// read under section 2's strict JSON, and the findings of the bundle's and the statement's readers.
#include "signature/bundle.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "fatpte/format_generated.h"
#include "signature/keys.hpp"

namespace fatpte {
namespace signing {

#if FATPTE_WITH_OPENSSL
namespace {

namespace F = format;
using json::Kind;
using json::Value;

constexpr const char* kBundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json";
constexpr const char* kPayloadType = "application/vnd.in-toto+json";
constexpr int kMaxJsonDepth = 16;           // signing.MAX_JSON_DEPTH
constexpr std::size_t kMaxSignatures = 16;  // signing.MAX_SIGNATURES
constexpr std::size_t kMaxSigBase64 = 512;  // signing.MAX_SIG_BASE64
constexpr std::size_t kMaxHint = 256;       // signing.MAX_HINT
constexpr std::size_t kMaxBundleValues = 4096;  // signing.MAX_BUNDLE_VALUES

}  // namespace

Result<json::Document> read_json(const std::uint8_t* data, std::size_t size, std::size_t max_values) {
  json::Options rules;
  rules.utf8 = true;
  rules.max_depth = kMaxJsonDepth;
  rules.fractions = false;
  rules.int64 = true;
  rules.max_values = max_values;
  return json::parse(std::string_view(reinterpret_cast<const char*>(data), size), rules);
}

Status malformed(const Where& w, const std::string& field, const std::string& what, Error code) {
  return fail(code, w.offset, field, "%s", what.c_str());
}

Status get(const Where& w, const Value& obj, const char* key, Kind kind, const std::string& path, Value& out,
           bool required) {
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

Status not_json(const Where& w, const std::string& field, const Status& why) {
  return malformed(w, field, "not a JSON document of the documented shape: " + why.message() +
                                 (why.offset() == kNoOffset ? "" : " (byte " + std::to_string(why.offset()) + ")"));
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

namespace {

// The last field of step 3: verificationMaterial.publicKey.hint, when both objects are present.
Status read_hint(const Where& w, const Value& root, const std::string& p, Envelope& env) {
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

}  // namespace

Status read_bundle(const Where& w, Bytes data, Envelope& env, std::uint64_t& json_bytes) {
  const std::string p = "signature";
  if (data.size > F::kMaxSignatureSize) return malformed(w, p, "the bundle is above the limit of 64 MiB");
  Result<json::Document> doc = read_json(data.data, static_cast<std::size_t>(data.size), kMaxBundleValues);
  if (!doc.ok()) return not_json(w, p, doc.error());
  json_bytes = std::max<std::uint64_t>(json_bytes, doc.value().memory());
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
  return read_hint(w, root, p, env);
}

std::vector<std::uint8_t> pae(const std::string& type, const std::vector<std::uint8_t>& body) {
  const std::string head = "DSSEv1 " + std::to_string(type.size()) + " " + type + " " + std::to_string(body.size()) + " ";
  std::vector<std::uint8_t> out(head.begin(), head.end());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

#endif  // FATPTE_WITH_OPENSSL

}  // namespace signing
}  // namespace fatpte
