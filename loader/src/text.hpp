// Text of the fixed 32-byte id fields, decoded the way fatpte/structure.py does it.
#ifndef FATPTE_SRC_TEXT_HPP_
#define FATPTE_SRC_TEXT_HPP_

#include <cstddef>
#include <cstdint>
#include <string>

namespace fatpte {
namespace detail {

// Bytes before the first NUL of a NUL-padded field.
std::size_t text_length(const std::uint8_t* raw, std::size_t size) noexcept;
// The text before the first NUL, ASCII kept and other bytes as \xNN (Python's backslashreplace).
std::string decode_text(const std::uint8_t* raw, std::size_t size);
// Why a v2 name or backend id field is invalid, or "" when it is valid (structure.id_problem).
std::string id_problem(const std::uint8_t* raw, std::size_t size);
// Bytes as a quoted, printable string for messages: 'NF\x00T'.
std::string escape_bytes(const std::uint8_t* raw, std::size_t size);

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_TEXT_HPP_
