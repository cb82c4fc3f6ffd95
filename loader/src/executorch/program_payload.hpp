// Whether an entry's payload is an ExecuTorch program (ET12): what the loader and the fat delegate
// (delegate/fat_backend.hpp) run as a program rather than hand to a backend.
#ifndef FATPTE_SRC_EXECUTORCH_PROGRAM_PAYLOAD_HPP_
#define FATPTE_SRC_EXECUTORCH_PROGRAM_PAYLOAD_HPP_

#include <cstdint>
#include <cstring>

#include "fatpte/container.hpp"
#include "fatpte/format.hpp"
#include "fatpte/format_generated.h"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

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

}  // namespace fatpte

#endif  // FATPTE_SRC_EXECUTORCH_PROGRAM_PAYLOAD_HPP_
