// The statement room of signature/ (signature/statement.hpp): the in-toto statement read in
// section 6 step 5's order, each field's shape checked as fatpte/ops/signing/statement.py does.
#include "signature/statement.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fatpte/format_generated.h"

namespace fatpte {
namespace signing {

#if FATPTE_WITH_OPENSSL
namespace {

namespace F = format;
using json::Kind;
using json::Value;

constexpr const char* kStatementType = "https://in-toto.io/Statement/v1";
constexpr const char* kPredicateType = "https://fatpte.dev/nfat-signature/v1";
constexpr const char* kEntrySubject = "entries/";
constexpr const char* kNamedDataSubject = "named_data/";

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
// executorch_backends, cpu_cores, min_core, soc.
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
    Value device;  // manifest revision 4: optional, as statement.py _selection reads them
    FATPTE_RETURN_IF_ERROR(get(w, a, "device", Kind::kString, ap, device, false));
    if (device) acc.device = std::string(device.text());
    bool listed = false;
    FATPTE_RETURN_IF_ERROR(words(w, a, "capabilities", ap, false, acc.capabilities, listed));
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
  // Manifest revision 4's identity requirements, written only when stated.
  FATPTE_RETURN_IF_ERROR(words(w, obj, "cpu_cores", path, false, out.cpu_cores, present));
  FATPTE_RETURN_IF_ERROR(get(w, obj, "min_core", Kind::kString, path, v, false));
  if (v) {
    if (v.text().empty() || v.text().size() > kMaxTextBytes) {
      return malformed(w, path + ".min_core", path + ".min_core must be a string of 1 to 4096 bytes");
    }
    out.min_core = std::string(v.text());
  }
  return words(w, obj, "soc", path, false, out.soc, present);
}

// _type, predicateType, predicate and its format_version; `pred` is the predicate.
Status read_types(const Where& w, const Value& root, const std::string& p, Value& pred) {
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
  FATPTE_RETURN_IF_ERROR(get(w, root, "predicate", Kind::kObject, p, pred));
  const std::string pp = p + ".predicate";
  FATPTE_RETURN_IF_ERROR(get(w, pred, "format_version", Kind::kNumber, pp, v));
  if (v.text() != std::to_string(F::kVersion2)) {
    return malformed(w, pp + ".format_version", "format_version is not 2", Error::SIGNATURE_UNSUPPORTED);
  }
  return Status();
}

// One of predicate.entries, `e` at `ep`: its fields in their order, a name not yet in `names`.
Status read_entry(const Where& w, const Value& e, const std::string& ep, std::set<std::string>& names,
                  SignedEntry& se) {
  Value v;
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
  return Status();
}

// predicate.entries: 1 to 65536 of them, each read by read_entry.
Status read_entries(const Where& w, const Value& pred, const std::string& pp, Statement& st) {
  Value entries;
  FATPTE_RETURN_IF_ERROR(get(w, pred, "entries", Kind::kArray, pp, entries));
  if (entries.size() == 0 || entries.size() > F::kMaxEntries) {
    return malformed(w, pp + ".entries", "the statement lists no entry, or more than 65536");
  }
  std::set<std::string> names;
  for (const Value e : entries.items()) {
    SignedEntry se;
    FATPTE_RETURN_IF_ERROR(read_entry(w, e, pp + ".entries[" + std::to_string(st.entries.size()) + "]", names, se));
    st.entries.push_back(std::move(se));
  }
  return Status();
}

// predicate.named_data: each key's `key` (unique, sorted bytewise) and `record_sha256`.
Status read_keys(const Where& w, const Value& pred, const std::string& pp, Statement& st) {
  Value keys;
  FATPTE_RETURN_IF_ERROR(get(w, pred, "named_data", Kind::kArray, pp, keys));
  if (keys.size() > F::kMaxSegments) return malformed(w, pp + ".named_data", "more keys than 1048576");
  for (const Value k : keys.items()) {
    const std::string kp = pp + ".named_data[" + std::to_string(st.keys.size()) + "]";
    SignedKey sk;
    Value v;
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
  return Status();
}

// `subject`: one per entry, then one per key, in their order, each named for it; their digests
// are the payloads' and the keys' bytes'.
Status read_subjects(const Where& w, const Value& root, const std::string& p, Statement& st) {
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
    Value v;
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

}  // namespace

Status read_statement(const Where& w, const std::vector<std::uint8_t>& payload, Statement& st,
                      std::uint64_t& json_bytes) {
  const std::string p = "signature.statement";
  Result<json::Document> doc = read_json(payload.data(), payload.size(), 0);
  if (!doc.ok()) return not_json(w, p, doc.error());
  json_bytes = std::max<std::uint64_t>(json_bytes, doc.value().memory());
  const Value root = doc.value().root();
  if (!root.is(Kind::kObject)) return malformed(w, p, "the statement must be a JSON object");
  Value pred;
  FATPTE_RETURN_IF_ERROR(read_types(w, root, p, pred));
  FATPTE_RETURN_IF_ERROR(read_entries(w, pred, p + ".predicate", st));
  FATPTE_RETURN_IF_ERROR(read_keys(w, pred, p + ".predicate", st));
  return read_subjects(w, root, p, st);
}

#endif  // FATPTE_WITH_OPENSSL

}  // namespace signing
}  // namespace fatpte
