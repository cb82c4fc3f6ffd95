// text.hpp: text from a file made safe to print.
#ifndef FATPTE_TEXT_HPP_
#define FATPTE_TEXT_HPP_

#include <string>

namespace fatpte {

// Text safe to write to a terminal, as fatpte.errors does it in Python: printable() escapes every
// control character (newline included), the backslash and the bidirectional controls as \xNN or
// \uNNNN, for a string from a file; terminal_safe() escapes the same but keeps newlines and
// backslashes, for a whole message as it is written. The tools print through them.
std::string printable(const std::string& text);
std::string terminal_safe(const std::string& text);

}  // namespace fatpte

#endif  // FATPTE_TEXT_HPP_
