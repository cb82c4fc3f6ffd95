// A small strict JSON reader for the loader's own inputs (calls.json, the backend library map).
// Numbers keep their text, so a caller converts each to the type it needs without a detour
// through double (int64 and uint64 values stay exact). Python's json extensions NaN, Infinity and
// -Infinity are accepted as numbers, because `json.dumps` writes them for float tensors.
//
// Device profiles have their own reader (device/profile.cpp), which must report exactly what
// Python's reader reports; this one only has to be strict and bounded.
#ifndef FATPTE_SRC_COMMON_JSON_HPP_
#define FATPTE_SRC_COMMON_JSON_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace json {

struct Value {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool b = false;
  std::string text;  // a string's value, or a number's text as written
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;  // in document order; duplicate keys refused
  std::uint64_t offset = 0;  // where the value starts in the document

  // The member `key`, or nullptr.
  const Value* find(const std::string& key) const;
};

// Nesting deeper than this is refused: the loader's documents need fewer than ten levels.
inline constexpr int kMaxDepth = 64;

// Parse `text` (named `source` in errors); INVALID_ARGUMENT at the byte offset of the problem.
Result<Value> parse(const std::string& text, const std::string& source);

// A number's value; INVALID_ARGUMENT naming `field` when it is not a number of that kind or
// does not fit.
Result<double> to_double(const Value& v, const std::string& field);
Result<std::int64_t> to_int64(const Value& v, const std::string& field);
Result<std::uint64_t> to_uint64(const Value& v, const std::string& field);

// The file's bytes; IO_ERROR naming it when it cannot be read, INVALID_ARGUMENT past `limit`.
Result<std::string> read_file(const std::string& path, std::uint64_t limit);

}  // namespace json
}  // namespace fatpte

#endif  // FATPTE_SRC_COMMON_JSON_HPP_
