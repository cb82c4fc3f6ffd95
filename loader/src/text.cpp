// Decoding and checking of the fixed-size text fields (names, backend ids).
#include "text.hpp"

#include <cstdio>
#include <cstring>

#include "fatpte/format_generated.h"

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

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c >= 0x7F) {
          // DEL and every byte outside printable ASCII, as json.dumps does; a byte above 0x7f
          // stands for itself (the texts printed are ASCII by the rules of their fields).
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

bool valid_utf8(const std::uint8_t* p, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n;) {
    const std::uint8_t c = p[i];
    std::size_t len;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

}  // namespace detail
}  // namespace fatpte
