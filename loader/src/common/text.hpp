// Text of the fixed 32-byte id fields, decoded the way fatpte/format/structure.py does it, and the
// escaping of text the loader prints.
#ifndef FATPTE_SRC_COMMON_TEXT_HPP_
#define FATPTE_SRC_COMMON_TEXT_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fatpte {
namespace detail {

// Bytes before the first NUL of a NUL-padded field.
std::size_t text_length(const std::uint8_t* raw, std::size_t size) noexcept;
// The text before the first NUL, ASCII kept and other bytes as \xNN (Python's backslashreplace).
std::string decode_text(const std::uint8_t* raw, std::size_t size);
// Why a v2 name or backend id field is invalid, or "" when it is valid (structure.id_problem).
std::string id_problem(const std::uint8_t* raw, std::size_t size);
// Where Python's strict UTF-8 decoder reports the first error (UnicodeDecodeError.start): the
// first byte of the first sequence that is not well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or -1 when all `size` bytes are.
std::int64_t first_invalid_utf8(const std::uint8_t* raw, std::size_t size) noexcept;
// Bytes as a quoted, printable string for messages: 'NF\x00T'.
std::string escape_bytes(const std::uint8_t* raw, std::size_t size);
// Text from a file made safe for a terminal, exactly as fatpte.errors.printable does: C0 controls,
// the backslash, DEL and C1 controls (U+0080..U+009F) as \xNN; the line and paragraph separators
// and the bidirectional controls (U+200E, U+200F, U+2028, U+2029, U+202A..U+202E, U+2066..U+2069)
// as \uNNNN; a byte that is not part of well-formed UTF-8 as \xNN; everything else unchanged.
std::string printable(const std::string& s);
// printable() keeping the newline and the backslash (errors.terminal_safe): a whole message or
// line, as it is written out.
std::string terminal_safe(const std::string& s);
// printable() of the first `limit` bytes (cut back to a character boundary), then `...(N bytes)`
// when `s` is longer (errors.clipped, CLIP_BYTES = 1024).
inline constexpr std::size_t kClipBytes = 1024;
std::string clipped(const std::string& s, std::size_t limit = kClipBytes);
// A string from a file as a message quotes it: clipped(), in single quotes (errors.quoted).
std::string quoted(const std::string& s, std::size_t limit = kClipBytes);
// Items already made printable, comma-separated, the first `limit` and then how many more: "a, b,
// c and 8189 more" (errors.listed, LIST_LIMIT = 8).
std::string listed(const std::vector<std::string>& items, std::size_t limit = 8);
// A JSON string literal escaped as Python's json.dumps does (ensure_ascii), so JSON the loader
// prints is byte-identical to fatpte's: \" \\ \n \r \t \b \f, other control and non-ASCII
// bytes as \u00XX (each byte on its own: the texts printed are ASCII by the rules of their fields).
std::string json_quote(const std::string& s);
// json_quote(s) appended to `out`, without a string of its own.
void append_json_quoted(std::string& out, const std::string& s);
// A JSON string literal of UTF-8 text as Python's json.dumps writes the str (ensure_ascii: each
// character past ASCII as \uXXXX, a surrogate pair past U+FFFF); text that is not UTF-8 is
// written as printable() escapes it, in ASCII.
std::string json_text(const std::string& text);
// json_text(text) appended to `out`, without a string of its own (receipts append dozens).
void append_json_text(std::string& out, std::string_view text);
// Whether `s` begins with the literal `prefix` (str.startswith), compared inline.
template <std::size_t N>
inline bool starts_with(const std::string& s, const char (&prefix)[N]) noexcept {
  return s.size() >= N - 1 && std::char_traits<char>::compare(s.data(), prefix, N - 1) == 0;
}
// Whether data[0:size] is UTF-8 as Python's strict decoder reads it: no overlong forms, no
// surrogates, nothing past U+10FFFF.
bool valid_utf8(const std::uint8_t* data, std::size_t size) noexcept;

}  // namespace detail
}  // namespace fatpte

#endif  // FATPTE_SRC_COMMON_TEXT_HPP_
