// The program reader of `validate` (specs/executorch.md section 7): an ExecuTorch program (ET12)
// read as fatpte/executorch/pte.py's read_program reads it, and its delegates' XNNPACK and NPTG
// payloads as xnnpack.py and nptg.py read them, with the bounded flatbuffer walker of
// fatpte/executorch/flatbuf.py, so that a damaged program is refused by both languages with the
// same code at the same offset (E1001 to E1008).
//
// What it checks, in Python's order: the extended header; the identifier; each table's position
// and vtable inside the flatbuffer (vtable size at least 4 and even, table size at least 4); each
// field inside its table; each uoffset landing inside the flatbuffer; each vector's length times
// its element size inside what is left; each string's terminating NUL and UTF-8; the object
// budget (1,000,000 plus the flatbuffer's size: a table, each element of a vector not of bytes,
// one per byte vector) and the text budget (16 per byte of the flatbuffer plus 1 MiB, each string
// counted at each reference to it); then what pte.py checks of segments, delegates' data, values,
// tensors, int lists, operators, delegates, chains, instructions, named data and sub-segments.
// The walk follows the schema (program.fbs), never a cycle of offsets, and each step costs from
// the budgets, so its work is linear in the payload.
//
// Only what Python reads is checked: the flatbuffers verifier (executorch/program.hpp
// read_program), which also checks alignment and the fields Python never reads, runs after it for
// what the loader itself reads of the program.
#ifndef FATPTE_SRC_ENTRIES_PROGRAM_READER_HPP_
#define FATPTE_SRC_ENTRIES_PROGRAM_READER_HPP_

#include <cstdint>
#include <string>

#include "executorch/program.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace entries {

// The program as validate, a load and the fat delegate read it: first as Python's read_program
// reads it, a damaged one refused with its first error, at `file_offset` plus the offset Python's
// reader names (`file_offset` itself where it names none), with field `field`; then the flatbuffers
// verifier's reading (et::read_program), which gives what the loader itself reads of the program.
Result<et::ProgramInfo> read_program_validated(Bytes payload, std::uint64_t file_offset, const std::string& field);

// A delegate's payload as fatpte/executorch/keys.py reads it for the named-data keys it loads:
// an NPTG graph (nptg.py read_nptg) or an XNNPACK payload, XH00-wrapped or a bare XN01 flatbuffer
// (xnnpack.py read_xnnpack), by its bytes 4..8; OK for any other. Errors as read_program_checked's,
// except that one Python's reader gives no offset is at `none_at` (the program entry's payload).
Status read_payload_checked(Bytes payload, std::uint64_t file_offset, const std::string& field, std::uint64_t none_at);

}  // namespace entries
}  // namespace fatpte

#endif  // FATPTE_SRC_ENTRIES_PROGRAM_READER_HPP_
