// field.hpp: what the loader records after a load, when the field proves an entry wrong
// (issue 38). One record type, shared by the code that falls back (an execute error, a non-finite
// output, a deadline, a crash in an isolated qualification) and the code that reports it
// (receipts, `fatpte-run --json`).
#ifndef FATPTE_FIELD_HPP_
#define FATPTE_FIELD_HPP_

#include <cstdint>
#include <optional>
#include <string>

namespace fatpte {

// One fallback after a good load: the entry `from_entry` failed `call` for `reason`; the call was
// retried once on `to_entry` (the next eligible entry, loaded with its state initialised from its
// own program), or on nothing when no eligible entry remained.
struct FallbackEvent {
  std::uint64_t call = 0;                 // the call that failed, counted from 0 since the load
  std::uint32_t from_entry = 0;           // the entry that failed (its index in the container)
  std::optional<std::uint32_t> to_entry;  // the entry that served the retry; none when none remained
  std::string reason;  // a stable word: "execute_error", "non_finite_output", "deadline", "crash"
  std::string detail;  // what happened, for a person: the error's message, the signal's name
};

}  // namespace fatpte

#endif  // FATPTE_FIELD_HPP_
