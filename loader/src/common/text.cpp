// Decoding and checking of the fixed-size text fields (names, backend ids).
#include "common/text.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "fatpte/format_generated.h"
#include "fatpte/format_generated.h"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"
#include "fatpte/text.hpp"

namespace fatpte {
namespace detail {
namespace {

bool is_id_byte(std::uint8_t b) noexcept {
  return b != 0 && std::memchr(format::kIdAlphabet, b, sizeof(format::kIdAlphabet) - 1) != nullptr;
}

void append_hex(std::string& out, std::uint8_t b) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "\\x%02x", b);
  out += buf;
}

}  // namespace

std::size_t text_length(const std::uint8_t* raw, std::size_t size) noexcept {
  const void* nul = std::memchr(raw, 0, size);
  return nul == nullptr ? size : static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - raw);
}

std::string decode_text(const std::uint8_t* raw, std::size_t size) {
  const std::size_t len = text_length(raw, size);
  std::string out;
  out.reserve(len);
  for (std::size_t i = 0; i < len; ++i) {
    if (raw[i] < 0x80) {
      out += static_cast<char>(raw[i]);
    } else {
      append_hex(out, raw[i]);
    }
  }
  return out;
}

std::string id_problem(const std::uint8_t* raw, std::size_t size) {
  const std::size_t len = text_length(raw, size);
  if (len == 0) return "is empty";
  for (std::size_t i = 0; i < len; ++i) {
    if (!is_id_byte(raw[i])) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "has the byte 0x%02x, outside [A-Za-z0-9_.-]", raw[i]);
      return buf;
    }
  }
  for (std::size_t i = len; i < size; ++i) {
    if (raw[i] != 0) return "has non-zero bytes after its terminating NUL";
  }
  return "";
}

std::int64_t first_invalid_utf8(const std::uint8_t* p, std::size_t n) noexcept {
  std::size_t i = 0;
  while (i < n) {
    const std::uint8_t c = p[i];
    std::size_t more = 0;
    std::uint8_t lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      more = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      more = 2;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      more = 3;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
      return static_cast<std::int64_t>(i);
    }
    if (more > n - i - 1) return static_cast<std::int64_t>(i);  // the sequence runs past the end
    for (std::size_t k = 1; k <= more; ++k) {
      const std::uint8_t t = p[i + k];
      if (t < (k == 1 ? lo : 0x80) || t > (k == 1 ? hi : 0xBF)) return static_cast<std::int64_t>(i);
    }
    i += more + 1;
  }
  return -1;
}

std::string escape_bytes(const std::uint8_t* raw, std::size_t size) {
  std::string out = "'";
  for (std::size_t i = 0; i < size; ++i) {
    if (raw[i] >= 0x20 && raw[i] < 0x7F && raw[i] != '\'' && raw[i] != '\\') {
      out += static_cast<char>(raw[i]);
    } else {
      append_hex(out, raw[i]);
    }
  }
  return out + "'";
}

namespace {

// The code point of the well-formed multi-byte UTF-8 sequence at s[i] (a byte >= 0x80) and its
// length, or length 0 when the bytes there are not one.
std::size_t utf8_at(const std::string& s, std::size_t i, std::uint32_t& cp) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(s.data()) + i;
  const std::size_t left = s.size() - i;
  const std::size_t n = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : 2;
  if (n > left || first_invalid_utf8(p, n) >= 0) return 0;
  cp = n == 2 ? p[0] & 0x1F : n == 3 ? p[0] & 0x0F : p[0] & 0x07;
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (p[k] & 0x3F);
  return n;
}

bool unsafe_above_ascii(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string escaped(const std::string& s, bool keep_newline_and_backslash) {
  std::string out;
  out.reserve(s.size());
  // Bytes that stand for themselves are copied a run at a time, not a character at a time: the
  // fat delegate escapes every name and reason it logs, in the middle of loading a program.
  std::size_t run = 0;  // where the run of bytes kept as they are began
  const auto end_run = [&](std::size_t at) { out.append(s, run, at - run); };
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<std::uint8_t>(s[i]);
    std::size_t n = 1;
    std::uint32_t cp = b;
    if (b >= 0x80) n = utf8_at(s, i, cp);
    if (n == 0) {
      end_run(i);
      append_hex(out, b);
      run = ++i;
      continue;
    }
    const bool kept = keep_newline_and_backslash && (b == '\n' || b == '\\');
    if (b < 0x80 ? (b < 0x20 || b == 0x5C || b == 0x7F) && !kept : unsafe_above_ascii(cp)) {
      end_run(i);
      char buf[12];
      std::snprintf(buf, sizeof buf, cp <= 0xFF ? "\\x%02x" : "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
      run = i + n;
    }
    i += n;
  }
  end_run(s.size());
  return out;
}

}  // namespace

std::string printable(const std::string& s) { return escaped(s, false); }

std::string terminal_safe(const std::string& s) { return escaped(s, true); }

std::string listed(const std::vector<std::string>& items, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < limit; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > limit) out += " and " + std::to_string(items.size() - limit) + " more";
  return out;
}

std::string clipped(const std::string& s, std::size_t limit) {
  if (s.size() <= limit) return printable(s);
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<std::uint8_t>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return printable(s.substr(0, cut)) + "...(" + std::to_string(s.size()) + " bytes)";
}

std::string quoted(const std::string& s, std::size_t limit) { return "'" + clipped(s, limit) + "'"; }

namespace {

void append_escape(std::string& out, std::uint32_t unit) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", unit);
  out += buf;
}

}  // namespace

std::string json_text(const std::string& text) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(text.data());
  const auto ascii = [](char ch) { return static_cast<unsigned char>(ch) < 0x80; };
  if (std::all_of(text.begin(), text.end(), ascii)) return json_quote(text);  // the common case
  if (!valid_utf8(p, text.size())) return json_quote(printable(text));
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    std::size_t run = i;
    while (run < text.size() && p[run] < 0x80) ++run;
    if (run > i) {  // ASCII as json_quote writes it, without its quotes
      const std::string quoted = json_quote(text.substr(i, run - i));
      out.append(quoted, 1, quoted.size() - 2);
      i = run;
      continue;
    }
    const std::uint8_t c = p[i];
    const int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    std::uint32_t cp = c & (0xFF >> (n + 1));
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (p[i + k] & 0x3F);
    i += static_cast<std::size_t>(n);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      append_escape(out, 0xD800 + (cp >> 10));
      append_escape(out, 0xDC00 + (cp & 0x3FF));
    } else {
      append_escape(out, cp);
    }
  }
  return out + "\"";
}

namespace {

// The bytes that stand for themselves in a JSON string as json.dumps writes it: printable ASCII
// but `"` and `\`. A table: the scan is a load and a test a byte (receipts quote dozens of texts).
struct PlainBytes {
  bool plain[256] = {};
  constexpr PlainBytes() {
    for (int c = 0x20; c < 0x7F; ++c) plain[c] = c != '"' && c != '\\';
  }
};
constexpr PlainBytes kPlain;

// `s` quoted as json_quote writes it, appended to `out`; with `ascii_only`, false (and `out` as it
// was) at the first byte above 0x7f, which json_text writes otherwise.
bool append_json_quote(std::string& out, std::string_view s, bool ascii_only) {
  const std::size_t mark = out.size();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  out += '"';
  for (std::size_t i = 0;;) {
    std::size_t run = i;  // the bytes from i on that stand for themselves
    while (run < n && kPlain.plain[p[run]]) ++run;
    out.append(s.data() + i, run - i);
    if (run == n) break;
    const unsigned char c = p[run];
    i = run + 1;
    switch (c) {
      case '"': out.append("\\\"", 2); break;
      case '\\': out.append("\\\\", 2); break;
      case '\n': out.append("\\n", 2); break;
      case '\r': out.append("\\r", 2); break;
      case '\t': out.append("\\t", 2); break;
      case '\b': out.append("\\b", 2); break;
      case '\f': out.append("\\f", 2); break;
      default: {
        if (ascii_only && c >= 0x80) {
          out.resize(mark);
          return false;
        }
        // DEL and every byte outside printable ASCII, as json.dumps does; a byte above 0x7f
        // stands for itself (the texts printed are ASCII by the rules of their fields).
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      }
    }
  }
  out += '"';
  return true;
}

}  // namespace

std::string json_quote(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  append_json_quote(out, s, false);
  return out;
}

void append_json_quoted(std::string& out, const std::string& s) { append_json_quote(out, s, false); }

void append_json_text(std::string& out, std::string_view text) {
  // ASCII, the common case, in one pass
  if (!append_json_quote(out, text, true)) out += json_text(std::string(text));
}

bool valid_utf8(const std::uint8_t* p, std::size_t n) noexcept { return first_invalid_utf8(p, n) < 0; }

}  // namespace detail
std::string printable(const std::string& text) { return detail::printable(text); }

std::string terminal_safe(const std::string& text) { return detail::terminal_safe(text); }

}  // namespace fatpte
