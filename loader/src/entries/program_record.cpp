// Program entries against their manifest records (entries/program_record.hpp).
#include "entries/program_record.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/sha256.hpp"
#include "fatpte/format_generated.h"
#include "container/manifest_view.hpp"
#include "executorch/backend_ids.hpp"
#include "executorch/program.hpp"
#include "entries/nesting.hpp"
#include "entries/program_reader.hpp"
#include "entries/program_signature.hpp"

namespace fatpte {
namespace {

namespace M = nfat::manifest;

// The provenance keys section 7 reads (fatpte/manifest/model.py SIGNATURE_CHECK_KEY,
// fatpte/ops/program_entry.py SHA256_KEY and NAMED_DATA_KEY, ptn_write.py SHARED).
constexpr char kSignatureCheck[] = "fatpte.signature_check";
constexpr char kSha256Key[] = "executorch.pte.sha256";
constexpr char kNamedDataKey[] = "executorch.pte.named_data";
constexpr char kShared[] = "shared";
constexpr char kFrom[] = "from:";
constexpr char kPortable[] = "portable";

// What the record's provenance says, read as Python reads it: the signature decision is the first
// value of its key (signature_decision), the others the last (a dict of the pairs).
struct Provenance {
  const ::flatbuffers::String* decision = nullptr;
  const ::flatbuffers::String* sha256 = nullptr;
  const ::flatbuffers::String* named_data = nullptr;
};

Provenance provenance(const M::Entry* me) {
  Provenance out;
  if (me->provenance() == nullptr) return out;
  for (const M::KeyValue* kv : *me->provenance()) {
    const std::string key = kv->key()->str();
    if (key == kSignatureCheck && out.decision == nullptr) out.decision = kv->value();
    if (key == kSha256Key) out.sha256 = kv->value();
    if (key == kNamedDataKey) out.named_data = kv->value();
  }
  return out;
}

std::string lower(std::string s) {
  for (char& ch : s) {
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  return s;
}

// `XnnpackBackend` -> `xnnpack` (program_entry.py backend_word): without a trailing `Backend`
// (any case, after an optional `_`), lowercased; the whole id when nothing else is left.
std::string backend_word(const std::string& id) {
  const std::string low = lower(id);
  std::string word = low;
  if (word.size() >= 7 && word.compare(word.size() - 7, 7, "backend") == 0) {
    word.resize(word.size() - 7);
    if (!word.empty() && word.back() == '_') word.pop_back();
  }
  return word.empty() ? low : word;
}

std::string uses(const std::set<std::string>& ids) {
  if (ids.empty()) return "the program delegates to no backend (it runs on the portable operators)";
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : ", ") + id;
  return "the program delegates to " + out;
}

// Rule 2 (program_entry.py backend_problem): why `backend_id` contradicts the program, or "".
std::string backend_problem(const std::string& backend_id, const std::set<std::string>& ids) {
  std::set<std::string> have;
  for (const std::string& id : ids) have.insert(backend_word(id));
  const std::string low = lower(backend_id);
  std::size_t start = 0;
  while (start <= low.size()) {
    const std::size_t end = low.find_first_of("-_.", start);
    const std::string word = low.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (word == kPortable && !have.empty()) {
      return "backend id '" + backend_id + "' names the portable operators, but " + uses(ids);
    }
    const bool names_one = et::delegate_backend_id(word) != word || have.count(word) != 0;
    if (names_one && have.count(word) == 0) {
      return "backend id '" + backend_id + "' names " + et::delegate_backend_id(word) + ", but " + uses(ids);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

struct Program {
  const Entry& entry;
  const M::Entry* record;
  Bytes payload;
  et::ProgramInfo info;
  std::vector<entries::DerivedMethod> signature;
};

// Rules 1 to 4, in that order, for a program that read.
Status record_rules(const Container& c, const Program& p, std::uint64_t record) {
  const std::string name = p.record->name()->str();
  const std::string at_record = "manifest.entries[" + std::to_string(p.entry.index) + "].";
  const Provenance prov = provenance(p.record);
  const bool compared = prov.decision == nullptr || prov.decision->str() == kFrom + name;
  if (p.record->signature() != nullptr && compared) {
    const std::string diff = entries::signature_difference(*p.record->signature(), p.signature);
    FATPTE_CHECK(diff.empty(), Error::PROGRAM_SIGNATURE_MISMATCH, record, at_record + "signature",
                 "entry '%s': the signature stated for it (the program behind its adapter, where it declares "
                 "program dtypes) does not agree with its program's: %s", name.c_str(), diff.c_str());
  }
  std::set<std::string> ids;
  for (const et::MethodInfo& m : p.info.methods) ids.insert(m.backend_ids.begin(), m.backend_ids.end());
  const std::string why = backend_problem(p.entry.backend_id, ids);
  FATPTE_CHECK(why.empty(), Error::BACKEND_ID_CONTRADICTS_PROGRAM,
               c.header().header_size + std::uint64_t{p.entry.index} * c.header().entry_size,
               "entries[" + std::to_string(p.entry.index) + "].backend_id", "entry '%s': %s", name.c_str(), why.c_str());
  if (p.record->executorch_backends() != nullptr) {
    std::multiset<std::string> stated;
    for (const ::flatbuffers::String* s : *p.record->executorch_backends()) stated.insert(s->str());
    FATPTE_CHECK(std::equal(stated.begin(), stated.end(), ids.begin(), ids.end()), Error::EXECUTORCH_BACKENDS_MISMATCH,
                 record, at_record + "executorch_backends", "entry '%s': executorch_backends are not its program's: %s",
                 name.c_str(), uses(ids).c_str());
  }
  if (prov.sha256 != nullptr && (prov.named_data == nullptr || prov.named_data->str() != kShared)) {
    const std::string digest = detail::to_hex(detail::sha256(p.payload.data, static_cast<std::size_t>(p.payload.size)));
    FATPTE_CHECK(prov.sha256->str() == digest, Error::PROGRAM_DIGEST_MISMATCH, record, at_record + "provenance",
                 "entry '%s': the program has SHA-256 %s, but its provenance records %s = %s", name.c_str(),
                 digest.c_str(), kSha256Key, prov.sha256->c_str());
  }
  return Status();
}

// Each delegate's payload read as fatpte/executorch/keys.py's program_keys reads it for the keys it
// loads, in its order (methods, then delegates): a fat delegate's container (its structural pass,
// the reader's error at `at` plus its offset in that container) and each of its entries' payloads,
// or the payload itself, as XNNPACK or NPTG (entries/program_reader.hpp). The keys themselves are
// rule 5's, a warning; a payload that does not read is an error in both languages.
Status delegate_payloads_read(const et::ProgramInfo& info, Bytes program, std::uint64_t at, const std::string& field) {
  for (const et::MethodInfo& m : info.methods) {
    for (const Bytes& data : m.delegates) {
      if (data.size == 0) continue;
      const std::uint64_t where = at + static_cast<std::uint64_t>(data.data - program.data);
      if (data.size < 4 || std::memcmp(data.data, format::kMagic, 4) != 0) {
        FATPTE_RETURN_IF_ERROR(entries::read_payload_checked(data, where, field, at));
        continue;
      }
      auto st = entries::read_fat_container(data, at, field);
      if (!st.ok()) return st.error();
      for (const Entry& e : st.value().entries) {
        FATPTE_RETURN_IF_ERROR(entries::read_payload_checked(Bytes{data.data + e.offset, e.size}, where + e.offset,
                                                             field, at));
      }
    }
  }
  return Status();
}

// Whether the record speaks of a program: it states a signature, ExecuTorch backends or a digest.
bool claims_program(const M::Entry* me) {
  return me->signature() != nullptr || me->executorch_backends() != nullptr || provenance(me).sha256 != nullptr;
}

// The program's methods (Python's reader, then the verifier), its delegates' payloads and its
// signature, in the order fatpte/ops/program_entry.py's program_facts reads them.
Status read_facts(Program& p, std::uint64_t at, const std::string& field) {
  auto info = entries::read_program_validated(p.payload, at, field);
  if (!info.ok()) return info.error();
  p.info = std::move(info.value());
  FATPTE_RETURN_IF_ERROR(delegate_payloads_read(p.info, p.payload, at, field));
  auto signature = entries::program_signature(p.payload, p.info, at, field);
  if (!signature.ok()) return signature.error();
  p.signature = std::move(signature.value());
  return Status();
}

Status check_entry(const Container& c, const Entry& e, const M::Entry* me) {
  Program p{e, me, Bytes{c.bytes().data + e.offset, e.size}, {}, {}};
  const std::string field = "entries[" + std::to_string(e.index) + "].payload";
  // Python's reader first, so that a damaged program is refused with its code at its offset; the
  // flatbuffers verifier (et::read_program) then guards what the loader reads of it.
  const Status unread = read_facts(p, e.offset, field);
  if (!unread.ok()) {
    if (!claims_program(me)) return Status();
    return Status(unread.code(), unread.offset(), field, "the payload of '" + e.name + "' is not the ExecuTorch "
                  "program its manifest entry describes: " + unread.message());
  }
  FATPTE_RETURN_IF_ERROR(entries::check_nesting(p.payload, p.info, e.offset, field + "."));
  const auto* base = c.bytes().data;
  return record_rules(c, p, static_cast<std::uint64_t>(reinterpret_cast<const std::uint8_t*>(me) - base));
}

}  // namespace

Status check_program_entries(const Container& c) {
  if (c.version() != format::kVersion2 || c.header().manifest_size == 0) return Status();
  const auto is_program = [](const Entry& e) { return std::memcmp(e.payload_kind.data(), "ET12", 4) == 0; };
  bool any = false;
  for (const Entry& e : c.entries()) any = any || is_program(e);
  if (!any) return Status();
  auto view = manifest_view(c);
  if (!view.ok()) return view.error();
  for (const Entry& e : c.entries()) {
    if (is_program(e)) FATPTE_RETURN_IF_ERROR(check_entry(c, e, view.value().entry(e.index)));
  }
  return Status();
}

}  // namespace fatpte
