// The signature of an ExecuTorch program, derived from what its flatbuffer records, and its
// agreement with the signature a manifest entry states for it: fatpte/executorch/signature.py's
// program_signature and fatpte/manifest/rules.py's signature_difference over
// fatpte/manifest/adapters.py's program_view (specs/nfat-manifest.md sections 5.1 to 5.3,
// specs/executorch.md section 7 rule 1).
//
// User inputs are the execution plan's inputs, user outputs its outputs less the write-backs of
// mutable buffers; a mutable buffer of the program itself is a memory-planned tensor, not an input,
// that is the in-place target of an `aten::copy_` call or has a fully qualified name; then the
// state each delegate it calls declares in a native (NPTG) payload, its own or that of a fat
// delegate's entry (entries/native_state.hpp), each name once. A native payload that does not read
// leaves that method's buffers uncompared (`delegate_state`), where Python refuses the program.
#ifndef FATPTE_SRC_ENTRIES_PROGRAM_SIGNATURE_HPP_
#define FATPTE_SRC_ENTRIES_PROGRAM_SIGNATURE_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "executorch/program.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "nfat_manifest_generated.h"

namespace fatpte {
namespace entries {

struct DerivedDim {
  std::int64_t size = 0;  // a native graph's bounds may make it negative, which Python refuses
  std::string symbol;     // a native graph's symbolic dimension (`s0<=16`); "" for a static size
};

struct DerivedTensor {
  std::string dtype;               // a dtype name, or a value kind ("int") for a non-tensor value
  std::vector<DerivedDim> shape;   // empty for a non-tensor value
  std::optional<std::string> name; // a buffer's fully qualified name, when the file records one
};

struct DerivedMethod {
  std::string name;
  std::vector<DerivedTensor> inputs, outputs, buffers;
  // A delegate it calls declares state in a native payload this reader could not read: its
  // buffers are not compared.
  bool delegate_state = false;
};

// The signature of the program in `payload`, which et::read_program has read as `info`; it
// lies at `at` in its container. E0702 at `at` (field `field`), as Python's Signature.from_mapping
// refuses it, for a method name that is empty, longer than the manifest's text limit or given
// twice, or a buffer name longer than that limit; a called fat delegate whose container fails
// the structural pass gives that pass's error, its offset taken from `at`.
Result<std::vector<DerivedMethod>> program_signature(Bytes payload, const et::ProgramInfo& info, std::uint64_t at,
                                                     const std::string& field);

// The first difference between the signature `stated` (each program_dtype taken as the dtype)
// and `derived`, in words; "" when they agree: the same method names, and per method inputs,
// outputs and buffers that agree position by position (dtype, dims, names where both have one).
std::string signature_difference(const nfat::manifest::Signature& stated, const std::vector<DerivedMethod>& derived);

}  // namespace entries
}  // namespace fatpte

#endif  // FATPTE_SRC_ENTRIES_PROGRAM_SIGNATURE_HPP_
