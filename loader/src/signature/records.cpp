// The records room of signature/ (signature/records.hpp): section 4's entry and named-data records,
// field by field in schema order, with value/canonical.hpp's primitives.
#include "signature/records.hpp"

#include <string_view>

#include "value/canonical.hpp"

namespace fatpte {
namespace signing {
namespace {

namespace M = nfat::manifest;
using detail::CanonicalWriter;

constexpr const char* kEntryRecordTag = "nfat.manifest.entry/1";
// An entry stating a requirement of manifest revision 4 (canonical.ENTRY_RECORD_TAG_R4): an
// accelerator's device or capabilities, or the device's identity (cpu_cores, min_core, soc).
constexpr const char* kEntryRecordTagR4 = "nfat.manifest.entry/2";

bool names_device(const M::Requirements* q) {
  return q != nullptr && ((q->cpu_cores() != nullptr && q->cpu_cores()->size() != 0) || q->min_core() != nullptr ||
                          (q->soc() != nullptr && q->soc()->size() != 0));
}
constexpr const char* kNamedDataRecordTag = "nfat.named_data/1";

using Strings = ::flatbuffers::Vector<::flatbuffers::Offset<::flatbuffers::String>>;

// str(s) of a string the manifest rules require to be present.
void text(CanonicalWriter& w, const ::flatbuffers::String* s) { w.str(std::string_view(s->data(), s->size())); }

void opt_text(CanonicalWriter& w, const ::flatbuffers::String* s) {
  if (w.opt(s != nullptr)) text(w, s);
}

// list(str): an absent vector is the empty list.
void strings(CanonicalWriter& w, const Strings* v) {
  w.list(v, [](CanonicalWriter& out, const ::flatbuffers::String* s) { text(out, s); });
}

// list(tensor) with tensor: str dtype, list(dim: u64 size, opt(str symbol)), opt(str name).
void tensors(CanonicalWriter& w, const ::flatbuffers::Vector<::flatbuffers::Offset<M::TensorSpec>>* v) {
  w.list(v, [](CanonicalWriter& out, const M::TensorSpec* t) {
    text(out, t->dtype());
    out.list(t->shape(), [](CanonicalWriter& dims, const M::Dim* d) {
      dims.u64(d->size());
      opt_text(dims, d->symbol());
    });
    opt_text(out, t->name());
  });
}

// canonical.uses_revision4_requirements: the device's identity is named, or an accelerator
// requirement states a non-empty device or capabilities.
bool uses_revision4_requirements(const M::Requirements* q) {
  if (names_device(q)) return true;
  if (q == nullptr || q->accelerators() == nullptr) return false;
  for (const M::AcceleratorRequirement* a : *q->accelerators()) {
    if ((a->device() != nullptr && a->device()->size() != 0) ||
        (a->capabilities() != nullptr && a->capabilities()->size() != 0)) {
      return true;
    }
  }
  return false;
}

// requirements: list(str os) list(str arch) list(str cpu_features) list(accelerator)
// u64 min_memory_bytes opt(backend_abi); an absent `requires` as empty lists and zeros. With
// `r4` (record /2), each accelerator ends with str device ("" when absent), list(str capabilities),
// and the identity requirements follow: list(str cpu_cores) opt(str min_core) list(str soc).
void requirements(CanonicalWriter& w, const M::Requirements* q, bool r4) {
  strings(w, q == nullptr ? nullptr : q->os());
  strings(w, q == nullptr ? nullptr : q->arch());
  strings(w, q == nullptr ? nullptr : q->cpu_features());
  w.list(q == nullptr ? nullptr : q->accelerators(), [r4](CanonicalWriter& out, const M::AcceleratorRequirement* a) {
    text(out, a->kind());
    out.list(a->targets(), [](CanonicalWriter& t, const M::VersionConstraint* r) {
      t.u8(static_cast<std::uint8_t>(r->match()));
      t.u32(r->major());
      t.u32(r->minor());
    });
    out.u64(a->min_memory_bytes());
    if (r4) {
      if (a->device() != nullptr) {
        text(out, a->device());
      } else {
        out.str(std::string_view());
      }
      strings(out, a->capabilities());
    }
  });
  w.u64(q == nullptr ? 0 : q->min_memory_bytes());
  const M::AbiRange* abi = q == nullptr ? nullptr : q->backend_abi();
  if (w.opt(abi != nullptr)) {
    w.u32(abi->min());
    w.u32(abi->max());
  }
  if (!r4) return;
  strings(w, q == nullptr ? nullptr : q->cpu_cores());  // record /2: the identity requirements
  opt_text(w, q == nullptr ? nullptr : q->min_core());
  strings(w, q == nullptr ? nullptr : q->soc());
}

// opt(signature: list(method: str name, list(tensor) inputs, list(tensor) outputs, list(tensor) buffers)).
void signature(CanonicalWriter& w, const M::Signature* sig) {
  if (!w.opt(sig != nullptr)) return;
  w.list(sig->methods(), [](CanonicalWriter& out, const M::Method* m) {
    text(out, m->name());
    tensors(out, m->inputs());
    tensors(out, m->outputs());
    tensors(out, m->buffers());
  });
}

}  // namespace

std::vector<std::uint8_t> entry_record(const M::Entry* e) {
  CanonicalWriter w;
  const bool r4 = e != nullptr && uses_revision4_requirements(e->requires_());
  w.str(r4 ? kEntryRecordTagR4 : kEntryRecordTag);
  if (!w.opt(e != nullptr)) return w.take();
  text(w, e->name());
  requirements(w, e->requires_(), r4);
  signature(w, e->signature());
  strings(w, e->named_data());
  opt_text(w, e->source_digest());
  const auto* sha = e->payload_sha256();
  if (w.opt(sha != nullptr && sha->size() != 0)) w.bytes(sha->data(), sha->size());
  w.list(e->provenance(), [](CanonicalWriter& out, const M::KeyValue* kv) {
    text(out, kv->key());
    text(out, kv->value());
  });
  if (w.opt(e->executorch_backends() != nullptr)) strings(w, e->executorch_backends());
  return w.take();
}

std::vector<std::uint8_t> named_data_record(const M::NamedData* nd) {
  CanonicalWriter w;
  w.str(kNamedDataRecordTag);
  text(w, nd->key());
  const M::TensorLayout* lay = nd->layout();
  if (w.opt(lay != nullptr)) {
    text(w, lay->dtype());
    w.list(lay->sizes(), [](CanonicalWriter& out, std::int32_t s) { out.i32(s); });
    w.list(lay->dim_order(), [](CanonicalWriter& out, std::uint8_t d) { out.u8(d); });
  }
  return w.take();
}

}  // namespace signing
}  // namespace fatpte
