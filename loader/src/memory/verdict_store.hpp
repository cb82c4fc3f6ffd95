// The verdict store (specs/verdicts.md): what a device learned about the entries it tried, one
// small JSON file per application, read at the start of a load and written back atomically after
// each verdict. This file owns the format: its reader (strict and bounded: a store that breaks any
// rule is refused whole, never trusted to skip an entry) and its writer; run/remember.cpp decides
// when a load reads and writes it.
#ifndef FATPTE_SRC_MEMORY_VERDICT_STORE_HPP_
#define FATPTE_SRC_MEMORY_VERDICT_STORE_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace memory {

// The limits of specs/verdicts.md section 4, each refused beyond.
inline constexpr std::uint64_t kMaxStoreBytes = std::uint64_t{1} << 20;
inline constexpr std::size_t kMaxRecords = 256;       // the oldest record is evicted to add one more
inline constexpr std::size_t kMaxLibraries = 32;
inline constexpr std::size_t kMaxText = 1024;         // name, method, reason, a library identity
inline constexpr std::uint32_t kStoreVersion = 1;

// What makes a verdict true (specs/verdicts.md section 3): a record applies to a load only when
// every part is equal.
struct VerdictKey {
  std::string container;               // 64 hex digits: the container's metadata digest
  std::uint32_t entry = 0;             // the entry's index in the table
  std::string name;                    // the entry's name
  std::string method;                  // the method loaded
  std::string device;                  // 64 hex digits: the device fingerprint's digest
  std::vector<std::string> libraries;  // the identity of each library the entry loads, sorted
  bool operator==(const VerdictKey& o) const {
    return container == o.container && entry == o.entry && name == o.name && method == o.method &&
           device == o.device && libraries == o.libraries;
  }
};

// "pass": its golden calls passed; "fail": they disagreed; "crash": the process died while
// trying it; "loaded": it loaded, no self-test asked; "skipped": it was skipped for a reason its
// checks find again at every start (a library missing); "attempt": the crash journal's record, written before a risky attempt and replaced
// after it (one found at the next start is a crash).
struct VerdictRecord {
  VerdictKey key;
  std::string verdict;
  std::string reason;
  std::uint64_t time = 0;  // seconds since 1970 when it was written
};

struct VerdictStore {
  std::vector<VerdictRecord> records;  // in the file's order
};

// The store at `path`: empty when the file does not exist; otherwise every rule of
// specs/verdicts.md section 4 or the first one broken (INVALID_ARGUMENT naming the field, or
// IO_ERROR / NOT_A_FILE), as fatpte/ops/verdicts.py reads it.
Result<VerdictStore> read_store(const std::string& path);
// Parse a store's text (`source` names it in messages).
Result<VerdictStore> parse_store(const std::string& text, const std::string& source);
// The store as its canonical text: keys in the order of section 2, one record a line.
std::string store_text(const VerdictStore& store);
// Write the store to `path` atomically (a temporary file beside it, synced, renamed over it, the
// folder synced): a crash leaves the old store or the new one, never a part.
Status write_store(const std::string& path, const VerdictStore& store);

// The record for `key`, or nullptr.
const VerdictRecord* find(const VerdictStore& store, const VerdictKey& key);
// Add `record`, replacing the one of its key; at kMaxRecords, the oldest (smallest time, first in
// the file) goes.
void put(VerdictStore& store, VerdictRecord record);
// Remove the record of `key`; whether there was one.
bool erase(VerdictStore& store, const VerdictKey& key);

}  // namespace memory
}  // namespace fatpte

#endif  // FATPTE_SRC_MEMORY_VERDICT_STORE_HPP_
