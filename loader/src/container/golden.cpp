// An entry's golden calls, read to be run (container/golden.hpp).
#include "container/golden.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/text.hpp"
#include "container/manifest_view.hpp"
#include "manifest/golden.hpp"
#include "manifest/rules.hpp"
#include "value/scalar_type.hpp"

namespace fatpte {
namespace {

namespace M = nfat::manifest;

// One element of ScalarType `type` at `p` as a double; false for a type without plain numbers.
bool element(std::int8_t type, const std::uint8_t* p, double* out) { return element_as_double(type, p, out); }

// The manifest's record of `key`: its keys are sorted bytewise (rule 2.2.10), so a binary search.
const M::NamedData* find_key(const M::Manifest* root, const char* key) {
  const auto* keys = root->named_data();
  if (keys == nullptr) return nullptr;
  ::flatbuffers::uoffset_t lo = 0, hi = keys->size();
  while (lo < hi) {
    const ::flatbuffers::uoffset_t mid = lo + (hi - lo) / 2;
    const int order = std::strcmp(keys->Get(mid)->key()->c_str(), key);
    if (order == 0) return keys->Get(mid);
    if (order < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return nullptr;
}

std::string sizes_text(const std::vector<std::int64_t>& sizes) {
  std::string out = "[";
  for (std::size_t d = 0; d < sizes.size(); ++d) out += (d ? ", " : "") + std::to_string(sizes[d]);
  return out + "]";
}

}  // namespace

Tensor golden_input(const GoldenTensor& t) {
  Tensor out;
  out.dtype = static_cast<DType>(t.scalar_type);
  out.shape = t.sizes;
  out.data.assign(t.bytes.data, t.bytes.data + t.bytes.size);
  return out;
}

double GoldenComparison::max_rel() const noexcept {
  if (max_want > 0) return max_abs / max_want;
  return max_abs == 0 ? 0.0 : std::numeric_limits<double>::infinity();
}

double golden_bound(double atol, double rtol, double max_want) noexcept {
  // atol and rtol are finite and at least 0 (value rule 2.2.11), max_want too: the sum is a number, and
  // past the largest double it is that double, so an infinite difference never fits under it.
  const double largest = std::numeric_limits<double>::max();
  const double sum = atol + rtol * max_want;
  return sum > largest ? largest : sum;
}

bool within(double difference, double bound) noexcept { return std::isfinite(difference) && difference <= bound; }

bool has_golden_calls(const Container& c, std::uint32_t index, const std::string& method) {
  auto calls = golden_calls(c, index);
  if (!calls.ok()) return true;
  for (const GoldenCallSpec& call : calls.value()) {
    if (call.method == method) return true;
  }
  return false;
}

Result<std::vector<GoldenCallSpec>> golden_calls(const Container& c, std::uint32_t index) {
  std::vector<GoldenCallSpec> out;
  auto manifest = manifest_view(c);
  if (!manifest.ok()) return manifest.error();
  const M::Manifest* root = manifest.value().root();
  const M::Entry* record = manifest.value().entry(index);
  if (root == nullptr || record == nullptr || record->golden() == nullptr) return out;
  const std::uint64_t at = c.header().manifest_offset;
  const std::string entry = "manifest entry of '" + detail::printable(c.entries()[index].name) + "'";
  if (const ::flatbuffers::String* stated = detail::provenance_value(*record, detail::kGoldenDigestKey)) {
    const std::string actual = detail::golden_digest_hex(*record);
    FATPTE_CHECK(stated->str() == actual, Error::GOLDEN_DIGEST_MISMATCH, at, "provenance",
                 "the golden calls of the %s have SHA-256 %s, but its provenance %s says %s", entry.c_str(),
                 actual.c_str(), detail::kGoldenDigestKey, detail::clipped(stated->str()).c_str());
  }
  // Each key once: the manifest's keys are sorted (E0415), looked up by binary search.
  std::map<std::string, GoldenTensor> seen;
  auto tensor = [&](const ::flatbuffers::String* key, GoldenTensor* t) -> Status {
    auto hit = seen.find(key->str());
    if (hit != seen.end()) {
      *t = hit->second;
      return Status();
    }
    const M::NamedData* nd = find_key(root, key->c_str());
    FATPTE_CHECK(nd != nullptr && nd->layout() != nullptr && detail::contiguous_layout(*nd->layout()),
                 Error::GOLDEN_KEY_INVALID, at, "named_data",
                 "the %s names golden key '%s', which is not a named-data key with a contiguous tensor layout",
                 entry.c_str(), detail::clipped(key->str()).c_str());
    const LayoutDtype* dtype = layout_dtype(nd->layout()->dtype()->c_str());
    FATPTE_CHECK(dtype != nullptr && nd->segment() < c.segments().size(), Error::GOLDEN_KEY_INVALID, at, "named_data",
                 "golden key '%s' has an unknown dtype or names no segment", detail::clipped(key->str()).c_str());
    t->key = key->str();
    t->dtype = dtype->name;
    t->scalar_type = dtype->scalar_type;
    t->element_size = dtype->bytes;
    t->sizes.clear();
    std::uint64_t nbytes = dtype->bytes;
    if (nd->layout()->sizes() != nullptr) {
      for (const std::int32_t d : *nd->layout()->sizes()) {
        t->sizes.push_back(d);
        // Sizes are at least 0 (rule 2.2.9); a product past the segment cannot match it.
        if (d != 0 && nbytes > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d)) {
          nbytes = std::numeric_limits<std::uint64_t>::max();
        } else {
          nbytes *= static_cast<std::uint64_t>(d);
        }
      }
    }
    const Segment& s = c.segments()[nd->segment()];
    FATPTE_CHECK(nbytes == s.size, Error::NAMED_DATA_LAYOUT_MISMATCH, at, "named_data",
                 "golden key '%s' has a layout of %llu bytes, but its segment %u holds %llu",
                 detail::clipped(key->str()).c_str(), static_cast<unsigned long long>(nbytes), nd->segment(),
                 static_cast<unsigned long long>(s.size));
    t->segment = nd->segment();
    t->bytes = Bytes{c.bytes().data + s.offset, s.size};
    seen.emplace(t->key, *t);
    return Status();
  };
  for (::flatbuffers::uoffset_t k = 0; k < record->golden()->size(); ++k) {
    const M::GoldenCall* call = record->golden()->Get(k);
    GoldenCallSpec spec;
    spec.index = k;
    spec.method = call->method()->str();
    if (call->inputs() != nullptr) {
      for (const ::flatbuffers::String* key : *call->inputs()) {
        spec.inputs.emplace_back();
        FATPTE_RETURN_IF_ERROR(tensor(key, &spec.inputs.back()));
      }
    }
    if (call->outputs() != nullptr) {
      for (const M::GoldenOutput* o : *call->outputs()) {
        spec.outputs.emplace_back();
        FATPTE_RETURN_IF_ERROR(tensor(o->key(), &spec.outputs.back().want));
        spec.outputs.back().atol = o->atol();
        spec.outputs.back().rtol = o->rtol();
      }
    }
    out.push_back(std::move(spec));
  }
  return out;
}

Status check_golden_segments(const Container& c, const std::vector<GoldenCallSpec>& calls) {
  std::set<std::uint32_t> checked;
  auto check = [&](const GoldenTensor& t) -> Status {
    if (!checked.insert(t.segment).second) return Status();
    const Segment& s = c.segments()[t.segment];
    // A container read through the C reader holds only what it fetched (Container::present).
    FATPTE_CHECK(c.present(s.offset, s.size), Error::INVALID_ARGUMENT, s.offset,
                 "segments[" + std::to_string(t.segment) + "]", "the golden tensor '%s' was not fetched "
                 "(fatpte_reader_fetch_golden)", detail::clipped(t.key).c_str());
    return check_segment_integrity(c.bytes(), c.header(), s);
  };
  for (const GoldenCallSpec& call : calls) {
    for (const GoldenTensor& t : call.inputs) FATPTE_RETURN_IF_ERROR(check(t));
    for (const GoldenOutputSpec& o : call.outputs) FATPTE_RETURN_IF_ERROR(check(o.want));
  }
  return Status();
}

Status golden_methods_listed(const Container& c, std::uint32_t index, const std::vector<GoldenCallSpec>& calls,
                             const GoldenCallSpec** bad) {
  *bad = nullptr;
  if (calls.empty()) return Status();
  auto manifest = manifest_view(c);
  if (!manifest.ok()) return manifest.error();
  const M::Entry* record = manifest.value().entry(index);
  const auto* methods = record == nullptr || record->signature() == nullptr ? nullptr : record->signature()->methods();
  std::set<std::string> listed;
  std::string names;
  if (methods != nullptr) {
    for (const M::Method* m : *methods) {
      listed.insert(m->name()->str());
      names += std::string(names.empty() ? "" : ", ") + "'" + detail::printable(m->name()->str()) + "'";
    }
  }
  for (const GoldenCallSpec& call : calls) {
    if (methods != nullptr && listed.count(call.method) != 0) continue;
    *bad = &call;
    const std::string entry = detail::printable(c.entries()[index].name);
    ::flatbuffers::uoffset_t position = 0;  // the record's place in the manifest's list, for the field path
    const auto* records = manifest.value().root()->entries();
    while (records != nullptr && position < records->size() && records->Get(position) != record) ++position;
    const std::string field = "manifest.entries[" + std::to_string(position) + "].golden[" +
                              std::to_string(call.index) + "].method";
    if (methods == nullptr) {
      return fail(Error::GOLDEN_CALL_MISMATCH, c.header().manifest_offset, field,
                  "entry '%s', golden call %u: the entry states no program signature to check the call against",
                  entry.c_str(), call.index);
    }
    return fail(Error::GOLDEN_CALL_MISMATCH, c.header().manifest_offset, field,
                "entry '%s', golden call %u (method '%s'): the entry's program has no such method (it has %s)",
                entry.c_str(), call.index, detail::printable(call.method).c_str(), names.empty() ? "none" : names.c_str());
  }
  return Status();
}

GoldenComparison compare_golden(const GoldenOutputSpec& spec, std::int8_t got_type,
                                const std::vector<std::int64_t>& got_sizes, const std::uint8_t* got,
                                std::uint64_t got_bytes) {
  GoldenComparison r;
  const GoldenTensor& want = spec.want;
  double probe = 0;
  if (got_type != want.scalar_type || got_sizes != want.sizes) {
    r.problem = "the output is ScalarType " + std::to_string(got_type) + " " + sizes_text(got_sizes) +
                ", the golden tensor " + want.dtype + " " + sizes_text(want.sizes);
    return r;
  }
  if (got_bytes != want.bytes.size) {
    r.problem = "the output holds " + std::to_string(got_bytes) + " bytes, the golden tensor " +
                std::to_string(want.bytes.size);
    return r;
  }
  std::uint8_t zero[8] = {0};
  if (!element(want.scalar_type, zero, &probe)) {
    r.problem = "a " + want.dtype + " tensor has no numbers to compare";
    return r;
  }
  const std::uint64_t n = want.element_size == 0 ? 0 : want.bytes.size / want.element_size;
  const double inf = std::numeric_limits<double>::infinity();
  for (std::uint64_t i = 0; i < n; ++i) {
    double g = 0, w = 0;
    element(got_type, got + i * want.element_size, &g);
    element(want.scalar_type, want.bytes.data + i * want.element_size, &w);
    if (std::isfinite(w)) r.max_want = std::max(r.max_want, std::fabs(w));
    double d;
    if (g == w || (std::isnan(g) && std::isnan(w))) {
      d = 0;
    } else if (!std::isfinite(g) || !std::isfinite(w)) {
      d = inf;
    } else {
      d = std::fabs(g - w);
    }
    r.max_abs = std::max(r.max_abs, d);
  }
  r.bound = golden_bound(spec.atol, spec.rtol, r.max_want);
  r.passed = within(r.max_abs, r.bound);
  return r;
}

}  // namespace fatpte
