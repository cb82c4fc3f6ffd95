// Fallback after load (field/fallback.hpp).
#include "field/fallback.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>
#include <utility>

#include "common/text.hpp"
#include "fatpte/device.hpp"
#include "run/receipt.hpp"
#include "run/remember.hpp"

namespace fatpte {
namespace {

bool floating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16;
}

// A call made on a worker thread: what it and the caller share. The worker keeps it alive, so an
// abandoned call never writes to freed memory.
struct PendingCall {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  Loaded* loaded = nullptr;
  std::vector<Tensor> inputs;
  std::optional<Result<std::vector<Tensor>>> result;
};

std::string label(const Container& c, std::uint32_t index) { return detail::printable(entry_label(c.entries()[index])); }

}  // namespace

std::string non_finite(const std::vector<Tensor>& outputs) {
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const Tensor& t = outputs[o];
    if (t.none || !floating(t.dtype)) continue;
    const std::uint64_t n = t.numel();
    for (std::uint64_t i = 0; i < n; ++i) {
      const double v = t.as_double(static_cast<std::size_t>(i));
      if (!std::isfinite(v)) {
        return "output " + std::to_string(o) + " holds " + (std::isnan(v) ? "NaN" : "an infinity") + " at element " +
               std::to_string(i);
      }
    }
  }
  return "";
}

std::optional<CallFailure> entry_failure(const Result<std::vector<Tensor>>& outcome, bool check_finite) {
  if (outcome.ok()) {
    if (!check_finite) return std::nullopt;
    std::string why = non_finite(outcome.value());
    if (why.empty()) return std::nullopt;
    return CallFailure{"non_finite_output", std::move(why)};
  }
  const Status& s = outcome.error();
  if (s.field().rfind("inputs", 0) == 0) return std::nullopt;  // the caller's inputs, not the entry
  if (s.field() == "deadline") return CallFailure{"deadline", s.message()};
  return CallFailure{"execute_error", s.describe()};
}

Result<std::vector<Tensor>> run_within(std::unique_ptr<Loaded>& loaded, const std::vector<Tensor>& inputs,
                                       std::uint32_t deadline_ms) {
  if (deadline_ms == 0) return loaded->run(inputs);
  auto call = std::make_shared<PendingCall>();
  call->loaded = loaded.get();
  call->inputs = inputs;
  std::thread worker([call] {
    auto r = call->loaded->run(call->inputs);
    std::lock_guard<std::mutex> lock(call->mutex);
    call->result.emplace(std::move(r));
    call->done = true;
    call->done_cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(call->mutex);
  if (call->done_cv.wait_for(lock, std::chrono::milliseconds(deadline_ms), [&] { return call->done; })) {
    lock.unlock();
    worker.join();
    return std::move(*call->result);
  }
  lock.unlock();
  worker.detach();
  (void)loaded.release();  // the abandoned thread may still use it: never freed (see fallback.hpp)
  return fail(Error::INVALID_ARGUMENT, kNoOffset, "deadline",
              "the call ran past its deadline of %u ms; it was abandoned on a worker thread", deadline_ms);
}

Status load_next(const Container& c, const Selection& selection, const std::optional<DeviceProfile>& device,
                 const LoadOptions& options, const std::set<std::uint32_t>& tried, Dispatch& dispatch) {
  std::vector<const Verdict*> ranked;
  for (const Verdict& v : selection.verdicts) {
    if (v.eligible && tried.count(v.index) == 0) ranked.push_back(&v);
  }
  std::sort(ranked.begin(), ranked.end(), [](const Verdict* a, const Verdict* b) { return a->rank < b->rank; });
  const DeviceProfile profile = device ? *device : probe_host(probe_scope(c));
  for (const Verdict* v : ranked) {
    LoadOptions o = options;
    o.only_entry = v->index;
    o.fallback = false;
    auto next = load(c, selection, profile, o);
    if (!next.ok()) {
      if (next.error().code() != Error::NO_SPECIALIZATION_FITS) return next.error();
      // Its attempt said why; load() returned only the error: record the entry as tried.
      Attempt a;
      a.index = v->index;
      a.outcome = "after a fallback: " + next.error().message();
      dispatch.attempts.push_back(std::move(a));
      continue;
    }
    Dispatch& d = next.value();
    for (Attempt& a : d.attempts) dispatch.attempts.push_back(std::move(a));
    if (d.loaded) {
      dispatch.loaded = std::move(d.loaded);
      return Status();
    }
  }
  return Status();
}

void record_fallback(const Container& c, const std::optional<DeviceProfile>& device, const LoadOptions& options,
                     const FallbackEvent& event, std::vector<std::string>& notes) {
  if (!options.verdicts.empty() && event.from_entry < c.entries().size()) {
    // The load keyed its verdicts by the whole probe (dispatch.cpp): the same device again.
    const DeviceProfile here = device ? *device : probe_host();
    detail::remember_failed_call(c, here, options, c.entries()[event.from_entry], event.reason + ": " + event.detail,
                                 notes);
  }
  if (options.receipt) options.receipt(detail::fallback_receipt(c, options, event, std::time(nullptr)));
}

Serving::Serving(const Container& c, std::optional<DeviceProfile> device, LoadOptions options, Dispatch& dispatch)
    : container_(c), device_(std::move(device)), options_(std::move(options)), dispatch_(dispatch) {
  for (const Attempt& a : dispatch_.attempts) tried_.insert(a.index);
}

Result<std::vector<Tensor>> Serving::attempt(const std::vector<Tensor>& inputs) {
  return run_within(dispatch_.loaded, inputs, options_.call_deadline_ms);
}

Result<std::vector<Tensor>> Serving::run(const std::vector<Tensor>& inputs) {
  if (!dispatch_.loaded && options_.fallback && dispatch_.selection) {
    // The last entry was abandoned at a deadline during a retry: the next one, if any, serves.
    FATPTE_RETURN_IF_ERROR(load_next(container_, *dispatch_.selection, device_, options_, tried_, dispatch_));
    for (const Attempt& a : dispatch_.attempts) tried_.insert(a.index);
  }
  FATPTE_CHECK(dispatch_.loaded, Error::INVALID_ARGUMENT, kNoOffset, "",
               "no entry serves: every eligible entry failed a call (see the fallback events)");
  const std::uint64_t call = calls_++;
  const std::uint32_t serving = dispatch_.loaded->index();
  auto outcome = attempt(inputs);
  const std::optional<CallFailure> failure = entry_failure(outcome, options_.check_finite);
  if (!failure) return outcome;
  if (!options_.fallback || !dispatch_.selection) {
    // Nothing to fall back on: a non-finite output the caller asked to be told of fails the call.
    if (!outcome.ok()) return outcome;
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "outputs", "call %llu: %s (non-finite outputs are refused)",
                static_cast<unsigned long long>(call), failure->detail.c_str());
  }
  FallbackEvent event;
  event.call = call;
  event.from_entry = serving;
  event.reason = failure->reason;
  event.detail = failure->detail;
  tried_.insert(event.from_entry);
  // The failed entry is never used again (an abandoned one is owned by its thread already).
  if (dispatch_.loaded) dispatch_.loaded.reset();
  const Status next = load_next(container_, *dispatch_.selection, device_, options_, tried_, dispatch_);
  for (const Attempt& a : dispatch_.attempts) tried_.insert(a.index);
  if (dispatch_.loaded) event.to_entry = dispatch_.loaded->index();
  const std::string from = label(container_, event.from_entry);
  dispatch_.notes.push_back("fallback: call " + std::to_string(call) + ": " + from + " failed (" + event.reason +
                            "): " + detail::printable(event.detail) +
                            (event.to_entry ? "; retried once on " + label(container_, *event.to_entry) +
                                                  ", loaded from its program (its state initialised)"
                                            : "; no eligible entry remained"));
  events_.push_back(event);
  record_fallback(container_, device_, options_, event, dispatch_.notes);
  if (!next.ok()) return next;
  if (!dispatch_.loaded) {
    return fail(outcome.ok() || outcome.error().field() == "deadline" ? Error::INVALID_ARGUMENT : outcome.error().code(),
                kNoOffset, event.reason == "deadline" ? "deadline" : "",
                "call %llu failed on entry %s (%s: %s), and no eligible entry remained to retry it on",
                static_cast<unsigned long long>(call), from.c_str(), event.reason.c_str(), event.detail.c_str());
  }
  auto retried = attempt(inputs);
  if (retried.ok() && options_.check_finite) {
    const std::string why = non_finite(retried.value());
    if (!why.empty()) {
      return fail(Error::INVALID_ARGUMENT, kNoOffset, "outputs", "call %llu: the retry on entry %s: %s",
                  static_cast<unsigned long long>(call), label(container_, *event.to_entry).c_str(), why.c_str());
    }
  }
  return retried;
}

}  // namespace fatpte
