// Golden calls as the manifest states them (manifest/golden.hpp).
#include "manifest/golden.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "common/sha256.hpp"

namespace fatpte {
namespace detail {
namespace {

namespace M = nfat::manifest;

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
}

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
}

void put_str(std::vector<std::uint8_t>& out, const char* data, std::size_t size) {
  put_u32(out, static_cast<std::uint32_t>(size));
  out.insert(out.end(), data, data + size);
}

void put_str(std::vector<std::uint8_t>& out, const ::flatbuffers::String* s) {
  if (s == nullptr) {
    put_u32(out, 0);
    return;
  }
  put_str(out, s->c_str(), s->size());
}

void put_f64(std::vector<std::uint8_t>& out, double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  put_u64(out, bits);
}

}  // namespace

namespace {

std::vector<std::uint8_t> encode(const ::flatbuffers::Vector<::flatbuffers::Offset<M::GoldenCall>>* calls) {
  static const char kTag[] = "nfat.golden/1";
  std::vector<std::uint8_t> out;
  put_str(out, kTag, sizeof kTag - 1);
  put_u32(out, calls == nullptr ? 0 : calls->size());
  if (calls == nullptr) return out;
  for (const M::GoldenCall* call : *calls) {
    put_str(out, call->method());
    put_u32(out, call->inputs() == nullptr ? 0 : call->inputs()->size());
    if (call->inputs() != nullptr) {
      for (const ::flatbuffers::String* key : *call->inputs()) put_str(out, key);
    }
    put_u32(out, call->outputs() == nullptr ? 0 : call->outputs()->size());
    if (call->outputs() != nullptr) {
      for (const M::GoldenOutput* o : *call->outputs()) {
        put_str(out, o->key());
        put_f64(out, o->atol());
        put_f64(out, o->rtol());
      }
    }
  }
  return out;
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
