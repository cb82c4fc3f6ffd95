// Fallback after load (issue 38): a loaded entry that fails a call is marked failed, the next
// eligible entry is loaded and the same call is retried on it once. What fails a call:
// - an error of the entry (ExecuTorch's execute, an output it cannot give, the example backend's
//   run): every error but inputs that do not fit the method (field "inputs..."), which are the
//   caller's and would fail on any entry;
// - with LoadOptions::check_finite, an output of a floating dtype holding NaN or an infinity;
// - with LoadOptions::call_deadline_ms, a call running past the deadline. The call then runs on a
//   worker thread; at the deadline that thread is detached and left running (it cannot be
//   stopped safely), and the entry's loaded method, its memory and the copy of the call's inputs
//   are leaked with it, never used or freed again: what leaks is one thread and one loaded entry
//   per abandoned call. The container must stay open while such a thread may still wake up.
// The next entry is the next eligible one in rank order, after those already tried, loaded by
// the whole load policy (signature, isolation, self-test as the options say) from its own program:
// its state (mutable buffers, KV caches) is the program's initial state, not the failed entry's.
// Each fallback is one FallbackEvent (fatpte/field.hpp), and its attempts are added to the load's.
#ifndef FATPTE_SRC_FIELD_FALLBACK_HPP_
#define FATPTE_SRC_FIELD_FALLBACK_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/field.hpp"
#include "fatpte/result.hpp"
#include "fatpte/select.hpp"
#include "fatpte/tensor.hpp"

namespace fatpte {

// Why a call's outcome fails the entry: {reason, detail} (FallbackEvent's words), or nothing when
// it does not (a success, or an error of the caller's inputs).
struct CallFailure {
  std::string reason;
  std::string detail;
};
std::optional<CallFailure> entry_failure(const Result<std::vector<Tensor>>& outcome, bool check_finite);
// "output 0 holds NaN at element 3" for the first non-finite element of a floating output; "".
std::string non_finite(const std::vector<Tensor>& outputs);

// The next eligible entry after those `tried`, in `selection`'s rank order, loaded with `options`
// (only that entry, no fallback of its own); its attempts appended to `dispatch.attempts`.
// nullptr when none remains or none of them loads; a Status that stops the load (damage,
// tampering) is returned as is.
Status load_next(const Container& c, const Selection& selection, const std::optional<DeviceProfile>& device,
                 const LoadOptions& options, const std::set<std::uint32_t>& tried, Dispatch& dispatch);

// What a fallback leaves behind (specs/nfat-manifest.md 6.4 and 6.5), once its retry's entry is
// known: the failed entry remembered as "fail" in the verdict store and the event's receipt
// delivered, each when the options ask for it; `notes` gets what the store said.
void record_fallback(const Container& c, const std::optional<DeviceProfile>& device, const LoadOptions& options,
                     const FallbackEvent& event, std::vector<std::string>& notes);

// A loaded entry that falls back after load: the C API's fatpte_execute serves through it.
class Serving {
 public:
  // `dispatch` holds the loaded entry (and the selection the load made); both `c` and `dispatch`
  // must outlive this object.
  Serving(const Container& c, std::optional<DeviceProfile> device, LoadOptions options, Dispatch& dispatch);
  // One call on the serving entry; when the entry fails it, the fallback and one retry.
  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs);
  const std::vector<FallbackEvent>& events() const noexcept { return events_; }

 private:
  Result<std::vector<Tensor>> attempt(const std::vector<Tensor>& inputs);

  const Container& container_;
  std::optional<DeviceProfile> device_;
  LoadOptions options_;
  Dispatch& dispatch_;
  std::set<std::uint32_t> tried_;
  std::vector<FallbackEvent> events_;
  std::uint64_t calls_ = 0;
};

// One call of `loaded` that returns by `deadline_ms` (0: none, the call runs here). Past it,
// `loaded` is released (leaked to the abandoned worker thread, see above) and left empty, and the
// result is a DEADLINE failure.
Result<std::vector<Tensor>> run_within(std::unique_ptr<Loaded>& loaded, const std::vector<Tensor>& inputs,
                                       std::uint32_t deadline_ms);

}  // namespace fatpte

#endif  // FATPTE_SRC_FIELD_FALLBACK_HPP_
