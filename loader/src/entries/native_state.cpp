// The state an NPTG delegate payload declares (entries/native_state.hpp). Slots are the schema's
// field positions (backends/native/serialization/native_graph.fbs), as fatpte/executorch/nptg.py
// names them.
#include "entries/native_state.hpp"

#include <flatbuffers/flatbuffers.h>

#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "value/scalar_type.hpp"

namespace fatpte {
namespace entries {
namespace {

using ::flatbuffers::Offset;
using ::flatbuffers::String;
using ::flatbuffers::Table;
using ::flatbuffers::Vector;
using Tables = Vector<Offset<Table>>;

constexpr ::flatbuffers::voffset_t slot(int i) { return static_cast<::flatbuffers::voffset_t>(4 + 2 * i); }

// A table whose listed fields the verifier passed: strings, tables and vectors of tables by slot.
class Checked {
 public:
  Checked(::flatbuffers::Verifier& v, const Table* t) : v_(v), t_(t), ok_(t != nullptr && t->VerifyTableStart(v)) {}
  bool ok() const { return ok_; }
  const String* string(int i, bool required) {
    const String* s = nullptr;
    if (ok_ && t_->VerifyOffset(v_, slot(i))) s = t_->GetPointer<const String*>(slot(i));
    ok_ = ok_ && v_.VerifyString(s) && (s != nullptr || !required);
    return ok_ ? s : nullptr;
  }
  const Table* table(int i, bool required) {
    const Table* t = nullptr;
    if (ok_ && t_->VerifyOffset(v_, slot(i))) t = t_->GetPointer<const Table*>(slot(i));
    ok_ = ok_ && (t != nullptr || !required);
    return ok_ ? t : nullptr;
  }
  const Tables* tables(int i) {
    const Tables* vec = nullptr;
    if (ok_ && t_->VerifyOffset(v_, slot(i))) vec = t_->GetPointer<const Tables*>(slot(i));
    ok_ = ok_ && v_.VerifyVector(vec);
    return ok_ ? vec : nullptr;
  }
  template <typename T>
  T scalar(int i, T fallback) {
    ok_ = ok_ && t_->VerifyField<T>(v_, slot(i), sizeof(T));
    return ok_ ? t_->GetField<T>(slot(i), fallback) : fallback;
  }
  bool end() { return ok_ && v_.EndTable(); }

 private:
  ::flatbuffers::Verifier& v_;
  const Table* t_;
  bool ok_;
};

struct Typed {
  std::string dtype;
  std::vector<NativeDim> shape;
};

// A TensorMeta: dtype (slot 0) and sizes (slot 1: tables of min, max), as nptg.py's _meta.
std::optional<Typed> meta(::flatbuffers::Verifier& v, const Table* t) {
  Checked m(v, t);
  const char* dtype = native_dtype_name(m.scalar<std::int8_t>(0, 0));
  const Tables* sizes = m.tables(1);
  if (!m.ok() || *dtype == '\0') return std::nullopt;
  Typed out{dtype, {}};
  for (::flatbuffers::uoffset_t i = 0; sizes != nullptr && i < sizes->size(); ++i) {
    Checked d(v, sizes->Get(i));
    const auto lo = d.scalar<std::int64_t>(0, 0);
    const auto hi = d.scalar<std::int64_t>(1, -1);
    if (!d.end()) return std::nullopt;
    out.shape.push_back(lo == hi ? NativeDim{lo, ""}
                                 : NativeDim{0, "s" + std::to_string(i) + (hi < 0 ? "" : "<=" + std::to_string(hi))});
  }
  if (!m.end()) return std::nullopt;
  return out;
}

using Typing = std::map<std::string, Typed>;

// Each (name, meta) table of `vec` into `out`, the later of two names winning as in a dict.
// A constant's kind (slot 3) must be one nptg.py names (user_input, parameter, buffer,
// constant_tensor), and its data_key (slot 1) is required.
bool named_metas(::flatbuffers::Verifier& v, const Tables* vec, int name_slot, int meta_slot, Typing& out) {
  const bool constants = meta_slot == 2;
  for (::flatbuffers::uoffset_t i = 0; vec != nullptr && i < vec->size(); ++i) {
    Checked c(v, vec->Get(i));
    const String* name = c.string(name_slot, true);
    const Table* m = c.table(meta_slot, true);
    if (constants && (c.string(1, true) == nullptr || c.scalar<std::uint8_t>(3, 0) > 3)) return false;
    if (!c.ok()) return false;
    auto typed = meta(v, m);
    if (!typed || !c.end()) return false;
    out[name->str()] = std::move(*typed);
  }
  return true;
}

void keep(std::vector<NativeBuffer>& out, std::size_t first, const std::string& fqn, const Typed* typed) {
  for (std::size_t k = first; k < out.size(); ++k) {
    if (out[k].fqn == fqn) return;
  }
  out.push_back(typed == nullptr ? NativeBuffer{fqn, false, "", {}} : NativeBuffer{fqn, true, typed->dtype, typed->shape});
}

// One method (name 0, graph 1, constants 2, output_specs 3, mutable_buffers 4): its buffers.
bool method_buffers(::flatbuffers::Verifier& v, const Table* t, std::vector<NativeBuffer>& out) {
  Checked m(v, t);
  m.string(0, true);
  Checked graph(v, m.table(1, true));
  const Tables* values = graph.tables(3);
  const Tables* constants = m.tables(2);
  const Tables* specs = m.tables(3);
  const Tables* mutable_buffers = m.tables(4);
  Typing by_value, by_constant;
  if (!m.ok() || !graph.ok() || !named_metas(v, values, 0, 1, by_value) ||
      !named_metas(v, constants, 0, 2, by_constant)) {
    return false;
  }
  const std::size_t first = out.size();
  for (::flatbuffers::uoffset_t i = 0; specs != nullptr && i < specs->size(); ++i) {
    Checked s(v, specs->Get(i));
    const String* name = s.string(0, true);
    const auto kind = s.scalar<std::uint8_t>(1, 0);
    const String* target = s.string(2, false);
    if (!s.end() || kind > 2) return false;
    if (kind != 1) continue;  // BUFFER_MUTATION
    const auto typed = by_value.find(name->str());
    keep(out, first, (target != nullptr ? target : name)->str(), typed == by_value.end() ? nullptr : &typed->second);
  }
  for (::flatbuffers::uoffset_t i = 0; mutable_buffers != nullptr && i < mutable_buffers->size(); ++i) {
    Checked b(v, mutable_buffers->Get(i));
    const String* name = b.string(0, true);
    const String* fqn = b.string(1, true);
    if (!b.end()) return false;
    auto typed = by_constant.find(name->str());
    if (typed == by_constant.end()) typed = by_value.find(name->str());
    const bool found = typed != by_constant.end() && typed != by_value.end();
    keep(out, first, fqn->str(), found ? &typed->second : nullptr);
  }
  return graph.end() && m.end();
}

}  // namespace

std::optional<std::vector<NativeBuffer>> native_buffers(Bytes payload) {
  if (payload.size < 8 || payload.size >= FLATBUFFERS_MAX_BUFFER_SIZE || std::memcmp(payload.data + 4, "NPTG", 4) != 0) {
    return std::nullopt;
  }
  ::flatbuffers::Verifier v(payload.data, static_cast<std::size_t>(payload.size));
  const std::size_t at = v.VerifyOffset(0);  // the root table's offset, within the payload; 0 when not
  if (at == 0) return std::nullopt;
  Checked root(v, reinterpret_cast<const Table*>(payload.data + at));
  const Tables* methods = root.tables(1);
  if (!root.ok() || methods == nullptr) return std::nullopt;
  std::vector<NativeBuffer> out;
  for (::flatbuffers::uoffset_t i = 0; i < methods->size(); ++i) {
    if (!method_buffers(v, methods->Get(i), out)) return std::nullopt;
  }
  if (!root.end()) return std::nullopt;
  return out;
}

}  // namespace entries
}  // namespace fatpte
