// Selection (specs/nfat-manifest.md section 6), mirroring fatpte/device/selection.py: the same
// eligibility, ranking, failure texts and explanation, so both print the same thing.
#include "fatpte/select.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/text.hpp"
#include "container/manifest_view.hpp"
#include "device/identity.hpp"
#include "device/requirements.hpp"
#include "fatpte/format_generated.h"
#include "nfat_manifest_generated.h"
#include "vendor/runtimes.hpp"

namespace fatpte {
namespace {

namespace F = format;
namespace M = nfat::manifest;
using detail::AccRequirement;
using detail::Constraint;
using detail::kU32Max;
using detail::Requirements;
std::string join(const std::vector<std::string>& words, const char* sep) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) out += (i ? sep : "") + words[i];
  return out;
}

std::vector<std::string> strings(const ::flatbuffers::Vector<::flatbuffers::Offset<::flatbuffers::String>>* v) {
  std::vector<std::string> out;
  if (v != nullptr) {
    for (const auto* s : *v) out.push_back(s->str());
  }
  return out;
}

Requirements decode(const M::Requirements* r) {
  Requirements out;
  if (r == nullptr) return out;
  out.os = strings(r->os());
  out.arch = strings(r->arch());
  out.cpu_features = strings(r->cpu_features());
  if (r->accelerators() != nullptr) {
    for (const auto* a : *r->accelerators()) {
      AccRequirement acc;
      acc.kind = a->kind()->str();
      acc.min_memory_bytes = a->min_memory_bytes();
      if (a->device() != nullptr) acc.device = a->device()->str();
      acc.capabilities = strings(a->capabilities());
      if (a->targets() != nullptr) {
        for (const auto* t : *a->targets()) acc.targets.push_back(Constraint{t->match(), t->major(), t->minor()});
      }
      out.accelerators.push_back(std::move(acc));
    }
  }
  out.min_memory_bytes = r->min_memory_bytes();
  out.cpu_cores = strings(r->cpu_cores());
  if (r->min_core() != nullptr) out.min_core = r->min_core()->str();
  out.soc = strings(r->soc());
  if (r->backend_abi() != nullptr) {
    out.has_abi = true;
    out.abi_min = r->backend_abi()->min();
    out.abi_max = r->backend_abi()->max();
  }
  return out;
}

// The requirements of each table entry by name (the first manifest entry of that name, as
// Python's Manifest.entry), after the manifest's CRC32C, identifier and verification have passed.
Result<std::map<std::string, Requirements>> manifest_requirements(const Container& c) {
  std::map<std::string, Requirements> out;
  auto manifest = manifest_view(c);
  if (!manifest.ok()) return manifest.error();
  const M::Manifest* root = manifest.value().root();
  if (root != nullptr && root->entries() != nullptr) {
    for (const auto* e : *root->entries()) {
      out.emplace(e->name()->str(), detail::requirements_of(e));  // emplace keeps the first
    }
  }
  return out;
}

}  // namespace

Requirements detail::requirements_of(const M::Entry* record) {
  if (record == nullptr) return Requirements();
  Requirements req = decode(record->requires_());
  if (record->executorch_backends() != nullptr) req.executorch_backends = strings(record->executorch_backends());
  return req;
}

bool requires_accelerators(const Container& c) {
  auto reqs = manifest_requirements(c);
  if (!reqs.ok()) return true;
  for (const auto& kv : reqs.value()) {
    if (!kv.second.accelerators.empty()) return true;
  }
  return false;
}

ProbeScope probe_scope(const Container& c) {
  // An entry that is not an ExecuTorch program by its table kind goes to a backend library whose
  // is_available() reads the whole profile (backend.h): probe everything. Only the table is read
  // (a reader's container has no payload bytes), so a version 1 entry counts as such an entry.
  static const std::uint8_t kProgram[4] = {'E', 'T', '1', '2'};
  for (const Entry& e : c.entries()) {
    if (c.version() != F::kVersion2 || std::memcmp(e.payload_kind.data(), kProgram, 4) != 0) return ProbeScope{};
  }
  auto reqs = manifest_requirements(c);
  if (!reqs.ok()) return ProbeScope{};
  ProbeScope scope{false, false, false, false, {}, std::map<std::string, std::set<std::string>>()};
  for (const auto& kv : reqs.value()) {
    const Requirements& r = kv.second;
    scope.cpu_features = scope.cpu_features || !r.cpu_features.empty();
    scope.memory = scope.memory || r.min_memory_bytes != 0;
    scope.accelerators = scope.accelerators || !r.accelerators.empty();
    // A vendor runtime's devices only of the types an entry names ("": every device of it).
    for (const AccRequirement& a : r.accelerators) {
      if (vendor::runtime_named(a.kind) != nullptr) (*scope.vendor_devices)[a.kind].insert(a.device);
    }
    scope.identity = scope.identity || r.names_device();
  }
  return scope;
}

namespace {

std::pair<std::uint64_t, std::uint64_t> version_pair(const std::string& text) {
  const char* p = text.c_str();
  char* end = nullptr;
  const std::uint64_t a = std::strtoull(p, &end, 10);
  std::uint64_t b = 0;
  if (*end == '.') b = std::strtoull(end + 1, nullptr, 10);
  return {a, b};
}

bool accelerator_met(const AccRequirement& req, const DeviceProfile& d) {
  for (const Accelerator& acc : d.accelerators) {
    if (acc.kind != req.kind || acc.memory_bytes < req.min_memory_bytes) continue;
    if (!req.device_met(acc.device)) continue;
    bool listed = true;
    for (const std::string& c : req.capabilities) {
      listed = listed && std::find(acc.capabilities.begin(), acc.capabilities.end(), c) != acc.capabilities.end();
    }
    if (!listed) continue;
    if (req.targets.empty()) return true;
    const auto v = version_pair(acc.version);
    for (const Constraint& t : req.targets) {
      if (t.holds(v.first, v.second)) return true;
    }
  }
  return false;
}

// selection._accelerator_needed: "cuda sm_80 or compute_90 with at least N bytes of memory",
// "openvino GPU with capabilities fp16".
std::string accelerator_needed(const AccRequirement& acc) {
  std::string needed = acc.kind + (acc.device.empty() ? "" : " " + acc.device);
  if (!acc.targets.empty()) {
    std::vector<std::string> texts;
    for (const Constraint& t : acc.targets) texts.push_back(t.text(acc.kind));
    needed += " " + join(texts, " or ");
  }
  if (!acc.capabilities.empty()) needed += " with capabilities " + join(acc.capabilities, ", ");
  if (acc.min_memory_bytes) needed += " with at least " + std::to_string(acc.min_memory_bytes) + " bytes of memory";
  return needed;
}

// selection._accelerators_had: each accelerator of `kind`, a vendor runtime's device with its name
// and capabilities ("openvino CPU 2026.4.0 (Intel(R) Xeon(R) Processor, 0 bytes; bf16, fp32)").
std::string accelerators_had(const std::string& kind, const DeviceProfile& d) {
  std::vector<std::string> have;
  for (const Accelerator& a : d.accelerators) {
    if (a.kind != kind) continue;
    have.push_back(a.kind + (a.device.empty() ? "" : " " + a.device) + " " + a.version + " (" + a.name + ", " +
                   std::to_string(a.memory_bytes) + " bytes" +
                   (a.capabilities.empty() ? "" : "; " + join(a.capabilities, ", ")) + ")");
  }
  return have.empty() ? "no " + kind + " accelerator" : join(have, ", ");
}

bool contains(const std::vector<std::string>& words, const std::string& w) {
  return std::find(words.begin(), words.end(), w) != words.end();
}

bool meets_min_core(const std::string& word, const std::string& floor) {
  const detail::Core* core = detail::core_by_name(word);
  const detail::Core* least = detail::core_by_name(floor);
  return core != nullptr && least != nullptr && std::strcmp(core->arch, least->arch) == 0 &&
         core->generation >= least->generation;
}

// selection.identity_failures: every core in `cpu_cores`, every core at least `min_core`, the
// machine or an SoC word in `soc`; a profile that does not list them meets none.
void identity_failures(const Requirements& req, const DeviceProfile& d, Verdict& v) {
  const bool listed = d.cpu_cores && !d.cpu_cores->empty();
  const std::string has = listed ? join(std::vector<std::string>(d.cpu_cores->begin(), d.cpu_cores->end()), ", ")
                                 : "no core listed (the profile does not say which cores it has)";
  if (!req.cpu_cores.empty()) {
    bool all = listed;
    for (const std::string& c : listed ? *d.cpu_cores : std::set<std::string>()) all = all && contains(req.cpu_cores, c);
    if (!all) v.failures.push_back({"cpu_cores", "every core one of " + join(req.cpu_cores, ", "), has});
  }
  if (req.min_core) {
    bool all = listed;
    for (const std::string& c : listed ? *d.cpu_cores : std::set<std::string>()) all = all && meets_min_core(c, *req.min_core);
    if (!all) v.failures.push_back({"min_core", "every core " + *req.min_core + " or a later one", has});
  }
  if (req.soc.empty()) return;
  std::vector<std::string> words;
  if (d.machine) words.push_back(*d.machine);
  if (d.soc) words.insert(words.end(), d.soc->begin(), d.soc->end());
  for (const std::string& w : req.soc) {
    if (contains(words, w)) return;
  }
  std::vector<std::string> parts;
  if (d.machine) parts.push_back("machine " + *d.machine);
  if (d.soc && !d.soc->empty()) parts.push_back("soc " + join(std::vector<std::string>(d.soc->begin(), d.soc->end()), ", "));
  v.failures.push_back({"soc", "one of " + join(req.soc, ", "),
                        parts.empty() ? "no machine or SoC listed (the profile does not say)" : join(parts, " and ")});
}

// selection.grade: how an eligible entry fits (specs/nfat-manifest.md 6.3).
const char* grade_of(const Requirements& req) {
  if (req.names_device()) return "exact";
  return !req.cpu_features.empty() || !req.accelerators.empty() ? "compatible" : "fallback";
}

void evaluate(const Entry& e, const Requirements& req, const DeviceProfile& d, Verdict& v) {
  if (!req.os.empty() && !contains(req.os, d.os)) v.failures.push_back({"os", "one of " + join(req.os, ", "), d.os});
  if (!req.arch.empty() && !contains(req.arch, d.arch)) {
    v.failures.push_back({"arch", "one of " + join(req.arch, ", "), d.arch});
  }
  std::vector<std::string> missing;
  for (const std::string& f : req.cpu_features) {
    if (d.cpu_features.count(f) == 0) missing.push_back(f);
  }
  if (!missing.empty()) {
    const std::vector<std::string> has(d.cpu_features.begin(), d.cpu_features.end());
    v.failures.push_back({"cpu_features", join(req.cpu_features, ", "),
                          "no " + join(missing, ", ") + " (it has " + (has.empty() ? "none" : join(has, ", ")) + ")"});
  }
  for (std::size_t i = 0; i < req.accelerators.size(); ++i) {
    const AccRequirement& acc = req.accelerators[i];
    if (accelerator_met(acc, d)) continue;
    v.failures.push_back({"accelerators[" + std::to_string(i) + "]", accelerator_needed(acc), accelerators_had(acc.kind, d)});
  }
  if (req.min_memory_bytes && d.memory_bytes < req.min_memory_bytes) {
    v.failures.push_back({"min_memory_bytes", "at least " + std::to_string(req.min_memory_bytes) + " bytes",
                          std::to_string(d.memory_bytes) + " bytes"});
  }
  identity_failures(req, d, v);
  if (req.has_abi) {
    v.has_backend_abi = true;
    v.backend_abi_min = req.abi_min;
    v.backend_abi_max = req.abi_max;
    auto it = d.backends.find(e.backend_id);
    if (it == d.backends.end()) {
      v.notes.push_back("backend ABI " + req.abi_text() + " not checked: the profile does not list backend '" +
                        detail::clipped(e.backend_id) + "'; the loader checks it when it loads the backend library");
    } else if (!(req.abi_min <= it->second && it->second <= req.abi_max)) {
      v.failures.push_back({"backend_abi", e.backend_id + " ABI " + req.abi_text(), "ABI " + std::to_string(it->second)});
    }
  }
}

// Names, requirement words and what the device has are shown through detail::clipped: control
// characters escaped and long text cut, as fatpte/device/selection.py shows them.
std::string clipped_list(const std::vector<std::string>& words) {
  std::vector<std::string> shown;
  shown.reserve(words.size());
  for (const std::string& w : words) shown.push_back(detail::clipped(w));
  return join(shown, ", ");
}

// selection.runtime_check: an ExecuTorch backend the entry's program needs and the device's
// runtime lacks fails the entry; a profile that does not say leaves a note.
void runtime_check(const Requirements& req, const DeviceProfile& d, Verdict& v) {
  if (!req.executorch_backends || req.executorch_backends->empty()) return;
  const std::vector<std::string>& needs = *req.executorch_backends;
  if (!d.executorch_backends) {
    // The same words for every entry (its backends are on its line), so --explain says it once.
    v.notes.push_back("ExecuTorch backends not checked: the profile does not list the "
                      "backends its runtime has (`fatpte device` lists them when it finds the runtime: fatpte-run, or ExecuTorch's Python runtime)");
    return;
  }
  std::vector<std::string> missing;
  for (const std::string& b : needs) {
    if (d.executorch_backends->count(b) == 0) missing.push_back(b);
  }
  if (missing.empty()) return;
  const std::vector<std::string> has(d.executorch_backends->begin(), d.executorch_backends->end());
  v.failures.push_back({"executorch_backends", join(needs, ", "),
                        "no " + clipped_list(missing) + " (its runtime has " +
                            (has.empty() ? "no backend" : clipped_list(has)) + ")"});
}

std::string string_list(const std::vector<std::string>& words, const std::string& indent) {
  if (words.empty()) return "[]";
  std::string out = "[\n";
  for (std::size_t i = 0; i < words.size(); ++i) {
    out += indent + "  " + detail::json_quote(words[i]) + (i + 1 < words.size() ? ",\n" : "\n");
  }
  return out + indent + "]";
}

}  // namespace

Result<Selection> select(const Container& c, const DeviceProfile& d, const std::vector<std::string>& prefer,
                         const std::vector<std::string>& exclude) {
  Result<Selection> s = assess(c, d, prefer, exclude);
  if (!s.ok() || s.value().fits) return s;
  const std::vector<std::string> lines = explain_lines(c.entries(), s.value().verdicts);
  return fail(Error::NO_SPECIALIZATION_FITS, kNoOffset, "", "no specialization fits device '%s' (%s %s):\n%s",
              d.name.c_str(), d.os.c_str(), d.arch.c_str(), join(lines, "\n").c_str());
}

Result<Selection> assess(const Container& c, const DeviceProfile& d, const std::vector<std::string>& prefer,
                         const std::vector<std::string>& exclude) {
  Result<std::map<std::string, Requirements>> reqs = manifest_requirements(c);
  if (!reqs.ok()) return reqs.error();
  static const Requirements kNone;
  std::vector<detail::Candidate> candidates;
  candidates.reserve(c.entries().size());
  for (const Entry& e : c.entries()) {
    auto it = reqs.value().find(e.name);
    candidates.push_back({&e, it == reqs.value().end() ? &kNone : &it->second});
  }
  return detail::rank(candidates, d, prefer, exclude);
}

Selection detail::rank(const std::vector<Candidate>& candidates, const DeviceProfile& d,
                       const std::vector<std::string>& prefer, const std::vector<std::string>& exclude) {
  Selection s;
  s.device_name = d.name;
  s.device_os = d.os;
  s.device_arch = d.arch;
  s.prefer = prefer;
  s.exclude = exclude;
  const std::set<std::string> excluded(exclude.begin(), exclude.end());
  std::map<std::string, std::size_t> rank_of;  // a word's first place in `prefer`
  for (std::size_t i = 0; i < prefer.size(); ++i) rank_of.emplace(prefer[i], i);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Entry& e = *candidates[i].entry;
    const Requirements& req = *candidates[i].requirements;
    Verdict v;
    v.index = static_cast<std::uint32_t>(i);
    v.executorch_backends = req.executorch_backends;
    evaluate(e, req, d, v);
    runtime_check(req, d, v);
    // The word that excludes it, not the whole list (Python's selection says the same).
    const bool by_name = excluded.count(e.name) != 0;
    if (by_name || excluded.count(e.backend_id) != 0) {
      v.failures.push_back({"exclude", "not to be excluded by the caller",
                            "exclude=" + (by_name ? e.name : e.backend_id)});
    }
    v.specificity = req.specificity();
    v.eligible = v.failures.empty();
    if (v.eligible) v.grade = grade_of(req);
    s.verdicts.push_back(std::move(v));
  }
  const auto preference = [&](const Entry& e) {
    const auto a = rank_of.find(e.name), b = rank_of.find(e.backend_id);
    return std::min(a == rank_of.end() ? prefer.size() : a->second, b == rank_of.end() ? prefer.size() : b->second);
  };
  std::vector<Verdict*> eligible;
  for (Verdict& v : s.verdicts) {
    if (v.eligible) eligible.push_back(&v);
  }
  std::sort(eligible.begin(), eligible.end(), [&](const Verdict* a, const Verdict* b) {
    const Entry& ea = *candidates[a->index].entry;
    const Entry& eb = *candidates[b->index].entry;
    if (ea.priority != eb.priority) return ea.priority > eb.priority;
    const std::size_t pa = preference(ea), pb = preference(eb);
    if (pa != pb) return pa < pb;
    if (a->delegates() != b->delegates()) return a->delegates();
    if (a->specificity != b->specificity) return a->specificity > b->specificity;
    return a->index < b->index;
  });
  for (std::size_t r = 0; r < eligible.size(); ++r) eligible[r]->rank = static_cast<std::uint32_t>(r + 1);
  s.fits = !eligible.empty();
  if (s.fits) s.chosen = eligible.front()->index;
  return s;
}

std::string entry_label(const Entry& e) {
  return detail::clipped(e.name) + " [" + detail::clipped(e.backend_id) + "]";
}

std::string explain_verdict(const Entry& e, const Verdict& v, const std::vector<std::string>& shared) {
  const std::string head = entry_label(e);
  std::string delegation;
  if (v.executorch_backends) {
    delegation = v.executorch_backends->empty() ? ", portable operators"
                                                : ", delegates to " + clipped_list(*v.executorch_backends);
  }
  const std::string detail =
      "priority " + std::to_string(e.priority) + delegation + ", specificity " + std::to_string(v.specificity);
  std::string text;
  if (v.eligible) {
    text = "#" + std::to_string(v.rank) + " " + head + ": eligible, " + v.grade + " (" + detail + ")";
  } else {
    std::vector<std::string> parts;
    for (const Failure& f : v.failures) {
      // The caller's choice, not something the device lacks (as Python's Failure.text says it).
      parts.push_back(f.requirement == "exclude"
                          ? "excluded by the caller (" + detail::clipped(f.has) + ")"
                          : f.requirement + ": needs " + detail::clipped(f.needed) + "; the device has " +
                                detail::clipped(f.has));
    }
    text = "-  " + head + ": rejected: " + join(parts, "; ");
  }
  for (const std::string& n : v.notes) {
    if (!contains(shared, n)) text += "\n     note: " + n;
  }
  return text;
}

std::vector<std::string> explain_lines(const std::vector<Entry>& entries, const std::vector<Verdict>& verdicts) {
  std::vector<std::string> notes;               // each note once, in the order first seen
  std::vector<std::vector<std::uint32_t>> who;  // the verdicts (places) that hold it
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    for (const std::string& n : verdicts[i].notes) {
      const auto it = std::find(notes.begin(), notes.end(), n);
      const std::size_t k = static_cast<std::size_t>(it - notes.begin());
      if (it == notes.end()) {
        notes.push_back(n);
        who.emplace_back();
      }
      if (who[k].empty() || who[k].back() != i) who[k].push_back(static_cast<std::uint32_t>(i));
    }
  }
  std::vector<std::string> shared;
  for (std::size_t k = 0; k < notes.size(); ++k) {
    if (who[k].size() > 1) shared.push_back(notes[k]);
  }
  std::vector<std::string> lines;
  for (const Verdict& v : verdicts) lines.push_back("  " + explain_verdict(entries[v.index], v, shared));
  for (std::size_t k = 0; k < notes.size(); ++k) {
    if (who[k].size() < 2) continue;
    std::string which = "every entry";
    if (who[k].size() != verdicts.size()) {
      std::vector<std::string> names;
      for (std::uint32_t i : who[k]) names.push_back(detail::clipped(entries[verdicts[i].index].name));
      which = "entries " + detail::listed(names);
    }
    lines.push_back("  note, for " + which + ": " + notes[k]);
  }
  return lines;
}

std::string explain(const Container& c, const Selection& s) { return explain(c.entries(), s); }

std::string explain(const std::vector<Entry>& entries, const Selection& s) {
  const Entry& chosen = entries[s.chosen];
  std::vector<std::string> lines = {"device '" + s.device_name + "': " + s.device_os + " " + s.device_arch,
                                    "chosen: " + entry_label(chosen)};
  if (!s.prefer.empty()) lines.push_back("preference: " + detail::clipped(join(s.prefer, ", ")));
  if (!s.exclude.empty()) lines.push_back("excluded: " + detail::clipped(join(s.exclude, ", ")));
  for (std::string& line : explain_lines(entries, s.verdicts)) lines.push_back(std::move(line));
  return join(lines, "\n");
}

std::string selection_json(const Container& c, const Selection& s) {
  std::ostringstream o;
  o << "{\n  \"device\": " << detail::json_quote(s.device_name) << ",\n  \"chosen\": " << (s.fits ? detail::json_quote(c.entries()[s.chosen].name) : "null")
    << ",\n  \"prefer\": " << string_list(s.prefer, "  ") << ",\n  \"exclude\": " << string_list(s.exclude, "  ")
    << ",\n  \"verdicts\": [\n";
  for (std::size_t i = 0; i < s.verdicts.size(); ++i) {
    const Verdict& v = s.verdicts[i];
    const Entry& e = c.entries()[v.index];
    o << "    {\n      \"entry\": " << detail::json_quote(e.name) << ",\n      \"backend_id\": " << detail::json_quote(e.backend_id)
      << ",\n      \"eligible\": " << (v.eligible ? "true" : "false") << ",\n      \"rank\": "
      << (v.eligible ? std::to_string(v.rank) : "null") << ",\n      \"grade\": "
      << (v.eligible ? detail::json_quote(v.grade) : "null") << ",\n      \"priority\": " << e.priority
      << ",\n      \"specificity\": " << v.specificity << ",\n      \"executorch_backends\": "
      << (v.executorch_backends ? string_list(*v.executorch_backends, "      ") : "null") << ",\n      \"failures\": ";
    if (v.failures.empty()) {
      o << "[]";
    } else {
      o << "[\n";
      for (std::size_t k = 0; k < v.failures.size(); ++k) {
        const Failure& f = v.failures[k];
        o << "        {\n          \"requirement\": " << detail::json_quote(f.requirement) << ",\n          \"needed\": "
          << detail::json_quote(f.needed) << ",\n          \"has\": " << detail::json_quote(f.has) << "\n        }"
          << (k + 1 < v.failures.size() ? ",\n" : "\n");
      }
      o << "      ]";
    }
    o << ",\n      \"notes\": " << string_list(v.notes, "      ") << "\n    }" << (i + 1 < s.verdicts.size() ? ",\n" : "\n");
  }
  o << "  ]\n}\n";
  return o.str();
}

}  // namespace fatpte
