// What the loader reads of an ExecuTorch program (ET12) before handing it to ExecuTorch: its
// methods and, per method, the ExecuTorch backend ids its delegates name. These decide which
// backend libraries an entry needs, so an entry whose backends are missing is skipped before
// ExecuTorch loads anything, in v1 containers and in entries without manifest data alike.
//
// The program is untrusted: the extended header (`eh00`) is checked as specs/executorch.md
// section 2 says, and the flatbuffer is read only after the flatbuffers verifier of the C++ code
// flatc generates at build time from the SDK's own schema (executorch/schema/program.fbs) passed
// over its first program_size bytes. No ExecuTorch library is needed for this. Also: whether an
// entry's payload is such a program (ET12), run as a program rather than handed to a backend.
#ifndef FATPTE_SRC_EXECUTORCH_PROGRAM_HPP_
#define FATPTE_SRC_EXECUTORCH_PROGRAM_HPP_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/format.hpp"
#include "fatpte/format_generated.h"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace executorch_flatbuffer {
struct Program;
}  // namespace executorch_flatbuffer

namespace fatpte {

// Whether the table states the entry's payload kind (a version 2 entry of a kind other than
// zero); otherwise payload_is_program reads the payload's bytes 4..8.
inline bool payload_kind_stated(const Container& c, const Entry& e) {
  static const std::uint8_t kZero[4] = {0, 0, 0, 0};
  return c.version() == format::kVersion2 && std::memcmp(e.payload_kind.data(), kZero, 4) != 0;
}

// Payload kind ET12; in version 1, or where no kind is stated, the program's own identifier at
// bytes 4..8 of the payload. The entry passed the structural pass, so its range is in the buffer.
inline bool payload_is_program(const Container& c, const Entry& e) {
  if (payload_kind_stated(c, e)) return std::memcmp(e.payload_kind.data(), "ET12", 4) == 0;
  return e.size >= 8 && std::memcmp(c.bytes().data + e.offset + 4, "ET12", 4) == 0;
}

namespace et {

struct MethodInfo {
  std::string name;
  std::vector<std::string> backend_ids;  // each once, in the order its first delegate appears
  // The processed data of each delegate that is a fat delegate (starts with the NFAT magic), in
  // the program's bytes, so a loader can see what its entries need; a reference out of the
  // program's bounds is left for ExecuTorch to refuse.
  std::vector<Bytes> fat_payloads;
  // Each delegate's processed data, in the method's order; empty where its reference leads out of
  // the program (for ExecuTorch to refuse).
  std::vector<Bytes> delegates;
};

struct ProgramInfo {
  std::vector<MethodInfo> methods;  // in the program's order
  // The method named `name`, or nullptr.
  const MethodInfo* method(const std::string& name) const;
};

// Read the program in `payload`, which lies at `file_offset` in its container (errors give
// offsets in the file and the field `field`): E1001 identifier, E1002 truncated, E1003 extended
// header, E1004 the flatbuffer fails verification, E1006 a value index past the method's values
// (int list items, chains, instruction arguments by kind, the method's inputs and outputs) or an
// operator or delegate index past its table, E1008 a method or delegate without its name, an int
// list item that is not an int, a delegate without `processed` or a compile spec without its key
// or value, a tensor of a scalar type fatpte does not read, without sizes, with a negative size or
// one past 2^63 elements or 2^64 bytes (specs/executorch.md sections 3 and 4: what ExecuTorch
// would abort or crash on, or search its inputs quadratically for).
Result<ProgramInfo> read_program(Bytes payload, std::uint64_t file_offset, const std::string& field);

// The root table of a program's flatbuffer, which read_program has verified (the same bytes).
const ::executorch_flatbuffer::Program* program_root(const void* flatbuffer);

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_EXECUTORCH_PROGRAM_HPP_
