// Receipts (see receipt.hpp). Without LoadOptions::receipt_details a receipt holds no file path
// beyond the container's name and no text a backend or the runtime wrote: each rejected entry is
// a reason code (and the error code where one was found); with it, each reason's words too.
#include "run/receipt.hpp"

#include <algorithm>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "fatpte/select.hpp"
#include "common/text.hpp"
#include "memory/identity.hpp"
#include "memory/verdict_store.hpp"
#include "run/remember.hpp"

namespace fatpte {
namespace detail {

namespace {

// JSON written over lines (the canonical profile) appended on one line: each newline and the
// indentation after it dropped (a JSON string holds no raw newline, so both lie outside strings).
void append_one_line(std::string& out, const std::string& json) {
  std::size_t at = 0;
  while (at < json.size()) {
    const std::size_t newline = std::min(json.find('\n', at), json.size());
    out.append(json, at, newline - at);
    at = json.find_first_not_of(' ', newline + (newline < json.size() ? 1 : 0));
    if (at == std::string::npos) break;
  }
}

// Receipts are built by appending to one string: joining temporaries (`"a" + b + ...`) cost a
// receipt more allocations and copies than its content (callgrind, issue 38); a literal is
// appended with its length known, not measured again.
template <std::size_t N>
void add(std::string& out, const char (&literal)[N]) {
  out.append(literal, N - 1);
}

void add_text(std::string& out, const std::string& text) { append_json_text(out, text); }

void add_bool(std::string& out, bool value) {
  if (value) {
    add(out, "true");
  } else {
    add(out, "false");
  }
}

void add_null_or(std::string& out, const std::string& text, bool present) {
  if (present) {
    add_text(out, text);
  } else {
    add(out, "null");
  }
}

std::string null_or(const std::string& text, bool present) { return present ? json_text(text) : "null"; }

// The stable word for why an attempt did not serve its entry.
std::string reason_code(const Attempt& a) {
  const std::string& o = a.outcome;
  if (a.remembered == "fail" || a.remembered == "crash") return "remembered_" + a.remembered;
  if (starts_with(o, "self-test failed")) return "self_test_failed";
  if (starts_with(o, "not fetched")) return "not_fetched";
  if (starts_with(o, "stopped: ")) return "stopped";
  if (o.find("needs ExecuTorch backend") != std::string::npos || o.find("library") != std::string::npos ||
      o.find("not available") != std::string::npos || o.find("refused: ") == 0) {
    return "backend_unavailable";
  }
  return "load_failed";
}

// The error code an outcome names (`E1401`), or "".
std::string error_code(const std::string& outcome) {
  for (std::size_t at = outcome.find('E'); at != std::string::npos; at = outcome.find('E', at + 1)) {
    if (at + 5 <= outcome.size() && outcome.find_first_not_of("0123456789", at + 1) >= at + 5 &&
        (at + 5 == outcome.size() || outcome[at + 5] == ':' || outcome[at + 5] == ' ')) {
      return outcome.substr(at, 5);
    }
  }
  return "";
}

// What a receipt says of one entry; `code`, `error`, `reason`, `remembered`: "" for null.
struct EntryRow {
  const char* outcome = "not_tried";
  std::string code, error, reason, remembered;
};

void add_entry(std::string& out, const Container& c, std::uint32_t index, const EntryRow& r, bool details) {
  const Entry& e = c.entries()[index];
  add(out, "{\"entry\": ");
  out += std::to_string(index);
  add(out, ", \"name\": ");
  add_text(out, e.name);
  add(out, ", \"backend_id\": ");
  add_text(out, e.backend_id);
  add(out, ", \"outcome\": \"");
  out += r.outcome;
  add(out, "\", \"reason_code\": ");
  add_null_or(out, r.code, !r.code.empty());
  add(out, ", \"error_code\": ");
  add_null_or(out, r.error, !r.error.empty());
  add(out, ", \"reason\": ");
  add_null_or(out, r.reason, details && !r.reason.empty());
  add(out, ", \"remembered\": ");
  add_null_or(out, r.remembered, !r.remembered.empty());
  out += '}';
}

// Every entry: served, rejected (by selection, or by its attempt) or not tried.
void add_entries(std::string& out, const Container& c, const Dispatch& d, const Selection* selection, bool details) {
  std::vector<EntryRow> rows(c.entries().size());
  if (selection != nullptr) {
    for (const Verdict& v : selection->verdicts) {
      if (v.index < rows.size() && !v.eligible) {
        rows[v.index] = EntryRow{"rejected", "ineligible", "", explain_verdict(c.entries()[v.index], v), ""};
      }
    }
  }
  for (const Attempt& a : d.attempts) {
    if (a.index >= rows.size()) continue;
    const bool served = d.loaded && d.loaded->index() == a.index;
    rows[a.index] = served ? EntryRow{"chosen", "", "", "", a.remembered}
                           : EntryRow{"rejected", reason_code(a), error_code(a.outcome), a.outcome, a.remembered};
  }
  out += '[';
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i != 0) add(out, ", ");
    add_entry(out, c, static_cast<std::uint32_t>(i), rows[i], details);
  }
  out += ']';
}

// The served entry's self-test: asked, whether its golden calls ran, passed, and their summary.
void add_self_test(std::string& out, const Dispatch& d, const LoadOptions& options) {
  std::string summary;
  bool remembered = false;
  for (const Attempt& a : d.attempts) {
    if (!d.loaded || a.index != d.loaded->index()) continue;
    remembered = a.remembered == "pass";
    for (const std::string& line : a.details) {
      if (starts_with(line, "self-test: ") && summary.empty()) summary = line.substr(11);
    }
  }
  const bool ran = options.self_test && d.loaded && !remembered && !summary.empty() &&
                   !starts_with(summary, "not run");
  add(out, "{\"asked\": ");
  add_bool(out, options.self_test);
  add(out, ", \"ran\": ");
  add_bool(out, ran);
  add(out, ", \"remembered_pass\": ");
  add_bool(out, remembered);
  add(out, ", \"summary\": ");
  add_null_or(out, summary, ran);
  out += '}';
}

void add_words(std::string& out, const std::vector<std::string>& words) {
  out += '[';
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i != 0) add(out, ", ");
    add_text(out, words[i]);
  }
  out += ']';
}

// runtime_fingerprint's lines, each a string of the list (quoted where it lies, not copied out).
void add_runtime(std::string& out, const std::string& runtime) {
  add(out, "{\"libraries\": [");
  const std::string_view lines = runtime;
  for (std::size_t at = 0, end; (end = lines.find('\n', at)) != std::string_view::npos; at = end + 1) {
    if (at != 0) add(out, ", ");
    append_json_text(out, lines.substr(at, end - at));
  }
  add(out, "]}");
}

void add_container(std::string& out, const Container& c, const LoadOptions& options, const std::string& key_id) {
  add(out, "{\"name\": ");
  add_text(out, options.receipt_name);
  add(out, ", \"digest\": \"");
  out += memory::container_digest(c);  // a reference to the digest the container keeps
  add(out, "\", \"signer_key_id\": ");
  add_null_or(out, key_id, !key_id.empty());
  out += '}';
}

void add_chosen(std::string& out, const Container& c, const Dispatch& d) {
  if (!d.loaded) {
    add(out, "null");
    return;
  }
  const Entry& e = c.entries()[d.loaded->index()];
  add(out, "{\"entry\": ");
  out += std::to_string(e.index);
  add(out, ", \"name\": ");
  add_text(out, e.name);
  add(out, ", \"backend_id\": ");
  add_text(out, e.backend_id);
  out += '}';
}

// The device: the profile, from its canonical JSON made once (and shared with the verdict store's
// key when the load used one), and the fingerprint when that key made it. Without a store it is
// null: a reader makes it from the profile and the runtime lines the receipt holds (specs/
// receipts.md section 2), which spares every load that keeps no store 7 blocks of SHA-256, a fifth
// of a receipt's work on a CPU without SHA instructions (14,000 of 70,000 instructions, issue 38).
void add_device(std::string& out, DeviceFingerprint& device) {
  add(out, "{\"fingerprint\": ");
  const std::string* digest = device.digest_if_made();
  if (digest != nullptr) {
    out += '"';
    out += *digest;
    out += '"';
  } else {
    add(out, "null");
  }
  add(out, ", \"profile\": ");
  append_one_line(out, device.profile_json());
  out += '}';
}

}  // namespace

std::string load_receipt(const Container& c, DeviceFingerprint& device, const LoadOptions& options, const Dispatch& d,
                         const Selection* selection, const Status& result, std::uint64_t time) {
  const std::vector<std::string> no_words;
  std::size_t hits = 0;
  for (const Attempt& a : d.attempts) hits += a.remembered.empty() ? 0 : 1;
  std::string out;
  out.reserve(4096);
  add(out, "{\"receipt\": \"load\", \"version\": 2, \"time\": ");
  out += std::to_string(time);
  add(out, ", \"container\": ");
  add_container(out, c, options, d.signature_key_id);
  add(out, ", \"method\": ");
  add_text(out, options.method);
  add(out, ", \"prefer\": ");
  add_words(out, selection ? selection->prefer : no_words);
  add(out, ", \"exclude\": ");
  add_words(out, selection ? selection->exclude : no_words);
  add(out, ", \"chosen\": ");
  add_chosen(out, c, d);
  add(out, ", \"error\": ");
  out += result.ok() ? "null" : "{\"code\": \"" + std::string(error_tag(result.code())) + "\"}";
  add(out, ", \"entries\": ");
  add_entries(out, c, d, selection, options.receipt_details);
  add(out, ", \"self_test\": ");
  add_self_test(out, d, options);
  add(out, ", \"verdict_store\": {\"used\": ");
  add_bool(out, !options.verdicts.empty());
  add(out, ", \"hits\": ");
  out += std::to_string(hits);
  add(out, "}, \"device\": ");
  add_device(out, device);
  add(out, ", \"runtime\": ");
  add_runtime(out, device.runtime());
  out += '}';
  return out;
}

std::string fallback_receipt(const Container& c, const LoadOptions& options, const FallbackEvent& e,
                             std::uint64_t time) {
  std::string out = "{\"receipt\": \"fallback\", \"version\": 2, \"time\": " + std::to_string(time) +
                    ", \"container\": ";
  add_container(out, c, options, "");
  out += ", \"method\": " + json_text(options.method) + ", \"event\": {\"call\": " + std::to_string(e.call) +
         ", \"from_entry\": " + std::to_string(e.from_entry) +
         ", \"to_entry\": " + (e.to_entry ? std::to_string(*e.to_entry) : std::string("null")) +
         ", \"reason\": " + json_text(e.reason) + ", \"detail\": " + null_or(e.detail, options.receipt_details) +
         "}}";
  return out;
}

void deliver_load_receipt(const Container& c, DeviceFingerprint& device, const LoadOptions& options,
                          const Dispatch& d, const Selection* selection, const Status& result) {
  if (!options.receipt) return;
  options.receipt(
      load_receipt(c, device, options, d, selection, result, static_cast<std::uint64_t>(std::time(nullptr))));
}

}  // namespace detail
}  // namespace fatpte
