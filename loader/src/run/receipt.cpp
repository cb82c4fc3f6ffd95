// Receipts (see receipt.hpp). Without LoadOptions::receipt_details a receipt holds no file path
// beyond the container's name and no text a backend or the runtime wrote: each rejected entry is
// a reason code (and the error code where one was found); with it, each reason's words too.
#include "run/receipt.hpp"

#include <ctime>
#include <string>
#include <vector>

#include "fatpte/select.hpp"
#include "common/text.hpp"
#include "memory/identity.hpp"
#include "memory/verdict_store.hpp"
#include "run/remember.hpp"

namespace fatpte {
namespace detail {

namespace {

// JSON written over lines (the canonical profile) on one line: each newline and the indentation
// after it dropped (a JSON string holds no raw newline, so both lie outside strings).
std::string one_line(const std::string& json) {
  std::string out;
  bool indent = false;
  for (const char ch : json) {
    if (ch == '\n') {
      indent = true;
    } else if (!(indent && ch == ' ')) {
      indent = false;
      out += ch;
    }
  }
  return out;
}

std::string null_or(const std::string& text, bool present) { return present ? json_text(text) : "null"; }

// The stable word for why an attempt did not serve its entry.
std::string reason_code(const Attempt& a) {
  const std::string& o = a.outcome;
  if (a.remembered == "fail" || a.remembered == "crash") return "remembered_" + a.remembered;
  if (o.rfind("self-test failed", 0) == 0) return "self_test_failed";
  if (o.rfind("not fetched", 0) == 0) return "not_fetched";
  if (o.rfind("stopped: ", 0) == 0) return "stopped";
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

std::string entry_json(const Container& c, std::uint32_t index, const std::string& outcome, const std::string& code,
                       const std::string& error, const std::string& reason, const std::string& remembered,
                       bool details) {
  const Entry& e = c.entries()[index];
  return "{\"entry\": " + std::to_string(index) + ", \"name\": " + json_text(e.name) +
         ", \"backend_id\": " + json_text(e.backend_id) + ", \"outcome\": \"" + outcome + "\", \"reason_code\": " +
         null_or(code, !code.empty()) + ", \"error_code\": " + null_or(error, !error.empty()) +
         ", \"reason\": " + null_or(reason, details && !reason.empty()) + ", \"remembered\": " +
         null_or(remembered, !remembered.empty()) + "}";
}

// Every entry: served, rejected (by selection, or by its attempt) or not tried.
std::string entries_json(const Container& c, const Dispatch& d, const Selection* selection, bool details) {
  std::vector<std::string> rows(c.entries().size());
  if (selection != nullptr) {
    for (const Verdict& v : selection->verdicts) {
      if (v.index < rows.size() && !v.eligible) {
        rows[v.index] = entry_json(c, v.index, "rejected", "ineligible", "", explain_verdict(c.entries()[v.index], v),
                                   "", details);
      }
    }
  }
  for (const Attempt& a : d.attempts) {
    if (a.index >= rows.size()) continue;
    const bool served = d.loaded && d.loaded->index() == a.index;
    rows[a.index] = served ? entry_json(c, a.index, "chosen", "", "", "", a.remembered, details)
                           : entry_json(c, a.index, "rejected", reason_code(a), error_code(a.outcome), a.outcome,
                                        a.remembered, details);
  }
  std::string out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].empty()) rows[i] = entry_json(c, static_cast<std::uint32_t>(i), "not_tried", "", "", "", "", details);
    out += (i ? ", " : "") + rows[i];
  }
  return "[" + out + "]";
}

// The served entry's self-test: asked, whether its golden calls ran, passed, and their summary.
std::string self_test_json(const Dispatch& d, const LoadOptions& options) {
  std::string summary;
  bool remembered = false;
  for (const Attempt& a : d.attempts) {
    if (!d.loaded || a.index != d.loaded->index()) continue;
    remembered = a.remembered == "pass";
    for (const std::string& line : a.details) {
      if (line.rfind("self-test: ", 0) == 0 && summary.empty()) summary = line.substr(11);
    }
  }
  const bool ran = options.self_test && d.loaded && !remembered && !summary.empty() &&
                   summary.rfind("not run", 0) != 0;
  return std::string("{\"asked\": ") + (options.self_test ? "true" : "false") + ", \"ran\": " +
         (ran ? "true" : "false") + ", \"remembered_pass\": " + (remembered ? "true" : "false") +
         ", \"summary\": " + null_or(summary, ran) + "}";
}

std::string words_json(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ", ") + json_text(w);
  return "[" + out + "]";
}

std::string runtime_json(const std::string& runtime) {
  std::string libs, line;
  for (char ch : runtime) {
    if (ch != '\n') {
      line += ch;
      continue;
    }
    libs += (libs.empty() ? "" : ", ") + json_text(line);
    line.clear();
  }
  return "{\"libraries\": [" + libs + "]}";
}

std::string container_json(const Container& c, const LoadOptions& options, const std::string& key_id) {
  return "{\"name\": " + json_text(options.receipt_name) + ", \"digest\": \"" + memory::container_digest(c) +
         "\", \"signer_key_id\": " + null_or(key_id, !key_id.empty()) + "}";
}

}  // namespace

std::string load_receipt(const Container& c, const DeviceProfile& device, const LoadOptions& options, const Dispatch& d,
                         const Selection* selection, const Status& result, std::uint64_t time) {
  std::string chosen = "null";
  if (d.loaded) {
    const Entry& e = c.entries()[d.loaded->index()];
    chosen = "{\"entry\": " + std::to_string(e.index) + ", \"name\": " + json_text(e.name) +
             ", \"backend_id\": " + json_text(e.backend_id) + "}";
  }
  const std::vector<std::string> no_words;
  const std::string runtime = runtime_fingerprint(options);
  const std::string profile = canonical_json(device);  // the fingerprint's and the receipt's, made once
  std::size_t hits = 0;
  for (const Attempt& a : d.attempts) hits += a.remembered.empty() ? 0 : 1;
  const std::string error = result.ok() ? "null"
                                        : "{\"code\": \"" + std::string(error_tag(result.code())) + "\"}";
  return "{\"receipt\": \"load\", \"version\": 1, \"time\": " + std::to_string(time) +
         ", \"container\": " + container_json(c, options, d.signature_key_id) + ", \"method\": " +
         json_text(options.method) + ", \"prefer\": " + words_json(selection ? selection->prefer : no_words) +
         ", \"exclude\": " + words_json(selection ? selection->exclude : no_words) + ", \"chosen\": " + chosen + ", \"error\": " + error +
         ", \"entries\": " + entries_json(c, d, selection, options.receipt_details) + ", \"self_test\": " +
         self_test_json(d, options) + ", \"verdict_store\": {\"used\": " + (options.verdicts.empty() ? "false" : "true") +
         ", \"hits\": " + std::to_string(hits) + "}, \"device\": {\"fingerprint\": \"" +
         device_fingerprint(profile, runtime) + "\", \"profile\": " + one_line(profile) + "}, \"runtime\": " +
         runtime_json(runtime) + "}";
}

std::string fallback_receipt(const Container& c, const LoadOptions& options, const FallbackEvent& e,
                             std::uint64_t time) {
  const std::string to = e.to_entry ? std::to_string(*e.to_entry) : "null";
  return "{\"receipt\": \"fallback\", \"version\": 1, \"time\": " + std::to_string(time) +
         ", \"container\": " + container_json(c, options, "") + ", \"method\": " + json_text(options.method) +
         ", \"event\": {\"call\": " + std::to_string(e.call) + ", \"from_entry\": " + std::to_string(e.from_entry) +
         ", \"to_entry\": " + to + ", \"reason\": " + json_text(e.reason) + ", \"detail\": " +
         null_or(e.detail, options.receipt_details) + "}}";
}

void deliver_load_receipt(const Container& c, const DeviceProfile& device, const LoadOptions& options,
                          const Dispatch& d, const Selection* selection, const Status& result) {
  if (!options.receipt) return;
  options.receipt(
      load_receipt(c, device, options, d, selection, result, static_cast<std::uint64_t>(std::time(nullptr))));
}

}  // namespace detail
}  // namespace fatpte
