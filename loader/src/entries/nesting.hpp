// How deep the fat delegates of a program entry nest (specs/executorch.md section 8), as
// fatpte/ops/fat_delegate.py's program_nesting_finding walks them: E1010 for the first container
// past format::kMaxFatDelegateDepth levels, or the reader's error for the first nested program on
// the way that does not read, each at its first byte in the file and the path that reaches it.
// Each container and program on the way is read only as far as its table and delegates, at most
// once per depth (a memo keyed by its first byte), so the work stays proportional to the file.
#ifndef FATPTE_SRC_ENTRIES_NESTING_HPP_
#define FATPTE_SRC_ENTRIES_NESTING_HPP_

#include <cstdint>
#include <string>

#include "executorch/program.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace entries {

// The program `payload` (read as `info`) lies at `at` in the file; `path` ends with a dot
// ("entries[0].payload.").
Status check_nesting(Bytes payload, const et::ProgramInfo& info, std::uint64_t at, const std::string& path);

// The structure of the fat delegate container `data`, which lies at `at` in the file; when it does
// not read, its reader's error at `at` plus its offset in that container, with `field`.
Result<Structure> read_fat_container(Bytes data, std::uint64_t at, const std::string& field);

}  // namespace entries
}  // namespace fatpte

#endif  // FATPTE_SRC_ENTRIES_NESTING_HPP_
