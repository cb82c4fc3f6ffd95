// The state a native (NPTG) delegate payload declares, as fatpte/executorch/nptg.py's read_nptg
// reads it for a program's signature (fatpte/executorch/signature.py): per method of the graph, in
// its order, each buffer a BUFFER_MUTATION output writes back (its target, else its name, typed by
// the written value) and each mutable_buffers entry (typed by its constant, else by its value),
// the first of each fully qualified name kept. The payload is untrusted: it is read only after the
// flatbuffers verifier's primitives passed over every table, vector and string this reads.
#ifndef FATPTE_SRC_ENTRIES_NATIVE_STATE_HPP_
#define FATPTE_SRC_ENTRIES_NATIVE_STATE_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fatpte/format.hpp"

namespace fatpte {
namespace entries {

// One dimension: a static size, or a symbol (`s0`, `s1<=16`) where its bounds differ.
struct NativeDim {
  std::int64_t size = 0;
  std::string symbol;  // "" for a static size
};

struct NativeBuffer {
  std::string fqn;
  bool typed = false;  // false: nothing gives its dtype and shape (signature.py leaves it out)
  std::string dtype;
  std::vector<NativeDim> shape;
};

// Every method's buffers, in order; nullopt when the payload does not read as fatpte reads an
// NPTG graph (its identifier, a required field, an enum value, a bound of the verifier).
std::optional<std::vector<NativeBuffer>> native_buffers(Bytes payload);

}  // namespace entries
}  // namespace fatpte

#endif  // FATPTE_SRC_ENTRIES_NATIVE_STATE_HPP_
