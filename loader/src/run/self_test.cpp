// Running an entry's golden calls (fatpte/self_test.hpp, run/self_test.hpp).
#include "fatpte/self_test.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/sha256.hpp"
#include "common/text.hpp"
#include "container/golden.hpp"
#include "container/manifest_view.hpp"
#include "run/self_test.hpp"

namespace fatpte {
namespace {

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

std::string short_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

std::string plural(std::size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// The outcome of one output against its golden tensor.
GoldenOutputResult judge(const GoldenOutputSpec& spec, const Tensor& got) {
  GoldenOutputResult r;
  r.key = spec.want.key;
  r.dtype = spec.want.dtype;
  r.shape = spec.want.sizes;
  r.atol = spec.atol;
  r.rtol = spec.rtol;
  if (got.none) {
    r.problem = "the output is None";
    return r;
  }
  const GoldenComparison cmp = compare_golden(spec, static_cast<std::int8_t>(got.dtype), got.shape, got.data.data(),
                                              got.data.size());
  r.problem = cmp.problem;
  r.max_abs = cmp.max_abs;
  r.max_rel = cmp.max_rel();
  r.max_want = cmp.max_want;
  r.bound = cmp.bound;
  r.passed = cmp.problem.empty() && cmp.passed;
  return r;
}

// Whether method `name` of entry `index` has state: its signature lists buffers, or the manifest
// states no signature (so nothing says it has none).
bool has_state(const Container& c, std::uint32_t index, const std::string& name) {
  auto manifest = manifest_view(c);
  if (!manifest.ok()) return true;
  const nfat::manifest::Entry* e = manifest.value().entry(index);
  if (e == nullptr || e->signature() == nullptr || e->signature()->methods() == nullptr) return true;
  for (const nfat::manifest::Method* m : *e->signature()->methods()) {
    if (m->name()->str() == name) return m->buffers() != nullptr && m->buffers()->size() != 0;
  }
  return true;
}

// Step 10 of specs/nfat-signature.md for the golden tensors: each key signed, its bytes hashing as
// the statement says.
Status check_signed(const Container& c, const SignatureCheck& check, const std::vector<GoldenCallSpec>& calls) {
  auto one = [&](const GoldenTensor& t) -> Status {
    for (const SignatureCheck::Key& k : check.keys) {
      if (k.key != t.key) continue;
      FATPTE_CHECK(k.signed_key, Error::NAMED_DATA_NOT_SIGNED, c.header().manifest_offset, "manifest.named_data",
                   "golden key '%s' is not in the signed statement", detail::clipped(t.key).c_str());
      const auto digest = detail::sha256(t.bytes.data, static_cast<std::size_t>(t.bytes.size));
      FATPTE_CHECK(std::memcmp(digest.data(), k.digest.data(), digest.size()) == 0, Error::SIGNED_NAMED_DATA_MISMATCH,
                   c.header().manifest_offset, "manifest.named_data",
                   "the bytes of golden key '%s' do not hash as the signed statement says", detail::clipped(t.key).c_str());
      return Status();
    }
    return fail(Error::NAMED_DATA_NOT_SIGNED, c.header().manifest_offset, "manifest.named_data",
                "golden key '%s' is not in the signed statement", detail::clipped(t.key).c_str());
  };
  for (const GoldenCallSpec& call : calls) {
    for (const GoldenTensor& t : call.inputs) FATPTE_RETURN_IF_ERROR(one(t));
    for (const GoldenOutputSpec& o : call.outputs) FATPTE_RETURN_IF_ERROR(one(o.want));
  }
  return Status();
}

// The calls of `loaded`'s method, with the segments they name checked (CRC32C, then the signature);
// `refused` holds a call of a method the entry's signature does not list (E0422), which fails the
// self-test whichever method is served.
Result<std::vector<GoldenCallSpec>> calls_to_make(const Container& c, const Loaded& loaded, const SignatureCheck* signature,
                                                  std::size_t& others, std::vector<GoldenCallResult>& refused) {
  auto all = golden_calls(c, loaded.index());
  if (!all.ok()) return all.error();
  const GoldenCallSpec* bad = nullptr;
  const Status listed = golden_methods_listed(c, loaded.index(), all.value(), &bad);
  if (!listed.ok() && bad == nullptr) return listed;  // the manifest itself failed
  if (bad != nullptr) {
    GoldenCallResult r;
    r.index = bad->index;
    r.method = bad->method;
    r.error = listed.describe();
    refused.push_back(std::move(r));
  }
  std::vector<GoldenCallSpec> mine;
  for (GoldenCallSpec& call : all.value()) {
    if (call.method == loaded.method()) {
      mine.push_back(std::move(call));
    } else {
      ++others;
    }
  }
  FATPTE_RETURN_IF_ERROR(check_golden_segments(c, mine));
  if (signature != nullptr) FATPTE_RETURN_IF_ERROR(check_signed(c, *signature, mine));
  return mine;
}

SelfTestReport run_calls(Loaded& loaded, const std::vector<GoldenCallSpec>& calls, std::size_t others,
                         std::vector<GoldenCallResult> refused, const SelfTestOptions& options) {
  SelfTestReport report;
  report.entry = loaded.index();
  report.method = loaded.method();
  report.other_method_calls = others;
  if (!refused.empty()) {  // no call is made on an entry the manifest makes invalid
    report.passed = false;
    report.calls = std::move(refused);
    return report;
  }
  for (const GoldenCallSpec& call : calls) {
    GoldenCallResult result;
    result.index = call.index;
    result.method = call.method;
    std::vector<Tensor> inputs;
    for (const GoldenTensor& t : call.inputs) {
      if (!is_dtype(t.scalar_type)) {
        result.error = "golden input '" + detail::clipped(t.key) + "' is " + t.dtype + ", which no call can give";
        break;
      }
      inputs.push_back(golden_input(t));
    }
    if (result.error.empty()) {
      auto got = loaded.run(inputs);
      if (!got.ok()) {
        result.error = got.error().describe();
      } else if (got.value().size() != call.outputs.size()) {
        result.error = "the method returned " + plural(got.value().size(), "output") + ", the golden call has " +
                       std::to_string(call.outputs.size());
      } else {
        for (std::size_t j = 0; j < call.outputs.size(); ++j) {
          result.outputs.push_back(judge(call.outputs[j], got.value()[j]));
          report.passed = report.passed && result.outputs.back().passed;
        }
        if (options.keep_outputs) result.got = std::move(got).value();
      }
    }
    if (!result.error.empty()) report.passed = false;
    report.calls.push_back(std::move(result));
  }
  return report;
}

// Whether a signed load's statement does not vouch for the golden calls of entry `index`.
bool unsigned_calls(const SignatureCheck* signature, std::uint32_t index) {
  return signature != nullptr && index < signature->golden_unsigned.size() && signature->golden_unsigned[index];
}

constexpr const char* kUnsignedCalls =
    "the signature does not vouch for them (a statement before revision 3 of specs/nfat-signature.md, and no "
    "fatpte.golden.sha256 in the entry's signed provenance), so they are ignored";

}  // namespace

Result<SelfTestReport> self_test(const Container& c, Loaded& loaded, const SelfTestOptions& options) {
  if (unsigned_calls(options.signature, loaded.index())) {
    SelfTestReport report;
    report.entry = loaded.index();
    report.method = loaded.method();
    report.unsigned_calls = true;
    return report;
  }
  std::size_t others = 0;
  std::vector<GoldenCallResult> refused;
  auto calls = calls_to_make(c, loaded, options.signature, others, refused);
  if (!calls.ok()) return calls.error();
  return run_calls(loaded, calls.value(), others, std::move(refused), options);
}

std::string SelfTestReport::summary() const {
  const std::string of = " of method '" + detail::printable(method) + "'";
  std::string others;
  if (other_method_calls != 0) others = "; " + plural(other_method_calls, "golden call") + " of other methods not made";
  if (unsigned_calls) return std::string("golden calls not made: ") + kUnsignedCalls;
  if (calls.empty()) return "no golden calls" + of + others;
  for (const GoldenCallResult& call : calls) {
    const std::string which = "golden call " + std::to_string(call.index) + " of method '" +
                              detail::printable(call.method) + "'";
    if (!call.error.empty()) return which + " could not run: " + call.error;
    for (std::size_t j = 0; j < call.outputs.size(); ++j) {
      const GoldenOutputResult& o = call.outputs[j];
      if (o.passed) continue;
      const std::string where = which + ", output " + std::to_string(j) + " (key '" + detail::clipped(o.key) + "')";
      if (!o.problem.empty()) return where + ": " + o.problem;
      return where + ": max abs " + short_number(o.max_abs) + " (rel " + short_number(o.max_rel) + ") > " +
             short_number(o.atol) + " + " + short_number(o.rtol) + " * max|want| = " + short_number(o.bound);
    }
  }
  const GoldenCallResult* worst_call = nullptr;
  const GoldenOutputResult* worst = nullptr;
  std::size_t worst_j = 0;
  for (const GoldenCallResult& call : calls) {
    for (std::size_t j = 0; j < call.outputs.size(); ++j) {
      if (worst == nullptr || call.outputs[j].max_rel > worst->max_rel) {
        worst = &call.outputs[j];
        worst_call = &call;
        worst_j = j;
      }
    }
  }
  std::string out = plural(calls.size(), "golden call") + of + " passed";
  if (worst != nullptr) {
    out += " (largest difference: call " + std::to_string(worst_call->index) + ", output " + std::to_string(worst_j) +
           ", max abs " + short_number(worst->max_abs) + ", rel " + short_number(worst->max_rel) + ", within " +
           short_number(worst->atol) + " + " + short_number(worst->rtol) + " * max|want|)";
  }
  return out + others;
}

std::string SelfTestReport::json(const Container& c) const {
  const std::string name = entry < c.entries().size() ? c.entries()[entry].name : "";
  std::string out = "{\"entry\": " + detail::json_quote(name) + ", \"method\": " + detail::json_quote(method) +
                    ", \"passed\": " + (passed ? "true" : "false") +
                    ", \"unsigned_calls\": " + (unsigned_calls ? "true" : "false") +
                    ", \"other_method_calls\": " + std::to_string(other_method_calls) + ", \"calls\": [";
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const GoldenCallResult& call = calls[k];
    out += std::string(k ? ", " : "") + "{\"index\": " + std::to_string(call.index) +
           ", \"method\": " + detail::json_quote(call.method) +
           ", \"error\": " + (call.error.empty() ? "null" : detail::json_quote(call.error)) + ", \"outputs\": [";
    for (std::size_t j = 0; j < call.outputs.size(); ++j) {
      const GoldenOutputResult& o = call.outputs[j];
      std::string shape;
      for (std::size_t d = 0; d < o.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(o.shape[d]);
      out += std::string(j ? ", " : "") + "{\"key\": " + detail::json_quote(o.key) +
             ", \"dtype\": " + detail::json_quote(o.dtype) + ", \"shape\": [" + shape + "]" +
             ", \"max_abs\": " + number(o.max_abs) + ", \"max_rel\": " + number(o.max_rel) +
             ", \"max_want\": " + number(o.max_want) +
             ", \"atol\": " + number(o.atol) + ", \"rtol\": " + number(o.rtol) + ", \"bound\": " + number(o.bound) +
             ", \"passed\": " + (o.passed ? "true" : "false") +
             ", \"problem\": " + (o.problem.empty() ? "null" : detail::json_quote(o.problem)) + "}";
    }
    out += "]}";
  }
  return out + "]}";
}

namespace detail {

Status self_test_on_load(const Container& c, const SignatureCheck* signature, Attempt& attempt,
                         std::unique_ptr<Loaded>& loaded, const Reload& reload) {
  // Golden calls the signature does not vouch for (specs/nfat-signature.md section 6.1) could have
  // been added by anyone: they are not made, not even read, and never reject the signed entry.
  const std::uint32_t index = loaded->index();
  if (unsigned_calls(signature, index)) {
    attempt.details.push_back("self-test: not run: the signature does not vouch for the golden calls of entry '" +
                              detail::printable(c.entries()[index].name) + "': " + kUnsignedCalls);
    return Status();
  }
  std::size_t others = 0;
  std::vector<GoldenCallResult> refused;
  auto calls = calls_to_make(c, *loaded, signature, others, refused);
  if (!calls.ok()) return calls.error();
  const SelfTestReport report = run_calls(*loaded, calls.value(), others, std::move(refused), SelfTestOptions{});
  if (!report.passed) {
    attempt.outcome = "self-test failed: " + fail(Error::GOLDEN_MISMATCH, kNoOffset, "", "%s",
                                                 report.summary().c_str()).describe();
    loaded.reset();
    return Status();
  }
  attempt.details.push_back("self-test: " + report.summary());
  if (report.calls.empty() || !has_state(c, loaded->index(), loaded->method())) return Status();
  std::unique_ptr<Loaded> again;
  std::string why;
  FATPTE_RETURN_IF_ERROR(reload(again, why));
  if (!why.empty()) {
    attempt.outcome = "the self-test passed, then loading the entry again (its method has state) failed: " + why;
    loaded.reset();
  } else if (again) {
    loaded = std::move(again);
    attempt.details.push_back("self-test: the method has state: loaded again, to serve from its initial state");
  }
  return Status();
}

}  // namespace detail
}  // namespace fatpte
