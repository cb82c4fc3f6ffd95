// Text of the fixed 32-byte id fields, decoded the way fatpte/format/structure.py does it, and the
// escaping of text the loader prints.
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
// A JSON string literal escaped as Python's json.dumps does (ensure_ascii), so JSON the loader
// prints is byte-identical to fatpte's: \" \\ \n \r \t \b \f, other control and non-ASCII
// bytes as \u00XX (each byte on its own: the texts printed are ASCII by the rules of their fields).
std::string json_quote(const std::string& s);
// Whether data[0:size] is UTF-8 as Python's strict decoder reads it: no overlong forms, no
// surrogates, nothing past U+10FFFF.
bool valid_utf8(const std::uint8_t* data, std::size_t size) noexcept;

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_TEXT_HPP_
