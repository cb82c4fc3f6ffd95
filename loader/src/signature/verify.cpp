// The verify room of signature/ (signature/verify.hpp): specs/nfat-signature.md section 6, steps 1
// to 8 as check_signature's driver over one function per step, steps 9 and 10 (check_entry_bytes,
// check_all_bytes) and step 11 (check_downgrade). Every input is bounded (64 MiB bundle of at most
// 4096 JSON values, 16 levels of JSON, 16 signatures of at most 512 base64 characters), so a
// hostile bundle costs work linear in its size.
#include "signature/verify.hpp"

#include <algorithm>
#include <cinttypes>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/text.hpp"
#include "container/manifest_view.hpp"
#include "device/requirements.hpp"
#include "manifest/golden.hpp"
#include "nfat_manifest_generated.h"
#include "signature/bundle.hpp"
#include "signature/keys.hpp"
#include "signature/records.hpp"
#include "signature/statement.hpp"

namespace fatpte {

// What the statement says of every entry, in its order (each an Entry whose index is its place
// in the statement), and its `selection` member: what the downgrade check (step 11) ranks.
struct detail::SignedEntries {
  std::vector<Entry> entries;
  std::vector<std::optional<detail::Requirements>> selections;
};


#if FATPTE_WITH_OPENSSL
namespace {

namespace F = format;
namespace M = nfat::manifest;
using signing::entry_record;
using signing::Envelope;
using signing::named_data_record;
using signing::hex;
using signing::sha256;
using signing::SignedEntry;
using signing::Statement;
using signing::Where;

// Whether the signature vouches for the golden calls of an entry whose record matched `s` (section
// 6.1): the statement states their digest (revision 3; step 7e checked it), or the signed record's
// provenance does (specs/nfat-manifest.md 11.3, which E0423 holds the calls to). An entry without
// calls has nothing to vouch for. Python's golden_vouched.
bool golden_vouched(const SignedEntry& s, const M::Entry* me) {
  if (me == nullptr || me->golden() == nullptr || me->golden()->size() == 0 || s.golden) return true;
  return detail::provenance_value(*me, detail::kGoldenDigestKey) != nullptr;
}

// Where manifest entry `me` sits in the manifest's list (for a finding's field), found by sorting
// the list's addresses once, on the first finding that needs it: never a scan per entry.
class ManifestPositions {
 public:
  explicit ManifestPositions(const M::Manifest* root) : root_(root) {}
  std::size_t of(const M::Entry* me) {
    if (sorted_.empty() && root_ != nullptr && root_->entries() != nullptr) {
      const auto* list = root_->entries();
      for (::flatbuffers::uoffset_t j = 0; j < list->size(); ++j) sorted_.emplace_back(list->Get(j), j);
      std::sort(sorted_.begin(), sorted_.end());
    }
    const auto at = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(me, std::size_t{0}));
    return at != sorted_.end() && at->first == me ? at->second : 0;
  }

 private:
  const M::Manifest* root_;
  std::vector<std::pair<const M::Entry*, std::size_t>> sorted_;
};

// Steps 7d and 7e for table entry `e` (its record at `base`), whose manifest record is `me`
// (nullptr: none), against statement entry `s`: each finding goes to `tamper`.
template <typename Tamper>
void check_record(const Container& c, const Entry& e, const M::Entry* me, const SignedEntry& s, std::uint64_t base,
                  ManifestPositions& positions, detail::SignatureWork& work, Tamper&& tamper) {
  const Header& h = c.header();
  const std::uint8_t* manifest_base = c.bytes().data + h.manifest_offset;
  const std::uint64_t at =
      me == nullptr ? base
                    : h.manifest_offset + static_cast<std::uint64_t>(reinterpret_cast<const std::uint8_t*>(me) -
                                                                     manifest_base);
  // The field of a finding (the manifest entry's position, found only when one needs it).
  const auto field = [&](const char* below) {
    return me == nullptr ? "entries[" + std::to_string(e.index) + "].name"
                         : "manifest.entries[" + std::to_string(positions.of(me)) + "]" + below;
  };
  const std::vector<std::uint8_t> record = entry_record(me);
  work.record_bytes += record.size();
  if (sha256(record.data(), record.size()) != s.record) {
    tamper(fail(Error::SIGNED_RECORD_MISMATCH, at, field(""), "entry '%s': its manifest record differs from the signed one",
                e.name.c_str()));
  }
  // Step 7e: the golden calls a revision 3 statement vouches for, or their absence.
  const std::vector<std::uint8_t> golden = detail::golden_encoding(me);
  work.record_bytes += golden.size();
  if (s.golden && sha256(golden.data(), golden.size()) != *s.golden) {
    tamper(fail(Error::SIGNED_RECORD_MISMATCH, at, field(".golden"),
                "entry '%s': its golden calls are not the signed ones (the statement states golden calls with "
                "SHA-256 %s...): they were added, changed or removed after signing",
                e.name.c_str(), hex(*s.golden).substr(0, 16).c_str()));
  }
}

// The first finding of steps 7 and 8 is the report's `first_error`.
void note(SignatureCheck& check, Status s) {
  if (check.first_error.ok()) check.first_error = std::move(s);
}

// Before step 1: the manifest, through the loader's one accessor (every rule of
// specs/nfat-manifest.md section 2 and its work budget, checked once per container), and each
// named-data key's segment. Records are then built only from a manifest that passed, in work
// bounded by its size.
Result<ManifestView> open_manifest(const Container& c) {
  Result<ManifestView> view = manifest_view(c);
  if (!view.ok()) return view;
  const M::Manifest* root = view.value().root();
  const auto* nds = root == nullptr ? nullptr : root->named_data();
  if (nds != nullptr) {
    for (::flatbuffers::uoffset_t j = 0; j < nds->size(); ++j) {
      FATPTE_CHECK(nds->Get(j)->segment() < c.segments().size(), Error::NAMED_DATA_BAD_SEGMENT,
                   c.header().manifest_offset, "manifest.named_data[" + std::to_string(j) + "].segment",
                   "named-data key '%s' points at segment %u, but the segment table has %zu",
                   nds->Get(j)->key()->c_str(), nds->Get(j)->segment(), c.segments().size());
    }
  }
  return view;
}

// Step 1: the signature the caller gives (`detached`), else the signature region; `w` becomes
// where findings about it are reported.
Result<Bytes> find_signature(const Container& c, Bytes detached, Where& w) {
  w.offset = kNoOffset;
  if (detached.data != nullptr) return detached;
  const Header& h = c.header();
  if (c.version() != F::kVersion2 || h.signature_size == 0) {
    return fail(Error::SIGNATURE_REQUIRED, kNoOffset, "signature",
                "the container carries no signature region and no detached signature was given");
  }
  // A container read through the C reader holds only what it fetched (Container::present).
  FATPTE_CHECK(c.present(h.signature_offset, h.signature_size), Error::INVALID_ARGUMENT, h.signature_offset,
               "header.signature_offset", "the signature region was not fetched (fatpte_reader_fetch_signature)");
  w.offset = h.signature_offset;
  return Bytes{c.bytes().data + h.signature_offset, h.signature_size};
}

// Step 4: the trusted key that signed the envelope, before anything of the statement is read.
Result<const TrustedKeys::Key*> find_signer(const Where& w, const TrustedKeys& keys, const Envelope& env) {
  const std::vector<std::uint8_t> message = signing::pae(env.payload_type, env.payload);
  std::vector<const TrustedKeys::Key*> named, candidates;
  for (const auto& k : keys.keys()) {
    if (env.has_hint && k.key_id == env.hint) named.push_back(&k);
  }
  if (named.empty()) {
    for (const auto& k : keys.keys()) candidates.push_back(&k);
  } else {
    candidates = named;
  }
  for (const auto& sig : env.signatures) {
    for (const auto* k : candidates) {
      if (signing::verifies(*k, sig, message)) return k;
    }
  }
  if (!named.empty()) {
    return signing::malformed(w, "signature.dsseEnvelope.signatures[0].sig",
                              "the signature does not verify with the trusted key it names (" + named[0]->source +
                                  "): the statement was altered after signing, or the signature is damaged",
                              Error::SIGNATURE_INVALID);
  }
  return signing::malformed(w, "signature.dsseEnvelope.signatures[0].sig",
                            "the container is signed by a key that is not among the trusted keys",
                            Error::SIGNATURE_UNTRUSTED);
}

// Step 6: a signature of another container. `signed_index` maps each statement entry's name to
// its place in the statement.
Status check_replay(const Container& c, const Where& w, const std::map<std::string, int>& signed_index) {
  bool any = false;
  for (const Entry& e : c.entries()) any = any || signed_index.count(e.name) != 0;
  if (c.version() != F::kVersion2 || !any) {
    return fail(Error::SIGNATURE_NOT_FOR_CONTAINER, w.offset, "signature",
                "the signature describes none of this container's entries: it belongs to another container");
  }
  return Status();
}

// The report of a signature that `signer` verified and whose statement is `st`, before steps 7 and 8.
SignatureCheck start_report(const TrustedKeys::Key& signer, const Where& w, const Statement& st) {
  SignatureCheck check;
  check.key_id = signer.key_id;
  check.signature_offset = w.offset;
  auto signed_entries = std::make_shared<detail::SignedEntries>();
  for (std::size_t k = 0; k < st.entries.size(); ++k) {
    const SignedEntry& se = st.entries[k];
    Entry e;
    e.index = static_cast<std::uint32_t>(k);
    e.name = se.name;
    e.backend_id = se.backend_id;
    e.payload_kind = se.payload_kind;
    e.alignment = static_cast<std::uint32_t>(se.alignment);
    e.priority = static_cast<std::int32_t>(se.priority);
    signed_entries->entries.push_back(std::move(e));
    signed_entries->selections.push_back(se.selection);
  }
  check.statement = std::move(signed_entries);
  for (const auto& se : st.entries) check.payload_digests.push_back(se.payload);
  return check;
}

// Steps 7b and 7c for table entry `e` (its record at `base`, field prefix `p`), at place `k` of
// the statement after a table entry at place `last`: each finding goes to `tamper`.
template <typename Tamper>
void check_table_fields(const Entry& e, const Statement& st, int k, int last, std::uint64_t base,
                        const std::string& p, Tamper&& tamper) {
  const SignedEntry& s = st.entries[static_cast<std::size_t>(k)];
  if (k < last) {
    tamper(fail(Error::SIGNED_RECORD_MISMATCH, base, p + ".name",
                "entry '%s' was moved: it comes after '%s' in the table but before it in the signed statement",
                e.name.c_str(), st.entries[static_cast<std::size_t>(last)].name.c_str()));
  }
  if (e.backend_id != s.backend_id) {
    tamper(fail(Error::SIGNED_RECORD_MISMATCH, base + F::kV2Entry_backend_id_offset, p + ".backend_id",
                "entry '%s': backend_id is '%s', the signed statement says '%s'", e.name.c_str(),
                e.backend_id.c_str(), s.backend_id.c_str()));
  }
  if (e.payload_kind != s.payload_kind) {
    tamper(fail(Error::SIGNED_RECORD_MISMATCH, base + F::kV2Entry_payload_kind_offset, p + ".payload_kind",
                "entry '%s': payload_kind differs from the signed statement", e.name.c_str()));
  }
  if (e.priority != s.priority) {
    tamper(fail(Error::SIGNED_RECORD_MISMATCH, base + F::kV2Entry_priority_offset, p + ".priority",
                "entry '%s': priority is %d, the signed statement says %" PRId64, e.name.c_str(), e.priority,
                s.priority));
  }
  if (e.alignment != s.alignment) {
    tamper(fail(Error::SIGNED_RECORD_MISMATCH, base + F::kV2Entry_alignment_offset, p + ".alignment",
                "entry '%s': alignment is %u, the signed statement says %" PRId64, e.name.c_str(), e.alignment,
                s.alignment));
  }
}

// Step 7: each table entry in order (7a, not in the statement; 7b and 7c, its table fields; 7d
// and 7e, its manifest record and golden calls), its state and first finding into `check`. Each
// entry's manifest record comes from the view's index (O(1) each), so this is linear in the
// entries, never a scan of the manifest per entry.
void check_entries(const Container& c, const ManifestView& view, const Statement& st,
                   const std::map<std::string, int>& signed_index, SignatureCheck& check,
                   detail::SignatureWork& work) {
  const Header& h = c.header();
  ManifestPositions positions(view.root());
  int last = -1;
  std::set<std::string> present;
  for (const Entry& e : c.entries()) {
    present.insert(e.name);
    const std::uint64_t base = std::uint64_t{h.header_size} + std::uint64_t{e.index} * h.entry_size;
    const std::string p = "entries[" + std::to_string(e.index) + "]";
    auto it = signed_index.find(e.name);
    if (it == signed_index.end()) {
      check.states.push_back(EntryState::kUnsigned);
      check.statement_index.push_back(-1);
      check.golden_unsigned.push_back(false);
      note(check, fail(Error::ENTRY_NOT_SIGNED, base, p + ".name",
                       "entry '%s' is not in the signed statement: it was added after signing", e.name.c_str()));
      continue;
    }
    const int k = it->second;
    EntryState state = EntryState::kSigned;
    auto tamper = [&](Status why) {
      state = EntryState::kTampered;
      note(check, std::move(why));
    };
    check_table_fields(e, st, k, last, base, p, tamper);
    last = std::max(last, k);
    const M::Entry* me = view.entry(e.index);
    ++work.records_looked_up;
    const SignedEntry& s = st.entries[static_cast<std::size_t>(k)];
    check_record(c, e, me, s, base, positions, work, tamper);
    check.golden_unsigned.push_back(!golden_vouched(s, me));
    check.states.push_back(state);
    check.statement_index.push_back(k);
  }
  for (const auto& se : st.entries) {
    if (present.count(se.name) == 0) check.thinned.push_back(se.name);
  }
}

// Step 8: each named-data key of the manifest in order, into `check.keys`; returns where each
// key's name sits in `check.keys`.
std::map<std::string, std::size_t> check_named_data_keys(const Container& c, const ManifestView& view,
                                                         const Statement& st, SignatureCheck& check,
                                                         detail::SignatureWork& work) {
  const Header& h = c.header();
  std::map<std::string, std::size_t> signed_keys;
  for (std::size_t i = 0; i < st.keys.size(); ++i) signed_keys[st.keys[i].key] = i;
  std::map<std::string, std::size_t> key_index;
  const auto* nds = view.root() == nullptr ? nullptr : view.root()->named_data();
  if (nds == nullptr) return key_index;
  for (::flatbuffers::uoffset_t j = 0; j < nds->size(); ++j) {
    const M::NamedData* nd = nds->Get(j);
    SignatureCheck::Key key;
    key.key = nd->key()->str();
    key.segment = nd->segment();
    const std::string where = "manifest.named_data[" + std::to_string(j) + "]";
    auto it = signed_keys.find(key.key);
    if (it == signed_keys.end()) {
      note(check, fail(Error::NAMED_DATA_NOT_SIGNED, h.manifest_offset, where,
                       "named-data key '%s' is not in the signed statement: it was added after signing",
                       key.key.c_str()));
    } else {
      key.signed_key = true;
      key.digest = st.keys[it->second].digest;
      const std::vector<std::uint8_t> record = named_data_record(nd);
      work.record_bytes += record.size();
      if (sha256(record.data(), record.size()) != st.keys[it->second].record) {
        note(check, fail(Error::SIGNED_NAMED_DATA_MISMATCH, h.manifest_offset, where,
                         "named-data key '%s': its tensor layout differs from the signed one", key.key.c_str()));
      }
    }
    key_index[key.key] = check.keys.size();
    check.keys.push_back(std::move(key));
  }
  return key_index;
}

// The keys each entry lists (`key_index`: where each sits in `check.keys`), for step 10 of a
// loader that hashes only what it loads.
void list_entry_keys(const Container& c, const ManifestView& view, const std::map<std::string, std::size_t>& key_index,
                     SignatureCheck& check, detail::SignatureWork& work) {
  for (const Entry& e : c.entries()) {
    std::vector<std::uint32_t> used;
    const M::Entry* me = view.entry(e.index);
    ++work.records_looked_up;
    if (me != nullptr && me->named_data() != nullptr) {
      for (const auto* key : *me->named_data()) {
        auto it = key_index.find(key->str());
        if (it != key_index.end()) used.push_back(static_cast<std::uint32_t>(it->second));
      }
    }
    check.entry_keys.push_back(std::move(used));
  }
}

}  // namespace

Result<SignatureCheck> check_signature(const Container& c, const TrustedKeys& keys, Bytes detached) {
  return detail::check_signature(c, keys, detached, nullptr);
}

Result<SignatureCheck> detail::check_signature(const Container& c, const TrustedKeys& keys, Bytes detached,
                                               SignatureWork* counted) {
  SignatureWork uncounted;
  SignatureWork& work = counted != nullptr ? *counted : uncounted;
  Result<ManifestView> view = open_manifest(c);
  if (!view.ok()) return view.error();
  Where w{kNoOffset};
  Result<Bytes> data = find_signature(c, detached, w);                          // step 1
  if (!data.ok()) return data.error();
  Envelope env;
  FATPTE_RETURN_IF_ERROR(signing::read_bundle(w, data.value(), env, work.json_bytes));  // steps 2, 3
  Result<const TrustedKeys::Key*> signer = find_signer(w, keys, env);            // step 4
  if (!signer.ok()) return signer.error();
  Statement st;
  FATPTE_RETURN_IF_ERROR(signing::read_statement(w, env.payload, st, work.json_bytes));  // step 5
  std::map<std::string, int> signed_index;
  for (std::size_t i = 0; i < st.entries.size(); ++i) signed_index[st.entries[i].name] = static_cast<int>(i);
  FATPTE_RETURN_IF_ERROR(check_replay(c, w, signed_index));                      // step 6
  SignatureCheck check = start_report(*signer.value(), w, st);
  check_entries(c, view.value(), st, signed_index, check, work);                // step 7
  const auto key_index = check_named_data_keys(c, view.value(), st, check, work);  // step 8
  list_entry_keys(c, view.value(), key_index, check, work);
  return check;
}

Status check_downgrade(const Container& c, const SignatureCheck& check, const DeviceProfile& device,
                       const std::vector<std::string>& prefer, const std::vector<std::string>& exclude) {
  if (!check.statement) return Status();
  const detail::SignedEntries& statement = *check.statement;
  Result<ManifestView> view = manifest_view(c);
  if (!view.ok()) return view.error();
  std::map<std::string, std::uint32_t> held;
  for (const Entry& e : c.entries()) held.emplace(e.name, e.index);
  const auto at = [](std::size_t k) { return "signature.statement.predicate.entries[" + std::to_string(k) + "]"; };
  std::vector<detail::Requirements> requirements(statement.entries.size());
  std::vector<detail::Candidate> candidates;
  for (std::size_t k = 0; k < statement.entries.size(); ++k) {
    const Entry& e = statement.entries[k];
    auto it = held.find(e.name);
    if (it != held.end()) {
      requirements[k] = detail::requirements_of(view.value().entry(it->second));
    } else if (!statement.selections[k]) {
      return fail(Error::SIGNED_RECORD_MISMATCH, check.signature_offset, at(k),
                  "entry '%s' was thinned away and the signed statement does not say what it needs (no "
                  "`selection`: signed before revision 2), so it cannot be shown that it would not run on '%s': "
                  "sign the container again to check thinning",
                  detail::printable(e.name).c_str(), detail::printable(device.name).c_str());
    } else {
      requirements[k] = *statement.selections[k];
    }
    candidates.push_back({&e, &requirements[k]});
  }
  const Selection s = detail::rank(candidates, device, prefer, exclude);
  if (s.fits && held.count(statement.entries[s.chosen].name) == 0) {
    const Entry& e = statement.entries[s.chosen];
    return fail(Error::SIGNED_RECORD_MISMATCH, check.signature_offset, at(s.chosen),
                "entry '%s' (%s) is what '%s' gets among the signed entries, and it was thinned away: the "
                "container offers this device a weaker entry (a downgrade)",
                detail::printable(e.name).c_str(), detail::printable(e.backend_id).c_str(),
                detail::printable(device.name).c_str());
  }
  return Status();
}

namespace {

Status check_payload(const Container& c, SignatureCheck& check, std::uint32_t index) {
  const int k = check.statement_index[index];
  if (k < 0) return Status();
  const Entry& e = c.entries()[index];
  FATPTE_CHECK(c.present(e.offset, e.size), Error::INVALID_ARGUMENT, e.offset, "entries[" + std::to_string(index) + "]",
               "the payload of '%s' was not fetched (fatpte_reader_fetch_entry)", e.name.c_str());
  const Digest got = sha256(c.bytes().data + e.offset, static_cast<std::size_t>(e.size));
  if (got != check.payload_digests[static_cast<std::size_t>(k)]) {
    check.states[index] = EntryState::kTampered;
    const Header& h = c.header();
    return fail(Error::SIGNED_PAYLOAD_MISMATCH,
                std::uint64_t{h.header_size} + std::uint64_t{index} * h.entry_size + F::kV2Entry_offset_offset,
                "entries[" + std::to_string(index) + "].offset",
                "the payload of '%s' has SHA-256 %s..., not the signed one: its bytes were changed after signing",
                e.name.c_str(), hex(got).substr(0, 16).c_str());
  }
  return Status();
}

Status check_key(const Container& c, const SignatureCheck::Key& key) {
  if (!key.signed_key || key.segment >= c.segments().size()) return Status();
  const Segment& s = c.segments()[key.segment];
  FATPTE_CHECK(c.present(s.offset, s.size), Error::INVALID_ARGUMENT, s.offset,
               "segments[" + std::to_string(s.index) + "]",
               "named-data key '%s' was not fetched (fatpte_reader_fetch_entry)", key.key.c_str());
  const Digest got = sha256(c.bytes().data + s.offset, static_cast<std::size_t>(s.size));
  if (got == key.digest) return Status();
  const Header& h = c.header();
  const std::uint64_t at = std::uint64_t{h.header_size} + std::uint64_t{h.entry_count} * h.entry_size +
                           std::uint64_t{s.index} * h.segment_entry_size;
  return fail(Error::SIGNED_NAMED_DATA_MISMATCH, at, "segments[" + std::to_string(s.index) + "].offset",
              "the bytes of named-data key '%s' (segment %u) were changed after signing", key.key.c_str(), s.index);
}

}  // namespace

Status check_entry_bytes(const Container& c, SignatureCheck& check, std::uint32_t index) {
  FATPTE_CHECK(index < check.states.size(), Error::ENTRY_NOT_FOUND, kNoOffset, "", "no entry %u", index);
  Status first = check_payload(c, check, index);
  // The keys the entry lists, in the manifest's key order (steps 9 and 10 restricted to it).
  std::vector<std::uint32_t> keys = check.entry_keys[index];
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const std::uint32_t k : keys) {
    Status s = check_key(c, check.keys[k]);
    if (!s.ok()) {
      check.states[index] = EntryState::kTampered;
      if (first.ok()) first = std::move(s);
    }
  }
  if (first.ok() && check.states[index] == EntryState::kSigned) check.states[index] = EntryState::kVerified;
  return first;
}

Status check_all_bytes(const Container& c, SignatureCheck& check) {
  Status first;
  for (std::uint32_t i = 0; i < check.states.size(); ++i) {
    Status s = check_payload(c, check, i);
    if (first.ok() && !s.ok()) first = std::move(s);
  }
  for (const auto& key : check.keys) {
    Status s = check_key(c, key);
    if (first.ok() && !s.ok()) first = std::move(s);
  }
  if (first.ok()) {
    for (auto& state : check.states) {
      if (state == EntryState::kSigned) state = EntryState::kVerified;
    }
  }
  return first;
}

#else  // !FATPTE_WITH_OPENSSL

namespace {
Status unsupported() {
  return fail(Error::SIGNATURE_UNSUPPORTED, kNoOffset, "signature",
              "libfatpte was built without signature support (FATPTE_SIGNATURES=OFF, no OpenSSL)");
}
}  // namespace

Result<SignatureCheck> check_signature(const Container&, const TrustedKeys&, Bytes) { return unsupported(); }
Result<SignatureCheck> detail::check_signature(const Container&, const TrustedKeys&, Bytes, SignatureWork*) {
  return unsupported();
}
Status check_entry_bytes(const Container&, SignatureCheck&, std::uint32_t) { return unsupported(); }
Status check_all_bytes(const Container&, SignatureCheck&) { return unsupported(); }
Status check_downgrade(const Container&, const SignatureCheck&, const DeviceProfile&, const std::vector<std::string>&,
                       const std::vector<std::string>&) {
  return unsupported();
}

#endif  // FATPTE_WITH_OPENSSL

}  // namespace fatpte
