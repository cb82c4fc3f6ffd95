// The loader's JSON reader (common/json.hpp).
#include "common/json.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <utility>

namespace fatpte {
namespace json {
namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : t_(text), source_(source) {}

  Status parse(Value& out) {
    FATPTE_RETURN_IF_ERROR(value(out, 0));
    ws();
    if (p_ != t_.size()) return bad("unexpected text after the JSON value");
    return Status();
  }

 private:
  void ws() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) ++p_;
  }

  Status bad(const char* what) const {
    return fail(Error::INVALID_ARGUMENT, p_, "", "%s is not valid JSON at byte %zu: %s", source_.c_str(), p_, what);
  }

  bool word(const char* w) {
    const std::size_t n = std::strlen(w);
    if (t_.compare(p_, n, w) != 0) return false;
    p_ += n;
    return true;
  }

  Status value(Value& v, int depth) {
    if (depth >= kMaxDepth) return bad("nested too deeply");
    ws();
    if (p_ >= t_.size()) return bad("unexpected end");
    v.offset = p_;
    const char c = t_[p_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v.kind = Value::kString;
      return string(v.text);
    }
    if (c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I') return number(v);
    if (word("true") || word("false")) {
      v.kind = Value::kBool;
      v.b = t_[v.offset] == 't';
      return Status();
    }
    if (word("null")) return Status();
    return bad("unexpected character");
  }

  Status object(Value& v, int depth) {
    v.kind = Value::kObject;
    std::set<std::string> seen;  // not a scan of the members: an object may hold many keys
    ++p_;
    ws();
    if (p_ < t_.size() && t_[p_] == '}') {
      ++p_;
      return Status();
    }
    for (;;) {
      ws();
      if (p_ >= t_.size() || t_[p_] != '"') return bad("expected a string key");
      std::string key;
      FATPTE_RETURN_IF_ERROR(string(key));
      if (!seen.insert(key).second) return bad(("the key \"" + key + "\" appears twice").c_str());
      ws();
      if (p_ >= t_.size() || t_[p_] != ':') return bad("expected ':'");
      ++p_;
      Value member;
      FATPTE_RETURN_IF_ERROR(value(member, depth + 1));
      v.members.emplace_back(std::move(key), std::move(member));
      ws();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == '}') {
        ++p_;
        return Status();
      }
      return bad("expected ',' or '}'");
    }
  }

  Status array(Value& v, int depth) {
    v.kind = Value::kArray;
    ++p_;
    ws();
    if (p_ < t_.size() && t_[p_] == ']') {
      ++p_;
      return Status();
    }
    for (;;) {
      v.items.emplace_back();
      FATPTE_RETURN_IF_ERROR(value(v.items.back(), depth + 1));
      ws();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == ']') {
        ++p_;
        return Status();
      }
      return bad("expected ',' or ']'");
    }
  }

  static void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  Status hex4(std::uint32_t& out) {
    if (t_.size() - p_ < 4) return bad("a \\u escape needs four hex digits");
    out = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = t_[p_++];
      out <<= 4;
      if (h >= '0' && h <= '9') out |= static_cast<std::uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') out |= static_cast<std::uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') out |= static_cast<std::uint32_t>(h - 'A' + 10);
      else return bad("a \\u escape needs four hex digits");
    }
    return Status();
  }

  Status string(std::string& out) {
    ++p_;  // the opening quote
    for (;;) {
      if (p_ >= t_.size()) return bad("a string is not closed");
      const unsigned char c = static_cast<unsigned char>(t_[p_]);
      if (c == '"') {
        ++p_;
        return Status();
      }
      if (c < 0x20) return bad("a control character inside a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        ++p_;
        continue;
      }
      if (++p_ >= t_.size()) return bad("a string ends inside an escape");
      const char e = t_[p_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = 0;
          FATPTE_RETURN_IF_ERROR(hex4(cp));
          if (cp >= 0xD800 && cp <= 0xDBFF && t_.compare(p_, 2, "\\u") == 0) {
            p_ += 2;
            std::uint32_t low = 0;
            FATPTE_RETURN_IF_ERROR(hex4(low));
            if (low < 0xDC00 || low > 0xDFFF) return bad("a lone surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            return bad("a lone surrogate in a \\u escape");
          }
          put_utf8(out, cp);
          break;
        }
        default:
          return bad("an unknown escape in a string");
      }
    }
  }

  Status number(Value& v) {
    const std::size_t start = p_;
    v.kind = Value::kNumber;
    if (word("NaN") || word("Infinity") || word("-Infinity")) {
      v.text = t_.substr(start, p_ - start);
      return Status();
    }
    if (t_[p_] == '-') ++p_;
    const std::size_t digits = p_;
    while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
    if (p_ == digits) return bad("a number without digits");
    if (p_ - digits > 1 && t_[digits] == '0') return bad("a number with a leading zero");
    if (p_ < t_.size() && t_[p_] == '.') {
      const std::size_t dot = ++p_;
      while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
      if (p_ == dot) return bad("a number without digits after '.'");
    }
    if (p_ < t_.size() && (t_[p_] == 'e' || t_[p_] == 'E')) {
      ++p_;
      if (p_ < t_.size() && (t_[p_] == '+' || t_[p_] == '-')) ++p_;
      const std::size_t exp = p_;
      while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
      if (p_ == exp) return bad("a number without exponent digits");
    }
    v.text = t_.substr(start, p_ - start);
    return Status();
  }

  const std::string& t_;
  const std::string& source_;
  std::size_t p_ = 0;
};

Status not_a(const Value& v, const std::string& field, const char* what) {
  return fail(Error::INVALID_ARGUMENT, kNoOffset, field, "%s must be %s, not %s", field.c_str(), what,
              v.kind == Value::kNumber ? v.text.c_str() : "a non-number");
}

bool is_integer_text(const std::string& t) {
  return t.find_first_of(".eEIN") == std::string::npos;
}

}  // namespace

const Value* Value::find(const std::string& key) const {
  for (const auto& m : members) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

Result<Value> parse(const std::string& text, const std::string& source) {
  Value v;
  Parser p(text, source);
  Status s = p.parse(v);
  if (!s.ok()) return s;
  return v;
}

Result<double> to_double(const Value& v, const std::string& field) {
  if (v.kind != Value::kNumber) return not_a(v, field, "a number");
  if (v.text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (v.text == "Infinity") return std::numeric_limits<double>::infinity();
  if (v.text == "-Infinity") return -std::numeric_limits<double>::infinity();
  // strtod of a JSON number is exact to the nearest double; overflow gives +-HUGE_VAL, which is
  // what Python's float() gives too (inf).
  return std::strtod(v.text.c_str(), nullptr);
}

Result<std::int64_t> to_int64(const Value& v, const std::string& field) {
  if (v.kind != Value::kNumber || !is_integer_text(v.text)) return not_a(v, field, "an integer");
  errno = 0;
  const long long n = std::strtoll(v.text.c_str(), nullptr, 10);
  if (errno == ERANGE) return not_a(v, field, "an integer that fits 64 bits");
  return static_cast<std::int64_t>(n);
}

Result<std::uint64_t> to_uint64(const Value& v, const std::string& field) {
  if (v.kind != Value::kNumber || !is_integer_text(v.text) || v.text[0] == '-') {
    return not_a(v, field, "a non-negative integer");
  }
  errno = 0;
  const unsigned long long n = std::strtoull(v.text.c_str(), nullptr, 10);
  if (errno == ERANGE) return not_a(v, field, "an integer that fits 64 bits");
  return static_cast<std::uint64_t>(n);
}

Result<std::string> read_file(const std::string& path, std::uint64_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(Error::IO_ERROR, kNoOffset, "", "cannot read %s: %s", path.c_str(), std::strerror(errno));
  }
  // Read straight into the string, sized from fstat (a pipe or /proc file reports 0 and grows
  // it): a large buffer on the stack cost a page fault per 4 KiB before the first byte was read.
  struct stat sb;
  std::string out;
  out.resize(fstat(fd, &sb) == 0 && sb.st_size > 0 ? static_cast<std::size_t>(std::min<std::uint64_t>(
                                                         static_cast<std::uint64_t>(sb.st_size) + 1, limit + 1))
                                                   : 4096);
  std::size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      if (out.size() > limit) break;
      out.resize(std::min<std::uint64_t>(out.size() * 2, limit + 1));
    }
    const ssize_t n = ::read(fd, &out[used], out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return fail(Error::IO_ERROR, kNoOffset, "", "cannot read %s: %s", path.c_str(), std::strerror(err));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(used);
  if (used > limit) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "", "%s is larger than the limit of %llu bytes", path.c_str(),
                static_cast<unsigned long long>(limit));
  }
  return out;
}

}  // namespace json
}  // namespace fatpte
