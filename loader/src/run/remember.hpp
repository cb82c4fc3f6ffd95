// Remembered verdicts in the load policy (LoadOptions::verdicts, specs/verdicts.md section 5):
// the hook run/dispatch.cpp calls around each attempt. Before an entry is tried, its key (the
// container, the entry, the device fingerprint, every library it loads) is computed from files
// without loading any of them, and a remembered crash or disagreement skips it ("remembered: ...");
// a remembered pass stands for its golden calls. Before a load (and self-test) whose outcome is
// not remembered, the crash journal's record is written and synced; after it, the verdict
// replaces it, or it is removed when the attempt proved nothing.
#ifndef FATPTE_SRC_RUN_REMEMBER_HPP_
#define FATPTE_SRC_RUN_REMEMBER_HPP_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/device.hpp"
#include "fatpte/dispatch.hpp"
#include "memory/verdict_store.hpp"

namespace fatpte {
namespace detail {

// Whether `key` of LoadOptions::libraries names an operator library (`kernels`, `kernels_*`).
bool is_operator_key(const std::string& key);
// The operator libraries the options name, key to file: `kernels` (the build's default,
// libexecutorch_kernels_optimized.so, unless the caller names another) and each `kernels_*`; a file
// "" is withheld. What the load opens and the runtime's fingerprint names.
std::map<std::string, std::string> operator_libraries(const LoadOptions& options);
// What the runtime is, one line per library: libfatpte's own file, ExecuTorch's runtime library
// and the operator libraries the options name, each "NAME IDENTITY" (no path).
std::string runtime_fingerprint(const LoadOptions& options);
// The device fingerprint of specs/verdicts.md section 3 for one load: SHA-256 of the profile's
// canonical JSON and runtime_fingerprint, in hex; each part made the first time it is asked for and
// kept, so the verdict store's key and the receipt share one reading of the library files and one
// digest (a load with both paid for each twice: 25,000 instructions, callgrind).
class DeviceFingerprint {
 public:
  DeviceFingerprint(const DeviceProfile& device, const LoadOptions& options) : device_(device), options_(options) {}
  const DeviceProfile& device() const { return device_; }
  const std::string& profile_json();
  const std::string& runtime();
  const std::string& digest();
  // The digest when something asked for it already (a verdict store's key), else null: a receipt
  // names it then and leaves it to its reader otherwise (specs/receipts.md, version 2).
  const std::string* digest_if_made() const { return digest_ ? &*digest_ : nullptr; }

 private:
  const DeviceProfile& device_;
  const LoadOptions& options_;
  std::optional<std::string> profile_json_, runtime_, digest_;
};

class Remembered {
 public:
  // Reads the store when the options name one; a store that cannot be used is a note in
  // `notes` and the load goes on as if none were named (nothing skipped, nothing written).
  Remembered(const Container& container, DeviceFingerprint& device, const LoadOptions& options,
             std::vector<std::string>& notes);
  // Before entry `e` is tried: false when the store remembers it crashing or disagreeing
  // (attempt.outcome and attempt.remembered say so).
  bool allows(const Entry& e, bool program, Attempt& attempt);
  // The entry allowed last has a remembered pass: its golden calls need not run.
  bool passed() const { return passed_; }
  // The crash journal: before the risky part of an attempt (load, self-test) not yet remembered.
  void begin(Attempt& attempt);
  // After it: `verdict` "pass", "fail", "loaded" or "skipped" (with `reason`), or "" when the
  // attempt proved nothing (the journal's record, or one the attempt contradicts, is removed).
  // Written when the journal was, or when the store said otherwise.
  void end(Attempt& attempt, const std::string& verdict, const std::string& reason);

 private:
  void save(Attempt& attempt);
  bool on_ = false;
  bool passed_ = false;
  bool settled_ = false;  // the attempt's outcome is remembered already: no journal
  bool journaled_ = false;
  const Container& container_;
  const LoadOptions& options_;
  std::string path_;
  std::string container_digest_;
  std::string device_digest_;
  memory::VerdictStore store_;
  memory::VerdictKey key_;
};

// A call entry `e` failed after its load (a fallback after load, specs/nfat-manifest.md 6.4):
// remembered as "fail" with `reason` when the options name a store, so the next start skips the
// entry without trying it. What the store said is added to `notes`.
void remember_failed_call(const Container& c, const DeviceProfile& device, const LoadOptions& options, const Entry& e,
                          const std::string& reason, std::vector<std::string>& notes);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_RUN_REMEMBER_HPP_
