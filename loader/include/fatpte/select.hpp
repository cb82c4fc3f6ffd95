// select.hpp: choosing the entry for a device, the rule of specs/nfat-manifest.md section 6,
// exactly as fatpte/device/selection.py applies it: eligibility (every requirement of the entry's
// manifest entry holds, its program's ExecuTorch backends are in the device's runtime when the
// profile says, and the caller did not exclude it), then ranking by priority, the caller's
// preference, delegation (a program that delegates to a backend first), specificity and table
// position. Choosing is a pure function of the container's
// table and manifest, the device profile and the caller's words; it reads no payload and loads
// nothing.
#ifndef FATPTE_SELECT_HPP_
#define FATPTE_SELECT_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/device.hpp"
#include "fatpte/result.hpp"

namespace fatpte {

struct Failure {
  std::string requirement;  // "os", "arch", "cpu_features", "accelerators[0]", "min_memory_bytes", ...
  std::string needed;
  std::string has;
};

struct Verdict {
  std::uint32_t index = 0;  // the entry's position in the table
  bool eligible = false;
  std::vector<Failure> failures;
  std::vector<std::string> notes;  // what selection could not check (an unlisted backend ABI)
  int specificity = 0;
  std::uint32_t rank = 0;  // 1 for the chosen entry; 0 when not eligible
  // How an eligible entry fits (specs/nfat-manifest.md 6.3): "exact", "compatible" or "fallback";
  // "" when not eligible.
  std::string grade;
  // What the manifest says the entry's program needs (executorch_backends; absent: not known).
  std::optional<std::vector<std::string>> executorch_backends;
  // The entry's program delegates to a backend: ranked above one that does not (section 6.2).
  bool delegates() const { return executorch_backends && !executorch_backends->empty(); }
  // The entry's backend_abi requirement, which the loader checks against the backend library's
  // table when it loads it (specs/nfat-manifest.md 4.2), whether or not the profile listed it.
  bool has_backend_abi = false;
  std::uint32_t backend_abi_min = 0;
  std::uint32_t backend_abi_max = 0;
};

struct Selection {
  bool fits = false;        // false when no entry is eligible (only assess() returns such a selection)
  std::uint32_t chosen = 0;  // the entry's table index, when `fits`
  std::vector<Verdict> verdicts;  // one per entry, in table order
  std::string device_name;
  std::string device_os;
  std::string device_arch;
  std::vector<std::string> prefer;
  std::vector<std::string> exclude;
};

// The selection, or NO_SPECIALIZATION_FITS whose message lists every entry and why; manifest
// errors (checksum, identifier, malformed) are reported with their own codes.
Result<Selection> select(const Container& container, const DeviceProfile& device,
                         const std::vector<std::string>& prefer, const std::vector<std::string>& exclude);
// select() without the error for "none fits": every verdict, with `fits` false when no entry is
// eligible (what `--select-only --json` prints then, as Python's SelectionError.report).
Result<Selection> assess(const Container& container, const DeviceProfile& device,
                         const std::vector<std::string>& prefer, const std::vector<std::string>& exclude);
// Whether any entry of the container states an accelerator requirement (true when the manifest
// cannot be read, so that select() reports its error on a fully probed device).
bool requires_accelerators(const Container& container);
// The facts of this machine that selection and loading read for this container: cpu features
// when an entry requires some, memory when one states min_memory_bytes, accelerators when one
// requires an accelerator; everything when the manifest cannot be read or an entry is not an
// ExecuTorch program by its table kind (it goes to a backend library whose is_available() reads
// the whole profile). select(c, probe_host(probe_scope(c)), ...) chooses what
// select(c, probe_host(), ...) does.
ProbeScope probe_scope(const Container& container);
// An entry as explain() and the logs name it: "name [backend_id]", both escaped (they come from
// the file).
std::string entry_label(const Entry& entry);
// One entry's line of explain(), without its indent ("#1 name [backend]: eligible, exact (...)"
// or "-  name [backend]: rejected: ..."), its notes on lines of their own but those of `shared`.
std::string explain_verdict(const Entry& entry, const Verdict& verdict, const std::vector<std::string>& shared = {});
// The lines of every entry (indented), then each note two or more entries share, once ("note,
// for every entry: ..." or "note, for entries a, b: ..."), as Python's explain_lines.
std::vector<std::string> explain_lines(const std::vector<Entry>& entries, const std::vector<Verdict>& verdicts);
// Python's Selection.explain(): the device, the chosen entry, and one line per entry.
std::string explain(const Container& container, const Selection& selection);
// The same from the container's entries, for a caller that keeps them beyond the container.
std::string explain(const std::vector<Entry>& entries, const Selection& selection);
// json.dumps(Selection.to_json(), indent=2) + "\n"; `chosen` is null when the selection does not fit.
std::string selection_json(const Container& container, const Selection& selection);

}  // namespace fatpte

#endif  // FATPTE_SELECT_HPP_
