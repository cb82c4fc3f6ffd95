// The manifest's content rules, mirroring fatpte/manifest/ check_container in its order:
// verifying (manifest/verify.cpp: every rule of specs/nfat-manifest.md 2.1, UTF-8 and the work
// budget of 2.3, before any field is read), the value rules of _build, the consistency rules with
// the tables, then the payload SHA-256 digests. Runs
// last in the canonical order, over a container whose manifest is placed and whose CRC32C and
// identifier are sound. Offsets are absolute in the file: the manifest offset plus the position
// of the manifest table the rule is about, as Python reports them.
#include <array>
#include <cinttypes>
#include <limits>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/sha256.hpp"
#include "common/text.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"
#include "manifest/golden.hpp"
#include "manifest/rules.hpp"
#include "manifest/verify.hpp"
#include "nfat_manifest_generated.h"
#include "value/adapter.hpp"
#include "value/scalar_type.hpp"

namespace fatpte {

// fatpte/value/dtypes.py LAYOUT_DTYPES: the dtype names a TensorLayout may give
// (specs/nfat-manifest.md 3.3), each with the ScalarType it stands for, which the runner's
// NamedDataMap answers get_tensor_layout with: every ScalarType a program's tensor may have
// (program_dtype_name, value/scalar_type.hpp, where the numbers and their names are given once)
// but the packed ones, quint4x2 and quint2x4, whose elements are not whole bytes.
const LayoutDtype* layout_dtype(const char* name) {
  static const std::vector<LayoutDtype> table = [] {
    std::vector<LayoutDtype> out;
    for (int number = 0; number <= static_cast<int>(ScalarType::kUInt64); ++number) {
      const auto code = static_cast<std::int8_t>(number);
      const auto type = static_cast<ScalarType>(code);
      const char* dtype = program_dtype_name(code);
      if (*dtype == '\0' || type == ScalarType::kQUInt4x2 || type == ScalarType::kQUInt2x4) continue;
      out.push_back(LayoutDtype{dtype, program_element_size(code), code});
    }
    return out;
  }();
  for (const LayoutDtype& d : table) {
    if (std::strcmp(name, d.name) == 0) return &d;
  }
  return nullptr;
}

namespace {

namespace M = nfat::manifest;
namespace F = format;

constexpr std::size_t kMaxTextBytes = manifest_schema::kMaxTextBytes;
constexpr std::size_t kSha256Size = manifest_schema::kSha256Size;

std::optional<std::uint64_t> layout_element_bytes(const ::flatbuffers::String* dtype) {
  const LayoutDtype* d = dtype == nullptr ? nullptr : layout_dtype(dtype->c_str());
  if (d == nullptr) return std::nullopt;
  return d->bytes;
}

// The tensor's bytes (manifest.TensorLayout.nbytes), saturating: a product past 2^64 - 1 can equal
// no segment size, and saturating keeps the comparison exact without overflow.
std::uint64_t layout_nbytes(const M::TensorLayout& lay, std::uint64_t element) {
  std::uint64_t n = element;
  if (lay.sizes() != nullptr) {
    for (const std::int32_t d : *lay.sizes()) {
      const auto size = static_cast<std::uint64_t>(d);
      if (size != 0 && n > UINT64_MAX / size) return UINT64_MAX;
      n *= size;
    }
  }
  return n;
}


// ---- decoded values the consistency rules compare ----

struct DimV {
  std::uint64_t size;
  std::optional<std::string> symbol;
  bool operator==(const DimV& o) const { return size == o.size && symbol == o.symbol; }
};
struct TensorV {
  std::string dtype;
  std::vector<DimV> shape;
  std::optional<std::string> name;
  // specs/nfat-manifest.md section 5: the same dtype and dims, and the same name where both have one.
  bool agrees(const TensorV& o) const { return dtype == o.dtype && shape == o.shape && (!name || !o.name || name == o.name); }
};
struct MethodV {
  std::string name;
  std::vector<TensorV> parts[3];  // inputs, outputs, buffers
};
struct EntryV {
  const M::Entry* record = nullptr;
  std::string name;
  std::uint64_t position;  // of the Entry table, within the manifest
  std::vector<std::string> named_data;
  std::optional<std::vector<MethodV>> signature;
  std::optional<std::string> source_digest;
  std::vector<std::uint8_t> payload_sha256;  // empty: none
};

std::string str(const ::flatbuffers::String* s) { return s == nullptr ? std::string() : s->str(); }
std::optional<std::string> opt(const ::flatbuffers::String* s) {
  return s == nullptr ? std::nullopt : std::optional<std::string>(s->str());
}

// The value rules of manifest._build, in its order; `pos_of` gives a table's manifest position.
class Builder {
 public:
  Builder(const std::uint8_t* base, std::uint64_t file_offset) : base_(base), file_offset_(file_offset) {}

  template <typename T>
  std::uint64_t pos(const T* table) const {
    return static_cast<std::uint64_t>(reinterpret_cast<const std::uint8_t*>(table) - base_);
  }

  template <typename T>
  Status invalid(const T* table, const std::string& path, const std::string& message) const {
    return fail(Error::MANIFEST_VALUE_INVALID, file_offset_ + pos(table), path, "%s", message.c_str());
  }

  template <typename T>
  Status nonempty(const T* table, const ::flatbuffers::String* s, const std::string& path, const char* key) const {
    const std::size_t n = s == nullptr ? 0 : s->size();
    if (n == 0 || n > kMaxTextBytes) {
      return invalid(table, path + "." + key,
                     std::string(key) + " must be 1 to 4096 bytes, got " + std::to_string(n));
    }
    return Status();
  }

  static bool digest_ok(const std::string& d) {
    // [a-z0-9][a-z0-9_-]{0,31}:(?:[0-9a-f]{2}){1,64}
    const auto colon = d.find(':');
    if (colon == std::string::npos || colon == 0 || colon > 32) return false;
    for (std::size_t i = 0; i < colon; ++i) {
      const char c = d[i];
      const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      if (!(alnum || (i > 0 && (c == '_' || c == '-')))) return false;
    }
    const std::size_t hex = d.size() - colon - 1;
    if (hex == 0 || hex % 2 != 0 || hex > 128) return false;
    for (std::size_t i = colon + 1; i < d.size(); ++i) {
      const char c = d[i];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
  }

  Status tensors(const ::flatbuffers::Vector<::flatbuffers::Offset<M::TensorSpec>>* v, bool buffers,
                 const std::string& path, std::vector<TensorV>& out) const {
    if (v == nullptr) return Status();
    for (::flatbuffers::uoffset_t j = 0; j < v->size(); ++j) {
      const M::TensorSpec* t = v->Get(j);
      const std::string tp = path + "[" + std::to_string(j) + "]";
      if (buffers && t->name() != nullptr && t->name()->size() == 0) {
        return invalid(t, tp + ".name", "a mutable buffer's name, when present, must not be empty");
      }
      TensorV tv;
      if (t->shape() != nullptr) {
        for (::flatbuffers::uoffset_t k = 0; k < t->shape()->size(); ++k) {
          const M::Dim* d = t->shape()->Get(k);
          if (d->symbol() != nullptr && (d->size() != 0 || d->symbol()->size() == 0)) {
            return invalid(d, tp + ".shape[" + std::to_string(k) + "]",
                           "a symbolic dimension has a non-empty symbol and size 0");
          }
          tv.shape.push_back(DimV{d->size(), opt(d->symbol())});
        }
      }
      FATPTE_RETURN_IF_ERROR(nonempty(t, t->dtype(), tp, "dtype"));
      tv.dtype = str(t->dtype());
      if (t->program_dtype() != nullptr) {
        const std::string why = adapter_problem(tv.dtype, t->program_dtype()->str());
        if (!why.empty()) return invalid(t, tp + ".program_dtype", why);
      }
      tv.name = opt(t->name());
      out.push_back(std::move(tv));
    }
    return Status();
  }

  Status signature(const M::Signature* sig, const std::string& path, std::vector<MethodV>& out) const {
    if (sig->methods() == nullptr) return Status();
    static const char* const kParts[3] = {"inputs", "outputs", "buffers"};
    for (::flatbuffers::uoffset_t i = 0; i < sig->methods()->size(); ++i) {
      const M::Method* m = sig->methods()->Get(i);
      const std::string p = path + ".methods[" + std::to_string(i) + "]";
      FATPTE_RETURN_IF_ERROR(nonempty(m, m->name(), p, "name"));
      MethodV mv;
      mv.name = str(m->name());
      for (const MethodV& seen : out) {
        if (seen.name == mv.name) return invalid(m, p + ".name", "method '" + mv.name + "' appears twice");
      }
      const ::flatbuffers::Vector<::flatbuffers::Offset<M::TensorSpec>>* parts[3] = {m->inputs(), m->outputs(),
                                                                                    m->buffers()};
      for (int k = 0; k < 3; ++k) {
        FATPTE_RETURN_IF_ERROR(tensors(parts[k], k == 2, p + "." + kParts[k], mv.parts[k]));
      }
      out.push_back(std::move(mv));
    }
    return Status();
  }

  // Value rule 2.2.11 (codec._golden): methods and keys 1 to 4096 bytes, tolerances finite and >= 0.
  Status golden(const M::Entry* e, const std::string& path) const {
    if (e->golden() == nullptr) return Status();
    for (::flatbuffers::uoffset_t c = 0; c < e->golden()->size(); ++c) {
      const M::GoldenCall* call = e->golden()->Get(c);
      const std::string p = path + "[" + std::to_string(c) + "]";
      FATPTE_RETURN_IF_ERROR(nonempty(call, call->method(), p, "method"));
      if (call->inputs() != nullptr) {
        for (::flatbuffers::uoffset_t j = 0; j < call->inputs()->size(); ++j) {
          const std::size_t n = call->inputs()->Get(j)->size();
          if (n == 0 || n > kMaxTextBytes) {
            return invalid(call, p + ".inputs[" + std::to_string(j) + "]", "a golden input key must be 1 to 4096 bytes");
          }
        }
      }
      if (call->outputs() == nullptr) continue;
      for (::flatbuffers::uoffset_t j = 0; j < call->outputs()->size(); ++j) {
        const M::GoldenOutput* o = call->outputs()->Get(j);
        const std::string op = p + ".outputs[" + std::to_string(j) + "]";
        FATPTE_RETURN_IF_ERROR(nonempty(o, o->key(), op, "key"));
        const double values[2] = {o->atol(), o->rtol()};
        static const char* const kNames[2] = {"atol", "rtol"};
        for (int k = 0; k < 2; ++k) {
          // NaN fails both comparisons: `!(v >= 0)` is true for it.
          if (!(values[k] >= 0) || values[k] > std::numeric_limits<double>::max()) {
            return invalid(o, op + "." + kNames[k],
                           std::string(kNames[k]) + " is not a finite number at least 0");
          }
        }
      }
    }
    return Status();
  }

  // manifest.TensorLayout.problem(), in its order.
  Status layout(const M::TensorLayout* lay, const std::string& path) const {
    FATPTE_RETURN_IF_ERROR(nonempty(lay, lay->dtype(), path, "dtype"));
    if (!layout_element_bytes(lay->dtype())) {
      return invalid(lay, path, "dtype '" + lay->dtype()->str() + "' is not a dtype of specs/nfat-manifest.md 3.3");
    }
    const std::size_t rank = lay->sizes() == nullptr ? 0 : lay->sizes()->size();
    for (std::size_t k = 0; k < rank; ++k) {
      if (lay->sizes()->Get(static_cast<::flatbuffers::uoffset_t>(k)) < 0) {
        return invalid(lay, path, "sizes[" + std::to_string(k) + "] is negative");
      }
    }
    if (lay->dim_order() != nullptr && lay->dim_order()->size() != 0) {
      std::vector<bool> seen(rank, false);
      bool permutation = lay->dim_order()->size() == rank;
      for (std::size_t k = 0; permutation && k < rank; ++k) {
        const std::uint8_t d = lay->dim_order()->Get(static_cast<::flatbuffers::uoffset_t>(k));
        permutation = d < rank && !seen[d];
        if (permutation) seen[d] = true;
      }
      if (!permutation) return invalid(lay, path, "dim_order is not a permutation of 0..rank-1");
    }
    return Status();
  }

  Status entries(const M::Manifest& m, std::vector<EntryV>& out) const {
    if (m.entries() == nullptr) return Status();
    for (::flatbuffers::uoffset_t i = 0; i < m.entries()->size(); ++i) {
      const M::Entry* e = m.entries()->Get(i);
      const std::string p = "manifest.entries[" + std::to_string(i) + "]";
      const auto* sha = e->payload_sha256();
      if (sha != nullptr && sha->size() != 0 && sha->size() != kSha256Size) {
        return invalid(e, p + ".payload_sha256",
                       "payload_sha256 has " + std::to_string(sha->size()) + " bytes; a SHA-256 has 32");
      }
      if (e->source_digest() != nullptr && !digest_ok(e->source_digest()->str())) {
        return invalid(e, p + ".source_digest",
                       "source_digest '" + e->source_digest()->str() + "' is not '<algorithm>:<lowercase hex>'");
      }
      EntryV ev;
      ev.record = e;
      if (e->named_data() != nullptr) {
        for (::flatbuffers::uoffset_t k = 0; k < e->named_data()->size(); ++k) {
          const auto* key = e->named_data()->Get(k);
          if (key->size() == 0) return invalid(e, p + ".named_data[" + std::to_string(k) + "]", "a named-data key is empty");
          ev.named_data.push_back(key->str());
        }
      }
      if (const auto* backends = e->executorch_backends()) {
        std::set<std::string> seen;
        for (::flatbuffers::uoffset_t k = 0; k < backends->size(); ++k) {
          const auto* id = backends->Get(k);
          const std::string bp = p + ".executorch_backends[" + std::to_string(k) + "]";
          if (id->size() == 0 || id->size() > kMaxTextBytes) {
            return invalid(e, bp, "a backend id must be 1 to 4096 bytes");
          }
          if (!seen.insert(id->str()).second) return invalid(e, bp, "backend id '" + id->str() + "' is listed twice");
        }
      }
      FATPTE_RETURN_IF_ERROR(nonempty(e, e->name(), p, "name"));
      ev.name = str(e->name());
      ev.position = pos(e);
      if (e->signature() != nullptr) {
        std::vector<MethodV> methods;
        FATPTE_RETURN_IF_ERROR(signature(e->signature(), p + ".signature", methods));
        ev.signature = std::move(methods);
      }
      FATPTE_RETURN_IF_ERROR(golden(e, p + ".golden"));
      ev.source_digest = opt(e->source_digest());
      if (sha != nullptr) ev.payload_sha256.assign(sha->begin(), sha->end());
      out.push_back(std::move(ev));
    }
    return Status();
  }

 private:
  const std::uint8_t* base_;
  std::uint64_t file_offset_;
};

// dtypes and dims (and names where both have one) position by position, methods in any order:
// rules.signature_difference.
bool same_signature(const std::vector<MethodV>& a, const std::vector<MethodV>& b) {
  std::multiset<std::string> na, nb;
  for (const auto& m : a) na.insert(m.name);
  for (const auto& m : b) nb.insert(m.name);
  if (na != nb) return false;
  for (const auto& ma : a) {
    for (const auto& mb : b) {
      if (mb.name != ma.name) continue;
      for (int k = 0; k < 3; ++k) {
        if (ma.parts[k].size() != mb.parts[k].size()) return false;
        for (std::size_t j = 0; j < ma.parts[k].size(); ++j) {
          if (!ma.parts[k][j].agrees(mb.parts[k][j])) return false;
        }
      }
      break;
    }
  }
  return true;
}

// Why a golden tensor of `layout` does not fit the method's tensor `spec` (manifest.golden_fit_problem),
// or "".
std::string golden_fit(const TensorV& spec, const M::TensorLayout& layout) {
  const std::string dtype = layout.dtype()->str();
  std::vector<std::int64_t> sizes;
  if (layout.sizes() != nullptr) sizes.assign(layout.sizes()->begin(), layout.sizes()->end());
  if (const char* kind = detail::golden_scalar_dtype(spec.dtype)) {
    std::uint64_t numel = 1;
    for (std::int64_t d : sizes) numel *= static_cast<std::uint64_t>(d);  // each < 2^31, a rank < vector bound
    if (dtype != kind || numel != 1) {
      return "the method takes a " + spec.dtype + " value, given as one " + kind + " element";
    }
    return "";
  }
  if (layout_dtype(spec.dtype.c_str()) == nullptr) return "the method's " + spec.dtype + " value cannot be given";
  bool fits = dtype == spec.dtype && sizes.size() == spec.shape.size();
  for (std::size_t d = 0; fits && d < sizes.size(); ++d) {
    fits = spec.shape[d].symbol || spec.shape[d].size == static_cast<std::uint64_t>(sizes[d]);
  }
  return fits ? "" : "the golden tensor's dtype or shape is not the method's";
}

// Step 10 for golden call `c` of entry `e`: rules._golden_call_problem, in its order.
Status golden_call_rules(const EntryV& e, ::flatbuffers::uoffset_t c,
                         const std::map<std::string, const M::TensorLayout*>& layout_of, std::uint64_t base,
                         const std::string& path) {
  const M::GoldenCall* call = e.record->golden()->Get(c);
  const std::uint64_t at = base + e.position;
  FATPTE_CHECK(e.signature.has_value(), Error::GOLDEN_CALL_MISMATCH, at, path,
               "entry '%s', golden call %u: the entry states no program signature to check the call against",
               e.name.c_str(), c);
  const MethodV* method = nullptr;
  for (const MethodV& m : *e.signature) {
    if (m.name == call->method()->str()) method = &m;
  }
  FATPTE_CHECK(method != nullptr, Error::GOLDEN_CALL_MISMATCH, at, path + ".method",
               "entry '%s', golden call %u: the entry's program has no method '%s'", e.name.c_str(), c,
               detail::clipped(call->method()->str()).c_str());
  static const char* const kParts[2] = {"inputs", "outputs"};
  for (int part = 0; part < 2; ++part) {
    std::vector<const ::flatbuffers::String*> keys;
    if (part == 0 && call->inputs() != nullptr) keys.assign(call->inputs()->begin(), call->inputs()->end());
    if (part == 1 && call->outputs() != nullptr) {
      for (const M::GoldenOutput* o : *call->outputs()) keys.push_back(o->key());
    }
    const std::vector<TensorV>& specs = method->parts[part];
    FATPTE_CHECK(keys.size() == specs.size(), Error::GOLDEN_CALL_MISMATCH, at, path + "." + kParts[part],
                 "entry '%s', golden call %u: the call has %zu %s, the method %zu", e.name.c_str(), c, keys.size(),
                 kParts[part], specs.size());
    for (std::size_t j = 0; j < keys.size(); ++j) {
      const std::string where = path + "." + kParts[part] + "[" + std::to_string(j) + "]" + (part == 1 ? ".key" : "");
      const auto found = layout_of.find(keys[j]->str());
      FATPTE_CHECK(found != layout_of.end(), Error::GOLDEN_KEY_INVALID, at, where,
                   "entry '%s', golden call %u: key '%s' is not a named-data key", e.name.c_str(), c,
                   detail::clipped(keys[j]->str()).c_str());
      FATPTE_CHECK(found->second != nullptr && detail::contiguous_layout(*found->second), Error::GOLDEN_KEY_INVALID,
                   at, where, "entry '%s', golden call %u: key '%s' has no contiguous tensor layout", e.name.c_str(),
                   c, detail::clipped(keys[j]->str()).c_str());
      const std::string why = golden_fit(specs[j], *found->second);
      FATPTE_CHECK(why.empty(), Error::GOLDEN_CALL_MISMATCH, at, where, "entry '%s', golden call %u, %s %zu: %s",
                   e.name.c_str(), c, kParts[part], j, why.c_str());
    }
  }
  return Status();
}

// Section 2 of specs/nfat-manifest.md whole: the verifier (2.1, 2.3), then the value rules of 2.2 in
// manifest._build's order, entries first, then the keys. Fills what the consistency rules compare.
Status decode(const std::uint8_t* m, std::uint64_t size, std::uint64_t base, std::vector<EntryV>& entries,
              std::vector<std::pair<std::string, std::uint32_t>>& named,
              std::vector<const M::TensorLayout*>& named_layouts) {
  FATPTE_RETURN_IF_ERROR(detail::verify_manifest(m, size, base));
  const M::Manifest& root = *M::GetManifest(m);
  Builder b(m, base);
  FATPTE_RETURN_IF_ERROR(b.entries(root, entries));
  if (root.named_data() != nullptr) {
    named.reserve(root.named_data()->size());
    for (::flatbuffers::uoffset_t i = 0; i < root.named_data()->size(); ++i) {
      const M::NamedData* nd = root.named_data()->Get(i);
      const std::string p = "manifest.named_data[" + std::to_string(i) + "]";
      FATPTE_RETURN_IF_ERROR(b.nonempty(nd, nd->key(), p, "key"));
      named.emplace_back(nd->key()->str(), nd->segment());
      // std::string compares bytewise (as unsigned char), like Python's bytes.
      if (i > 0 && !(named[i - 1].first < named[i].first)) {
        return fail(Error::NAMED_DATA_KEYS_UNSORTED, base + b.pos(nd), p + ".key",
                    "key '%s' is not after '%s': keys must be unique and sorted bytewise",
                    detail::clipped(named[i].first).c_str(), detail::clipped(named[i - 1].first).c_str());
      }
      if (nd->layout() != nullptr) FATPTE_RETURN_IF_ERROR(b.layout(nd->layout(), p + ".layout"));
      named_layouts.push_back(nd->layout());
    }
  }
  return Status();
}

}  // namespace

namespace detail {

Status check_manifest_buffer(const std::uint8_t* data, std::uint64_t size, std::uint64_t base) {
  std::vector<EntryV> entries;
  std::vector<std::pair<std::string, std::uint32_t>> named;
  std::vector<const M::TensorLayout*> layouts;
  return decode(data, size, base, entries, named, layouts);
}

}  // namespace detail

namespace {

// The manifest decoded once, what each rule group below reads.
struct Decoded {
  std::vector<EntryV> entries;
  std::vector<std::pair<std::string, std::uint32_t>> named;
  std::vector<const M::TensorLayout*> named_layouts;  // per key, nullptr when it has none
  std::uint64_t base = 0;                              // the manifest's offset in the file
};

// Section 7 steps 3 to 5 (rules.consistency): one manifest entry per table entry, by name.
Status entry_name_rules(const Decoded& d, const Structure& st) {
  const Header& h = st.header;
  std::map<std::string, std::size_t> seen;
  std::set<std::string> table;
  for (const Entry& e : st.entries) table.insert(e.name);
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const EntryV& e = d.entries[i];
    const std::string path = "manifest.entries[" + std::to_string(i) + "].name";
    auto it = seen.find(e.name);
    if (it != seen.end()) {
      return fail(Error::DUPLICATE_MANIFEST_ENTRY, d.base + e.position, path,
                  "manifest entries %zu and %zu are both named '%s'", it->second, i, e.name.c_str());
    }
    seen.emplace(e.name, i);
    FATPTE_CHECK(table.count(e.name) != 0, Error::MANIFEST_ENTRY_UNKNOWN, d.base + e.position, path,
                 "manifest entry '%s' names no entry of the table", e.name.c_str());
  }
  for (const Entry& e : st.entries) {
    FATPTE_CHECK(seen.count(e.name) != 0, Error::MANIFEST_ENTRY_MISSING,
                 std::uint64_t{h.header_size} + std::uint64_t{e.index} * h.entry_size,
                 "entries[" + std::to_string(e.index) + "].name",
                 "entry '%s' has no entry in the manifest; every entry must have exactly one", e.name.c_str());
  }
  return Status();
}

// Section 7 steps 6 and 7 (rules.consistency): every key names a segment its layout fits, every
// segment is named, every key an entry needs is defined.
Status named_data_rules(const Decoded& d, const Structure& st, std::uint64_t seg_at) {
  const Header& h = st.header;
  std::set<std::uint32_t> referenced;
  std::set<std::string> keys;
  for (std::size_t i = 0; i < d.named.size(); ++i) {
    const auto& [key, segment] = d.named[i];
    FATPTE_CHECK(segment < st.segments.size(), Error::NAMED_DATA_BAD_SEGMENT, d.base,
                 "manifest.named_data[" + std::to_string(i) + "].segment",
                 "named-data key '%s' points at segment %u, but the segment table has %zu", key.c_str(), segment,
                 st.segments.size());
    if (const M::TensorLayout* lay = d.named_layouts[i]) {
      const std::uint64_t want = layout_nbytes(*lay, *layout_element_bytes(lay->dtype()));
      const std::uint64_t have = st.segments[segment].size;
      FATPTE_CHECK(want == have, Error::NAMED_DATA_LAYOUT_MISMATCH, d.base,
                   "manifest.named_data[" + std::to_string(i) + "].layout",
                   "named-data key '%s' has a layout of %" PRIu64 " bytes, but its segment %u holds %" PRIu64,
                   key.c_str(), want, segment, have);
    }
    referenced.insert(segment);
    keys.insert(key);
  }
  for (const Segment& s : st.segments) {
    FATPTE_CHECK(referenced.count(s.index) != 0, Error::SEGMENT_UNREFERENCED,
                 seg_at + std::uint64_t{s.index} * h.segment_entry_size, "segments[" + std::to_string(s.index) + "]",
                 "segment %u is named by no named-data key: its bytes are unreachable", s.index);
  }
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    for (std::size_t k = 0; k < d.entries[i].named_data.size(); ++k) {
      const std::string& key = d.entries[i].named_data[k];
      FATPTE_CHECK(keys.count(key) != 0, Error::NAMED_DATA_KEY_MISSING, d.base + d.entries[i].position,
                   "manifest.entries[" + std::to_string(i) + "].named_data[" + std::to_string(k) + "]",
                   "entry '%s' needs named-data key '%s', which the manifest does not define",
                   d.entries[i].name.c_str(), key.c_str());
    }
  }
  return Status();
}

// (method, part, position) -> (name, entry naming it first): rules.signature_problems.
using Namers = std::map<std::tuple<std::string, int, std::size_t>, std::pair<std::string, std::string>>;

// Entry `e`'s signature against the first one stated, and its tensor names against those other
// entries gave the same positions (rules.signature_problems).
Status entry_signature_rules(const EntryV& e, const EntryV*& first_sig, Namers& namers, std::uint64_t at,
                             const std::string& path) {
  static const char* const kParts[3] = {"inputs", "outputs", "buffers"};
  if (first_sig == nullptr) {
    first_sig = &e;
  } else {
    FATPTE_CHECK(same_signature(*first_sig->signature, *e.signature), Error::SIGNATURE_MISMATCH, at, path,
                 "entries '%s' and '%s' declare different program signatures", first_sig->name.c_str(),
                 e.name.c_str());
  }
  for (const MethodV& m : *e.signature) {
    for (int k = 0; k < 3; ++k) {
      for (std::size_t j = 0; j < m.parts[k].size(); ++j) {
        if (!m.parts[k][j].name) continue;
        const auto got = namers.emplace(std::make_tuple(m.name, k, j), std::make_pair(*m.parts[k][j].name, e.name));
        const auto& [name, who] = got.first->second;
        FATPTE_CHECK(name == *m.parts[k][j].name, Error::SIGNATURE_MISMATCH, at, path,
                     "entries '%s' and '%s' declare different program signatures: method '%s' %s[%zu] is "
                     "named '%s' by '%s' and '%s' by '%s'", who.c_str(), e.name.c_str(), m.name.c_str(),
                     kParts[k], j, name.c_str(), who.c_str(), m.parts[k][j].name->c_str(), e.name.c_str());
      }
    }
  }
  return Status();
}

// Section 7 step 8 (rules.consistency's last loop): entry by entry, its signature, then its source
// digest against the first one stated.
Status signature_and_source_rules(const Decoded& d) {
  const EntryV* first_sig = nullptr;
  const EntryV* first_digest = nullptr;
  Namers namers;
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const EntryV& e = d.entries[i];
    if (e.signature) {
      FATPTE_RETURN_IF_ERROR(entry_signature_rules(e, first_sig, namers, d.base + e.position,
                                                   "manifest.entries[" + std::to_string(i) + "].signature"));
    }
    if (!e.source_digest) continue;
    if (first_digest == nullptr) {
      first_digest = &e;
      continue;
    }
    FATPTE_CHECK(*e.source_digest == *first_digest->source_digest, Error::SOURCE_DIGEST_MISMATCH,
                 d.base + e.position, "manifest.entries[" + std::to_string(i) + "].source_digest",
                 "entries '%s' and '%s' were built from different source programs: %s vs %s",
                 first_digest->name.c_str(), e.name.c_str(), first_digest->source_digest->c_str(),
                 e.source_digest->c_str());
  }
  return Status();
}

// Section 7 step 9: each stated payload SHA-256 against the payload, each payload hashed once
// however many manifest entries claim it (Python does the same).
Status payload_digest_rules(const Decoded& d, Bytes buf, const Structure& st) {
  std::map<std::string, const Entry*> by_name;
  for (const Entry& e : st.entries) by_name[e.name] = &e;
  std::map<std::uint32_t, std::array<std::uint8_t, kSha256Size>> digests;
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const EntryV& me = d.entries[i];
    if (me.payload_sha256.empty()) continue;
    auto it = by_name.find(me.name);
    if (it == by_name.end()) continue;
    const Entry& e = *it->second;
    auto known = digests.find(e.index);
    if (known == digests.end()) {
      known = digests.emplace(e.index, detail::sha256(buf.data + e.offset, static_cast<std::size_t>(e.size))).first;
    }
    const auto& digest = known->second;
    FATPTE_CHECK(std::memcmp(digest.data(), me.payload_sha256.data(), kSha256Size) == 0,
                 Error::PAYLOAD_DIGEST_MISMATCH, d.base + me.position,
                 "manifest.entries[" + std::to_string(i) + "].payload_sha256",
                 "the SHA-256 of the payload of '%s' does not match its manifest entry", e.name.c_str());
  }
  return Status();
}

// Section 7 step 10 (rules.golden_problems): every golden call, then every golden digest.
Status golden_rules(const Decoded& d) {
  std::map<std::string, const M::TensorLayout*> layout_of;
  for (std::size_t i = 0; i < d.named.size(); ++i) layout_of[d.named[i].first] = d.named_layouts[i];
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const EntryV& e = d.entries[i];
    if (e.record->golden() == nullptr) continue;
    for (::flatbuffers::uoffset_t c = 0; c < e.record->golden()->size(); ++c) {
      FATPTE_RETURN_IF_ERROR(golden_call_rules(e, c, layout_of, d.base, "manifest.entries[" + std::to_string(i) +
                                               "].golden[" + std::to_string(c) + "]"));
    }
  }
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const EntryV& e = d.entries[i];
    const ::flatbuffers::String* stated = detail::provenance_value(*e.record, detail::kGoldenDigestKey);
    if (stated == nullptr) continue;
    const std::string actual = detail::golden_digest_hex(*e.record);
    FATPTE_CHECK(stated->str() == actual, Error::GOLDEN_DIGEST_MISMATCH, d.base + e.position,
                 "manifest.entries[" + std::to_string(i) + "].provenance",
                 "the golden calls of entry '%s' have SHA-256 %s, but its provenance %s says %s", e.name.c_str(),
                 actual.c_str(), detail::kGoldenDigestKey, detail::clipped(stated->str()).c_str());
  }
  return Status();
}

}  // namespace

// The manifest's rules in section 7's order, one function per group (mirroring
// fatpte/manifest/rules.py: consistency, then the payload digests, then golden_problems).
Status check_manifest_contents(Bytes buf, const Structure& st) {
  const Header& h = st.header;
  const std::uint64_t seg_at = std::uint64_t{h.header_size} + std::uint64_t{h.entry_count} * h.entry_size;
  if (h.manifest_size == 0) {
    if (st.segments.empty()) return Status();
    // Without a manifest no named-data key names a segment, so every segment is unreachable.
    return fail(Error::SEGMENT_UNREFERENCED, seg_at, "segments[0]",
                "segment 0 is named by no named-data key (the container has no manifest)");
  }
  if (!st.manifest_placed) return Status();
  Decoded d;
  d.base = h.manifest_offset;
  FATPTE_RETURN_IF_ERROR(decode(buf.data + h.manifest_offset, h.manifest_size, d.base, d.entries, d.named,
                                d.named_layouts));
  FATPTE_RETURN_IF_ERROR(entry_name_rules(d, st));
  FATPTE_RETURN_IF_ERROR(named_data_rules(d, st, seg_at));
  FATPTE_RETURN_IF_ERROR(signature_and_source_rules(d));
  FATPTE_RETURN_IF_ERROR(payload_digest_rules(d, buf, st));
  return golden_rules(d);
}

}  // namespace fatpte
