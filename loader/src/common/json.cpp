// The loader's JSON parser (common/json.hpp).
#include "common/json.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "common/text.hpp"

namespace fatpte {
namespace json {
namespace {

using Node = Document::Node;

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

int hex_value(char h) noexcept {
  if (h >= '0' && h <= '9') return h - '0';
  if (h >= 'a' && h <= 'f') return h - 'a' + 10;
  if (h >= 'A' && h <= 'F') return h - 'A' + 10;
  return -1;
}

void put_utf8(std::string& out, std::uint32_t cp) {
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

// One pass over the text, each value a node. Memory: the nodes and text, plus the keys of the
// objects open at the moment (for the duplicate check), released when each object closes.
class Parser {
 public:
  Parser(std::string_view text, const Options& options) : t_(text), o_(options) {}

  Status run() {
    if (t_.size() > o_.max_bytes || t_.size() > 0xFFFFFFFEu) {
      return fail(Error::INVALID_ARGUMENT, kNoOffset, "", "the document is %zu bytes, above the limit of %zu",
                  t_.size(), std::min<std::size_t>(o_.max_bytes, 0xFFFFFFFEu));
    }
    if (o_.utf8) {
      const std::int64_t at = detail::first_invalid_utf8(reinterpret_cast<const std::uint8_t*>(t_.data()), t_.size());
      if (at >= 0) {
        p_ = static_cast<std::size_t>(at);
        return bad("not valid UTF-8");
      }
    }
    FATPTE_RETURN_IF_ERROR(value(1));
    ws();
    if (p_ != t_.size()) return bad("unexpected text after the JSON value");
    return Status();
  }

  std::vector<Node> nodes;
  std::string text;

 private:
  struct Key {
    std::uint32_t start, size;  // in text
    std::uint32_t offset;       // in the document
  };

  Status bad(const char* what) const { return fail(Error::INVALID_ARGUMENT, p_, "", "%s", what); }
  static Status lone(std::size_t escape) {
    return fail(Error::INVALID_ARGUMENT, escape, "", "a lone surrogate in a \\u escape");
  }

  void ws() noexcept {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) ++p_;
  }

  bool eat(char c) noexcept {
    if (p_ >= t_.size() || t_[p_] != c) return false;
    ++p_;
    return true;
  }

  bool word(std::string_view w) noexcept {
    if (t_.compare(p_, w.size(), w) != 0) return false;
    p_ += w.size();
    return true;
  }

  std::uint32_t add(Kind kind, std::size_t offset) {
    nodes.push_back(Node{static_cast<std::uint32_t>(offset), 0, 0, kind, false});
    return static_cast<std::uint32_t>(nodes.size() - 1);
  }

  // `level`: 1 for the root.
  Status value(int level) {
    ws();
    if (p_ >= t_.size()) return bad("unexpected end");
    const char c = t_[p_];
    const bool container = c == '{' || c == '[';
    if (level > o_.max_depth && (container || o_.depth_counts_scalars)) return bad("nested too deeply");
    if (o_.max_values != 0 && nodes.size() - keys_counted_ >= o_.max_values) {
      return fail(Error::INVALID_ARGUMENT, p_, "", "the document holds more than %zu values", o_.max_values);
    }
    if (c == '{') return object(level);
    if (c == '[') return array(level);
    if (c == '"') {
      const std::uint32_t at = add(Kind::kString, p_);
      const std::size_t start = text.size();
      FATPTE_RETURN_IF_ERROR(string(text));
      nodes[at].a = static_cast<std::uint32_t>(start);
      nodes[at].b = static_cast<std::uint32_t>(text.size() - start);
      return Status();
    }
    if (c == '-' || is_digit(c) || (o_.nan_infinity && (c == 'N' || c == 'I'))) return number();
    const std::size_t start = p_;
    Kind kind;
    if (word("true") || word("false")) {
      kind = Kind::kBool;
    } else if (word("null")) {
      kind = Kind::kNull;
    } else {
      return bad("unexpected character");
    }
    nodes[add(kind, start)].boolean = t_[start] == 't';
    return Status();
  }

  Status number() {
    const std::size_t start = p_;
    if (!(o_.nan_infinity && (word("NaN") || word("Infinity") || word("-Infinity")))) {
      const bool negative = t_[p_] == '-';
      if (negative) ++p_;
      const std::size_t digits = p_;
      while (p_ < t_.size() && is_digit(t_[p_])) ++p_;
      const std::size_t count = p_ - digits;
      if (count == 0) return bad("a number without digits");
      if (count > 1 && t_[digits] == '0') {
        p_ = digits + 1;  // Python reads the 0 and stops: what follows is unexpected text
        return bad("a number with a leading zero");
      }
      const std::size_t fraction = p_;
      bool integral = true;
      if (p_ < t_.size() && t_[p_] == '.') {
        integral = false;
        const std::size_t dot = ++p_;
        while (p_ < t_.size() && is_digit(t_[p_])) ++p_;
        if (p_ == dot) return bad("a number without digits after '.'");
      }
      if (p_ < t_.size() && (t_[p_] == 'e' || t_[p_] == 'E')) {
        integral = false;
        ++p_;
        if (p_ < t_.size() && (t_[p_] == '+' || t_[p_] == '-')) ++p_;
        const std::size_t exp = p_;
        while (p_ < t_.size() && is_digit(t_[p_])) ++p_;
        if (p_ == exp) return bad("a number without exponent digits");
      }
      if (!integral && !o_.fractions) {
        p_ = fraction;
        return bad("a fraction or an exponent: numbers here are integers");
      }
      if (integral && o_.max_integer_digits != 0 && count > o_.max_integer_digits) {
        return fail(Error::INVALID_ARGUMENT, start, "", "an integer of more than %zu digits", o_.max_integer_digits);
      }
      if (integral && o_.int64) {
        std::uint64_t magnitude = 0;
        bool fits = count <= 20;
        for (std::size_t k = digits; fits && k < digits + count; ++k) {
          const std::uint64_t d = static_cast<std::uint64_t>(t_[k] - '0');
          fits = magnitude <= (std::numeric_limits<std::uint64_t>::max() - d) / 10;
          magnitude = magnitude * 10 + d;
        }
        if (!fits || magnitude > (std::uint64_t{1} << 63) - (negative ? 0 : 1)) {
          p_ = start;
          return bad("an integer outside -2^63 .. 2^63-1");
        }
      }
    }
    const std::uint32_t at = add(Kind::kNumber, start);
    nodes[at].a = static_cast<std::uint32_t>(text.size());
    nodes[at].b = static_cast<std::uint32_t>(p_ - start);
    text.append(t_, start, p_ - start);
    return Status();
  }

  Status hex4(std::uint32_t& out) {
    if (t_.size() - p_ < 4) return bad("a \\u escape needs four hex digits");
    out = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = hex_value(t_[p_]);
      if (h < 0) return bad("a \\u escape needs four hex digits");
      out = out << 4 | static_cast<std::uint32_t>(h);
      ++p_;
    }
    return Status();
  }

  // A string from its opening quote; its value is appended to `out`.
  Status string(std::string& out) {
    ++p_;
    for (;;) {
      const std::size_t run = p_;
      while (p_ < t_.size() && t_[p_] != '"' && t_[p_] != '\\' && static_cast<unsigned char>(t_[p_]) >= 0x20) ++p_;
      out.append(t_, run, p_ - run);
      if (p_ >= t_.size()) return bad("a string is not closed");
      if (eat('"')) return Status();
      const std::size_t escape = p_;  // a lone surrogate is reported at its backslash
      if (!eat('\\')) return bad("a control character inside a string");
      if (p_ >= t_.size()) return bad("a string ends inside an escape");
      const char e = t_[p_++];
      char plain = 0;
      switch (e) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': break;
        default: return bad("an unknown escape in a string");
      }
      if (e != 'u') {
        out += plain;
        continue;
      }
      std::uint32_t cp = 0;
      FATPTE_RETURN_IF_ERROR(hex4(cp));
      if (cp >= 0xD800 && cp <= 0xDBFF && t_.compare(p_, 2, "\\u") == 0) {
        // A pair is one character, as in Python. Python keeps a high surrogate whose next escape
        // is not a low one as it is; so do lone_surrogates readers.
        const std::size_t at = p_;
        p_ += 2;
        std::uint32_t low = 0;
        const Status s = hex4(low);
        if (s.ok() && low >= 0xDC00 && low <= 0xDFFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (o_.lone_surrogates) {
          p_ = at;
        } else {
          return s.ok() ? lone(escape) : s;
        }
      } else if (cp >= 0xD800 && cp <= 0xDFFF && !o_.lone_surrogates) {
        return lone(escape);
      }
      put_utf8(out, cp);
    }
  }

  Status object(int level) {
    const std::uint32_t at = add(Kind::kObject, p_);
    const std::size_t first_key = keys_.size();
    std::uint32_t count = 0;
    ++p_;
    ws();
    if (!eat('}')) {
      do {
        ws();
        if (p_ >= t_.size() || t_[p_] != '"') return bad("expected a string key");
        const std::uint32_t k = add(Kind::kString, p_);  // a key: a node, not a value (max_values)
        ++keys_counted_;
        const std::size_t start = text.size();
        FATPTE_RETURN_IF_ERROR(string(text));
        nodes[k].a = static_cast<std::uint32_t>(start);
        nodes[k].b = static_cast<std::uint32_t>(text.size() - start);
        keys_.push_back(Key{nodes[k].a, nodes[k].b, nodes[k].offset});
        ws();
        if (!eat(':')) return bad("expected ':'");
        FATPTE_RETURN_IF_ERROR(value(level + 1));
        ++count;
        ws();
      } while (eat(','));
      if (!eat('}')) return bad("expected ',' or '}'");
    }
    FATPTE_RETURN_IF_ERROR(unique_keys(first_key));
    keys_.resize(first_key);
    nodes[at].a = count;
    nodes[at].b = static_cast<std::uint32_t>(nodes.size());
    return Status();
  }

  // The keys of the object that just closed, from `first`: a key twice is refused at its second
  // place. Checked when the object closes, as Python's object_pairs_hook does: sorting, not a set
  // of strings, so an object of a million keys costs 12 bytes a key.
  Status unique_keys(std::size_t first) {
    const std::size_t n = keys_.size() - first;
    if (n < 2) return Status();
    const auto text_of = [this](const Key& k) { return std::string_view(text.data() + k.start, k.size); };
    std::sort(keys_.begin() + static_cast<std::ptrdiff_t>(first), keys_.end(), [&](const Key& a, const Key& b) {
      const int c = text_of(a).compare(text_of(b));
      return c != 0 ? c < 0 : a.offset < b.offset;
    });
    const Key* twice = nullptr;  // the second place of the key seen twice first
    for (std::size_t k = first + 1; k < keys_.size(); ++k) {
      if (text_of(keys_[k]) == text_of(keys_[k - 1]) && (k < first + 2 || text_of(keys_[k]) != text_of(keys_[k - 2])) &&
          (twice == nullptr || keys_[k].offset < twice->offset)) {
        twice = &keys_[k];
      }
    }
    if (twice == nullptr) return Status();
    return fail(Error::INVALID_ARGUMENT, twice->offset, "", "the key \"%s\" appears twice",
                std::string(text_of(*twice)).c_str());
  }

  Status array(int level) {
    const std::uint32_t at = add(Kind::kArray, p_);
    std::uint32_t count = 0;
    ++p_;
    ws();
    if (!eat(']')) {
      do {
        FATPTE_RETURN_IF_ERROR(value(level + 1));
        ++count;
        ws();
      } while (eat(','));
      if (!eat(']')) return bad("expected ',' or ']'");
    }
    nodes[at].a = count;
    nodes[at].b = static_cast<std::uint32_t>(nodes.size());
    return Status();
  }

  std::string_view t_;
  const Options& o_;
  std::size_t p_ = 0;
  std::size_t keys_counted_ = 0;  // nodes that are keys, for max_values
  std::vector<Key> keys_;   // the keys of the objects open, for the duplicate check
};

// The number is quoted as written, clipped (errors.clipped): an integer of thousands of digits
// does not make a message of thousands of bytes.
Status not_a(const Value& v, const std::string& field, const char* what) {
  return fail(Error::INVALID_ARGUMENT, kNoOffset, field, "%s must be %s, not %s", field.c_str(), what,
              v.is(Kind::kNumber) ? detail::clipped(std::string(v.text())).c_str() : "a non-number");
}

Result<std::string> read_fd(int fd, const std::string& path, std::uint64_t limit, const char* what) {
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    ::close(fd);
    return fail(Error::NOT_A_FILE, kNoOffset, "", "%s %s is not a regular file (a directory, device, FIFO or socket)",
                what, path.c_str());
  }
  // Read straight into the string, sized from fstat (a /proc file reports 0 and grows it): a
  // large buffer on the stack cost a page fault per 4 KiB before the first byte was read.
  std::string out;
  out.resize(sb.st_size > 0 ? static_cast<std::size_t>(std::min<std::uint64_t>(
                                  static_cast<std::uint64_t>(sb.st_size) + 1, limit + 1))
                            : std::min<std::uint64_t>(4096, limit + 1));
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
      return fail(Error::IO_ERROR, kNoOffset, "", "cannot read %s %s: %s", what, path.c_str(), std::strerror(err));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(used);
  return out;
}

}  // namespace

bool Value::boolean() const noexcept { return doc_ != nullptr && doc_->nodes_[at_].boolean; }

std::uint64_t Value::offset() const noexcept { return doc_ == nullptr ? kNoOffset : doc_->nodes_[at_].offset; }

std::size_t Value::size() const noexcept { return is(Kind::kArray) || is(Kind::kObject) ? doc_->nodes_[at_].a : 0; }

Value Value::find(std::string_view key) const noexcept {
  if (!is(Kind::kObject)) return Value();
  const std::vector<Node>& nodes = doc_->nodes_;
  for (std::uint32_t k = at_ + 1; k < nodes[at_].b; k = doc_->next(k + 1)) {
    if (nodes[k].b == key.size() && key.compare(0, key.size(), doc_->text_.data() + nodes[k].a, nodes[k].b) == 0) {
      return Value(doc_, k + 1);
    }
  }
  return Value();
}

Value::Items Value::items() const noexcept {
  if (!is(Kind::kArray)) return Items{doc_, 0, 0};
  return Items{doc_, at_ + 1, doc_->nodes_[at_].b};
}

Value::Members Value::members() const noexcept {
  if (!is(Kind::kObject)) return Members{doc_, 0, 0};
  return Members{doc_, at_ + 1, doc_->nodes_[at_].b};
}

Value::Iterator Value::Items::begin() const noexcept { return Iterator(doc, first); }
Value::Iterator Value::Items::end() const noexcept { return Iterator(doc, last); }
Value::Iterator& Value::Iterator::operator++() noexcept {
  at_ = doc_->next(at_);
  return *this;
}

Value::Members::Iterator Value::Members::begin() const noexcept { return Iterator(doc, first); }
Value::Members::Iterator Value::Members::end() const noexcept { return Iterator(doc, last); }
Value::Member Value::Members::Iterator::operator*() const noexcept {
  return Member{Value(doc_, at_).text(), Value(doc_, at_ + 1)};
}
Value::Members::Iterator& Value::Members::Iterator::operator++() noexcept {
  at_ = doc_->next(at_ + 1);
  return *this;
}

std::uint32_t Document::next(std::uint32_t at) const noexcept {
  const Node& n = nodes_[at];
  return n.kind == Kind::kArray || n.kind == Kind::kObject ? n.b : at + 1;
}

Result<Document> parse(std::string_view text, const Options& options) {
  Parser p(text, options);
  FATPTE_RETURN_IF_ERROR(p.run());
  Document d;
  d.nodes_ = std::move(p.nodes);
  d.text_ = std::move(p.text);
  return d;
}

Result<Document> parse(std::string_view text, const std::string& source) {
  Options o;
  o.nan_infinity = true;
  // As Python reads calls.json (fatpte/ops/golden.py CALLS_JSON): the whole text UTF-8 (Python
  // decodes it first), integers of at most 4300 digits (Python's int() limit); issue 42 P2.
  o.utf8 = true;
  o.max_integer_digits = 4300;
  Result<Document> d = parse(text, o);
  if (d.ok()) return d;
  const Status& s = d.error();
  if (s.offset() == kNoOffset) return fail(s.code(), kNoOffset, "", "%s: %s", source.c_str(), s.message().c_str());
  return fail(s.code(), s.offset(), "", "%s is not valid JSON at byte %llu: %s", source.c_str(),
              static_cast<unsigned long long>(s.offset()), s.message().c_str());
}

bool integer(const Value& v, bool& negative, std::uint64_t& magnitude) noexcept {
  const std::string_view t = v.text();
  if (!v.is(Kind::kNumber) || t.find_first_of(".eEIN") != std::string_view::npos) return false;
  negative = t[0] == '-';
  magnitude = 0;
  for (std::size_t k = negative ? 1 : 0; k < t.size(); ++k) {
    const std::uint64_t d = static_cast<std::uint64_t>(t[k] - '0');
    if (magnitude > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    magnitude = magnitude * 10 + d;
  }
  return true;
}

Result<double> to_double(const Value& v, const std::string& field) {
  if (!v.is(Kind::kNumber)) return not_a(v, field, "a number");
  const std::string t(v.text());
  if (t == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (t == "Infinity") return std::numeric_limits<double>::infinity();
  if (t == "-Infinity") return -std::numeric_limits<double>::infinity();
  // strtod of a JSON number is exact to the nearest double; overflow gives +-HUGE_VAL, which is
  // what Python's float() gives too (inf).
  return std::strtod(t.c_str(), nullptr);
}

Result<std::int64_t> to_int64(const Value& v, const std::string& field) {
  bool negative = false;
  std::uint64_t m = 0;
  if (!v.is(Kind::kNumber) || v.text().find_first_of(".eEIN") != std::string_view::npos) {
    return not_a(v, field, "an integer");
  }
  if (!integer(v, negative, m) || m > (std::uint64_t{1} << 63) - (negative ? 0 : 1)) {
    return not_a(v, field, "an integer that fits 64 bits");
  }
  return negative ? static_cast<std::int64_t>(0 - m) : static_cast<std::int64_t>(m);
}

Result<std::uint64_t> to_uint64(const Value& v, const std::string& field) {
  bool negative = false;
  std::uint64_t m = 0;
  if (!v.is(Kind::kNumber) || v.text().find_first_of(".eEIN") != std::string_view::npos || v.text()[0] == '-') {
    return not_a(v, field, "a non-negative integer");
  }
  if (!integer(v, negative, m)) return not_a(v, field, "an integer that fits 64 bits");
  return m;
}

Result<std::string> read_head(const std::string& path, std::uint64_t limit, const char* what, bool& more) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return fail(Error::IO_ERROR, kNoOffset, "", "cannot read %s %s: %s", what, path.c_str(), std::strerror(errno));
  }
  Result<std::string> r = read_fd(fd, path, limit, what);
  if (!r.ok()) return r;
  std::string out = std::move(r).value();
  more = out.size() > limit;
  if (more) out.resize(static_cast<std::size_t>(limit));
  return out;
}

Result<std::string> read_file(const std::string& path, std::uint64_t limit, const char* what) {
  bool more = false;
  Result<std::string> r = read_head(path, limit, what, more);
  if (r.ok() && more) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "", "%s %s is larger than the limit of %llu bytes", what,
                path.c_str(), static_cast<unsigned long long>(limit));
  }
  return r;
}

}  // namespace json
}  // namespace fatpte
