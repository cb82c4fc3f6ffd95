// Golden calls as the manifest states them (manifest/golden.hpp).
#include "manifest/golden.hpp"

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/sha256.hpp"
#include "value/canonical.hpp"

namespace fatpte {
namespace detail {
namespace {

namespace M = nfat::manifest;

// str(s) of a string the manifest may leave out (absent: the empty string).
void str(CanonicalWriter& w, const ::flatbuffers::String* s) {
  w.str(s == nullptr ? std::string_view() : std::string_view(s->c_str(), s->size()));
}

std::vector<std::uint8_t> encode(const ::flatbuffers::Vector<::flatbuffers::Offset<M::GoldenCall>>* calls) {
  CanonicalWriter w;
  w.str("nfat.golden/1");
  w.list(calls, [](CanonicalWriter& w, const M::GoldenCall* call) {
    str(w, call->method());
    w.list(call->inputs(), [](CanonicalWriter& w, const ::flatbuffers::String* key) { str(w, key); });
    w.list(call->outputs(), [](CanonicalWriter& w, const M::GoldenOutput* o) {
      str(w, o->key());
      w.f64(o->atol());
      w.f64(o->rtol());
    });
  });
  return w.take();
}

}  // namespace

std::vector<std::uint8_t> golden_encoding(const M::Entry& entry) { return encode(entry.golden()); }

std::vector<std::uint8_t> golden_encoding(const M::Entry* entry) {
  return encode(entry == nullptr ? nullptr : entry->golden());
}

std::string golden_digest_hex(const M::Entry& entry) {
  const std::vector<std::uint8_t> encoding = golden_encoding(entry);
  const auto digest = sha256(encoding.data(), encoding.size());
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

const ::flatbuffers::String* provenance_value(const M::Entry& entry, const char* key) {
  if (entry.provenance() == nullptr) return nullptr;
  for (const M::KeyValue* kv : *entry.provenance()) {
    if (kv->key() != nullptr && std::strcmp(kv->key()->c_str(), key) == 0) return kv->value();
  }
  return nullptr;
}

const char* golden_scalar_dtype(const std::string& kind) {
  if (kind == "Int") return "int64";
  if (kind == "Double") return "float64";
  if (kind == "Bool") return "bool";
  return nullptr;
}

bool contiguous_layout(const M::TensorLayout& layout) {
  if (layout.dim_order() == nullptr) return true;
  for (::flatbuffers::uoffset_t k = 0; k < layout.dim_order()->size(); ++k) {
    if (layout.dim_order()->Get(k) != k) return false;
  }
  return true;
}

}  // namespace detail
}  // namespace fatpte
