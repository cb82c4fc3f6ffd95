// The loader's one JSON parser (RFC 8259), strict and bounded, configured by Options for each
// document it reads: device profiles (device/profile.cpp), signature bundles and statements
// (signature/bundle.cpp), calls.json (value/tensor.cpp) and the backend map (run/dispatch.cpp).
// Each of those maps the parsed Document to its own typed record, with its own error codes and
// field paths; this file only decides what is JSON.
//
// Always: duplicate keys refused (two readers could otherwise see different values), a control
// character in a string refused, depth bounded, no exception. Numbers keep their text, so a
// mapper converts each to the type it needs without a detour through double (int64 and uint64
// values stay exact). A Document is flat: 16 bytes a value plus one copy of its strings and
// numbers, so memory is linear in the text with a small constant; a document read before anything
// vouches for it (a signature bundle) is also bounded in values (Options::max_values), counted as
// they are read, so a refused one costs no more than the text scanned up to the refusal.
//
// Why not a library (all four are Debian packages): nlohmann/json and simdjson accept duplicate
// keys (one wins), RapidJSON keeps both and is unmaintained since 2016, jsoncpp can refuse them but
// turns numbers into int64/uint64/double (a big integer loses its text) and is a shared library to
// relocate at start-up; all four refuse the lone surrogate escapes Python's profile reader keeps,
// and only RapidJSON reads the NaN/Infinity calls.json holds (`json.dumps` writes them).
#ifndef FATPTE_SRC_COMMON_JSON_HPP_
#define FATPTE_SRC_COMMON_JSON_HPP_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace json {

enum class Kind : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

// What a document may hold beyond RFC 8259, and its bounds.
struct Options {
  std::size_t max_bytes = 0xFFFFFFFEu;  // a longer document is refused before it is read (at most 4 GiB - 2)
  bool utf8 = false;                     // the whole document must be UTF-8 (checked first, as Python decodes)
  int max_depth = 64;                    // levels of nesting, the root being level 1
  bool depth_counts_scalars = true;      // false: only arrays and objects count (a scalar may be one deeper)
  std::size_t max_values = 0;            // the most values (keys are not values) it may hold (0: any)
  bool nan_infinity = false;             // NaN, Infinity and -Infinity are numbers (Python's json extension)
  bool fractions = true;                 // false: a fraction or an exponent is refused (integers only)
  bool int64 = false;                    // an integer outside -2^63 .. 2^63-1 is refused
  std::size_t max_integer_digits = 0;    // an integer of more digits is refused (0: any)
  bool lone_surrogates = false;          // true: a lone \ud800..\udfff escape is kept as its three bytes
                                         // (a Python str holds it); false: refused
};

class Document;

// A value of a Document (valid while the Document lives), or no value (a missing member).
class Value {
 public:
  Value() = default;
  explicit operator bool() const noexcept { return doc_ != nullptr; }
  Kind kind() const noexcept;  // kNull for no value too: test with `if (v)` or is()
  bool is(Kind k) const noexcept { return doc_ != nullptr && kind() == k; }
  bool boolean() const noexcept;           // true for `true`
  std::string_view text() const noexcept;  // a string's value; a number as written; "" otherwise
  std::uint64_t offset() const noexcept;   // where the value starts in the document
  std::size_t size() const noexcept;       // an array's items or an object's members
  Value find(std::string_view key) const noexcept;  // an object's member `key`, or no value

  struct Member;
  class Iterator;
  // The items of an array, in order (`for (json::Value item : v.items())`).
  struct Items {
    Iterator begin() const noexcept;
    Iterator end() const noexcept;
    const Document* doc;
    std::uint32_t first, last;
  };
  Items items() const noexcept;
  // The members of an object, in document order.
  struct Members {
    class Iterator;
    Iterator begin() const noexcept;
    Iterator end() const noexcept;
    const Document* doc;
    std::uint32_t first, last;
  };
  Members members() const noexcept;

 private:
  friend class Document;
  Value(const Document* doc, std::uint32_t at) : doc_(doc), at_(at) {}
  const Document* doc_ = nullptr;
  std::uint32_t at_ = 0;
};

struct Value::Member {
  std::string_view key;
  Value value;
};

class Value::Iterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = Value;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = Value;
  Iterator(const Document* doc, std::uint32_t at) : doc_(doc), at_(at) {}
  Value operator*() const noexcept { return Value(doc_, at_); }
  Iterator& operator++() noexcept;
  Iterator operator++(int) noexcept {
    Iterator was = *this;
    ++*this;
    return was;
  }
  bool operator==(const Iterator& o) const noexcept { return at_ == o.at_; }
  bool operator!=(const Iterator& o) const noexcept { return at_ != o.at_; }

 private:
  const Document* doc_;
  std::uint32_t at_;
};

class Value::Members::Iterator {
 public:
  Iterator(const Document* doc, std::uint32_t at) : doc_(doc), at_(at) {}
  Member operator*() const noexcept;
  Iterator& operator++() noexcept;
  bool operator!=(const Iterator& o) const noexcept { return at_ != o.at_; }

 private:
  const Document* doc_;
  std::uint32_t at_;  // the member's key
};

// A parsed document: its values in document order, each container followed by what it holds.
class Document {
 public:
  Value root() const noexcept { return Value(this, 0); }
  // The bytes it holds (values and text): what a document can make it cost.
  std::size_t memory() const noexcept { return nodes_.capacity() * sizeof(Node) + text_.capacity(); }

  struct Node {
    std::uint32_t offset;  // in the document
    std::uint32_t a;       // string, number: start in text_; array, object: size()
    std::uint32_t b;       // string, number: length; array, object: the index past what it holds
    Kind kind;
    bool boolean;
  };

 private:
  friend class Value;
  friend Result<Document> parse(std::string_view text, const Options& options);
  std::uint32_t next(std::uint32_t at) const noexcept;  // the value after `at` and what it holds
  std::vector<Node> nodes_;
  std::string text_;  // the strings and numbers, decoded, back to back
};

inline Kind Value::kind() const noexcept { return doc_ == nullptr ? Kind::kNull : doc_->nodes_[at_].kind; }

inline std::string_view Value::text() const noexcept {
  if (!is(Kind::kString) && !is(Kind::kNumber)) return {};
  const Document::Node& n = doc_->nodes_[at_];
  return std::string_view(doc_->text_.data() + n.a, n.b);
}

// Parse `text` under `options`; INVALID_ARGUMENT at the byte offset of the first problem, with
// the field empty and the message saying what it is ("a number with a leading zero"). Each
// reader words and places the error for its own document.
Result<Document> parse(std::string_view text, const Options& options);

// The loader's own inputs (calls.json, the backend map): Python's json extensions NaN, Infinity
// and -Infinity are numbers, 64 levels, UTF-8, integers of at most 4300 digits (what Python's
// calls.json reader takes: specs/vectors/calls/); errors read "SOURCE is not valid JSON at byte
// N: what".
Result<Document> parse(std::string_view text, const std::string& source);

// A number's integer: true when its text writes one (no fraction, exponent, NaN or Infinity)
// whose magnitude fits 64 bits.
bool integer(const Value& v, bool& negative, std::uint64_t& magnitude) noexcept;

// A number's value; INVALID_ARGUMENT naming `field` when it is not a number of that kind or
// does not fit.
Result<double> to_double(const Value& v, const std::string& field);
Result<std::int64_t> to_int64(const Value& v, const std::string& field);
Result<std::uint64_t> to_uint64(const Value& v, const std::string& field);

// The bytes of the regular file `path`, at most `limit`: IO_ERROR when it cannot be read,
// NOT_A_FILE for a directory, device, FIFO or socket (opened without blocking, so a FIFO never
// waits for a writer), INVALID_ARGUMENT past `limit`. `what` names the file in messages ("the
// device profile").
Result<std::string> read_file(const std::string& path, std::uint64_t limit, const char* what = "the file");
// The first `limit` bytes of the regular file `path` (errors as read_file) and whether it holds
// more, for a reader that looks at the start of a file only (a trusted key, as Python reads it).
Result<std::string> read_head(const std::string& path, std::uint64_t limit, const char* what, bool& more);

}  // namespace json
}  // namespace fatpte

#endif  // FATPTE_SRC_COMMON_JSON_HPP_
