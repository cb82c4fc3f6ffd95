// The bundle room of signature/ (loader/layers.toml [rooms], above keys): the Sigstore bundle and
// its DSSE envelope (specs/nfat-signature.md sections 2 and 3.1, section 6 steps 2 and 3), read
// under strict, bounded JSON with every field's shape checked, PAE (the bytes a signature covers),
// and how the readers of the bundle and the statement report a broken rule (`malformed`, `get`).
// As fatpte/ops/signing/bundle.py.
#ifndef FATPTE_SRC_SIGNATURE_BUNDLE_HPP_
#define FATPTE_SRC_SIGNATURE_BUNDLE_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.hpp"
#include "fatpte/result.hpp"
#include "fatpte/signature.hpp"

namespace fatpte {
namespace signing {

constexpr std::size_t kMaxTextBytes = 4096;  // signing.MAX_TEXT_BYTES

// Every finding about the bundle or the statement is at the embedded signature's offset (kNoOffset
// for a detached one).
struct Where {
  std::uint64_t offset;
};

// A finding at `field` saying `what`; `code` is SIGNATURE_MALFORMED unless said otherwise.
Status malformed(const Where& w, const std::string& field, const std::string& what,
                 Error code = Error::SIGNATURE_MALFORMED);
// Python's _get: `obj` must be an object holding `key` of `kind` (`out` empty when it is absent
// and not `required`).
Status get(const Where& w, const json::Value& obj, const char* key, json::Kind kind, const std::string& path,
           json::Value& out, bool required = true);
// A JSON syntax error of a document, at its field.
Status not_json(const Where& w, const std::string& field, const Status& why);
// Section 2's rules: UTF-8, no key twice, integers of 64 bits only, 16 levels counting scalars
// (signing.MAX_JSON_DEPTH, as Python counts them), no lone surrogate; and at most `max_values`
// values when not 0, refused as they are counted.
Result<json::Document> read_json(const std::uint8_t* data, std::size_t size, std::size_t max_values);
// 64 lowercase hexadecimal digits into `out`; false otherwise.
bool hex_digest(std::string_view text, Digest& out);

// What the bundle's envelope holds, decoded.
struct Envelope {
  std::string payload_type;
  std::vector<std::uint8_t> payload;
  std::vector<std::vector<std::uint8_t>> signatures;
  bool has_hint = false;
  std::string hint;
};

// Steps 2 and 3: the bundle `data`, read into `env`. `json_bytes` becomes the larger of itself and
// the memory the parsed bundle held (signature/verify.hpp's SignatureWork).
Status read_bundle(const Where& w, Bytes data, Envelope& env, std::uint64_t& json_bytes);
// DSSE's pre-authentication encoding of a payload: the bytes a signature signs (step 4).
std::vector<std::uint8_t> pae(const std::string& type, const std::vector<std::uint8_t>& body);

}  // namespace signing
}  // namespace fatpte

#endif  // FATPTE_SRC_SIGNATURE_BUNDLE_HPP_
