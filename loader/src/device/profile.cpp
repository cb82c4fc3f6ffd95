// Reading a device profile from JSON (specs/device-profile.md): a small strict parser (objects,
// arrays, strings, numbers, true/false/null) and the profile's shape rules, so the
// loader reads the same profiles as Python's DeviceProfile.from_json. Errors are
// INVALID_ARGUMENT naming the field path.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/text.hpp"
#include "fatpte/device.hpp"
#include "fatpte/result.hpp"
#include "fatpte/profile.hpp"
#include "fatpte/select.hpp"
#include "fatpte/status.hpp"

#ifndef FATPTE_DEVICES_DIR
#define FATPTE_DEVICES_DIR "specs/devices"
#endif
#ifndef FATPTE_INSTALLED_DEVICES_DIR
#define FATPTE_INSTALLED_DEVICES_DIR "/usr/local/share/fatpte/devices"
#endif

namespace fatpte {
namespace {

constexpr std::size_t kMaxProfileBytes = 1u << 20;  // device.MAX_PROFILE_BYTES
constexpr std::size_t kMaxAccelerators = 64;        // device.MAX_ACCELERATORS
// device.MAX_PROFILE_DEPTH: arrays and objects nest at most 64 deep (a profile needs 3); the
// Python reader counts the depth before parsing, so both refuse the same documents, at `$`.
constexpr int kMaxNesting = 64;
// device.MAX_INTEGER_DIGITS: an integer literal of more digits is not read (Python's int() limit).
constexpr std::size_t kMaxIntegerDigits = 4300;
constexpr std::size_t kMaxExecutorchBackends = 64;  // fields.MAX_EXECUTORCH_BACKENDS

struct Value {
  enum Kind { kNull, kBool, kInt, kNumber, kString, kArray, kObject } kind = kNull;
  bool b = false;
  std::uint64_t i = 0;
  std::string s;
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;  // in document order
};

class Parser {
 public:
  explicit Parser(const std::string& text) : t_(text) {}

  Status parse(Value& out) {
    FATPTE_RETURN_IF_ERROR(value(out, 0));
    ws();
    FATPTE_CHECK(p_ == t_.size(), Error::INVALID_ARGUMENT, p_, "$", "unexpected text after the JSON value");
    return Status();
  }

 private:
  void ws() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) ++p_;
  }
  Status bad(const char* what) { return fail(Error::INVALID_ARGUMENT, p_, "$", "invalid JSON: %s", what); }

  // `depth`: the arrays and objects around this value. A value that is itself one may be the
  // 64th (device.MAX_PROFILE_DEPTH counts containers, not the scalars inside the deepest).
  Status value(Value& v, int depth) {
    ws();
    if (p_ >= t_.size()) return bad("unexpected end");
    const char c = t_[p_];
    if (c == '{' || c == '[') {
      FATPTE_CHECK(depth < kMaxNesting, Error::INVALID_ARGUMENT, p_, "$", "JSON nests too deeply");
    }
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v.kind = Value::kString;
      return string(v.s);
    }
    if ((c >= '0' && c <= '9') || c == '-') return number(v);
    for (const char* word : {"true", "false", "null"}) {
      if (t_.compare(p_, std::strlen(word), word) == 0) {
        p_ += std::strlen(word);
        v.kind = word[0] == 'n' ? Value::kNull : Value::kBool;
        v.b = word[0] == 't';
        return Status();
      }
    }
    return bad("unexpected character");
  }

  // Any JSON number, as Python's json reads it: a non-negative integer that fits 64 bits (or -0,
  // which Python reads as 0) is kInt; every other number (negative, fraction, exponent, beyond
  // 64 bits) is kNumber, which no field accepts, so the error names the field as Python's does.
  Status number(Value& v) {
    const bool negative = t_[p_] == '-';
    if (negative) ++p_;
    const std::size_t start = p_;
    while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
    const std::size_t digits = p_ - start;
    if (digits == 0) return bad("a '-' without a number");
    if (digits > 1 && t_[start] == '0') {
      p_ = start + 1;  // Python reads the 0 and stops: what follows is unexpected text
      return bad("a number with a leading zero");
    }
    bool integral = true;
    if (p_ < t_.size() && t_[p_] == '.') {
      const std::size_t dot = ++p_;
      while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
      if (p_ == dot) return bad("a number without digits after '.'");
      integral = false;
    }
    if (p_ < t_.size() && (t_[p_] == 'e' || t_[p_] == 'E')) {
      ++p_;
      if (p_ < t_.size() && (t_[p_] == '+' || t_[p_] == '-')) ++p_;
      const std::size_t exp = p_;
      while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
      if (p_ == exp) return bad("a number without exponent digits");
      integral = false;
    }
    // An integer (no fraction, no exponent) of more than 4300 digits is refused as a whole; a number
    // with a fraction or exponent is read whatever its length, and no field takes it.
    if (integral && digits > kMaxIntegerDigits) return bad("an integer of more than 4300 digits");
    std::uint64_t n = 0;
    bool fits = integral && digits <= 20;
    for (std::size_t k = start; fits && k < start + digits; ++k) {
      const std::uint64_t d = static_cast<std::uint64_t>(t_[k] - '0');
      if (n > (~std::uint64_t{0} - d) / 10) fits = false;
      else n = n * 10 + d;
    }
    if (fits && (!negative || n == 0)) {
      v.kind = Value::kInt;
      v.i = n;
    } else {
      v.kind = Value::kNumber;
    }
    return Status();
  }

  Status string(std::string& out) {
    ++p_;  // opening quote
    while (p_ < t_.size()) {
      const unsigned char c = static_cast<unsigned char>(t_[p_++]);
      if (c == '"') return Status();
      if (c < 0x20) return bad("a control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (p_ >= t_.size()) break;
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
          if (p_ + 4 > t_.size()) return bad("a short \\u escape");
          unsigned cp = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = t_[p_++];
            cp <<= 4;
            if (h >= '0' && h <= '9') cp |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f') cp |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') cp |= static_cast<unsigned>(h - 'A' + 10);
            else return bad("a bad \\u escape");
          }
          // Profile strings are printable ASCII; anything else is kept as UTF-8 so the shape
          // rules below can reject it by name. A surrogate pair is one character, as in Python;
          // a lone surrogate is kept as its own three bytes.
          if (cp >= 0xD800 && cp <= 0xDBFF && p_ + 6 <= t_.size() && t_[p_] == '\\' && t_[p_ + 1] == 'u') {
            unsigned low = 0;
            bool hex = true;
            for (int k = 2; k < 6 && hex; ++k) {
              const char h = t_[p_ + k];
              low <<= 4;
              if (h >= '0' && h <= '9') low |= static_cast<unsigned>(h - '0');
              else if (h >= 'a' && h <= 'f') low |= static_cast<unsigned>(h - 'a' + 10);
              else if (h >= 'A' && h <= 'F') low |= static_cast<unsigned>(h - 'A' + 10);
              else hex = false;
            }
            if (hex && low >= 0xDC00 && low <= 0xDFFF) {
              p_ += 6;
              const unsigned full = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
              out += static_cast<char>(0xF0 | (full >> 18));
              out += static_cast<char>(0x80 | ((full >> 12) & 0x3F));
              out += static_cast<char>(0x80 | ((full >> 6) & 0x3F));
              out += static_cast<char>(0x80 | (full & 0x3F));
              break;
            }
          }
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          return bad("an unknown escape");
      }
    }
    return bad("an unterminated string");
  }

  Status array(Value& v, int depth) {
    ++p_;
    v.kind = Value::kArray;
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

  Status object(Value& v, int depth) {
    ++p_;
    std::set<std::string> seen;
    v.kind = Value::kObject;
    ws();
    if (p_ < t_.size() && t_[p_] == '}') {
      ++p_;
      return Status();
    }
    for (;;) {
      ws();
      if (p_ >= t_.size() || t_[p_] != '"') return bad("expected a key");
      std::string key;
      FATPTE_RETURN_IF_ERROR(string(key));
      ws();
      if (p_ >= t_.size() || t_[p_] != ':') return bad("expected ':'");
      ++p_;
      // A set, not a scan of the members: a 1 MiB profile may hold tens of thousands of keys.
      if (!seen.insert(key).second) return bad("a key appears twice");
      v.members.emplace_back(std::move(key), Value());
      FATPTE_RETURN_IF_ERROR(value(v.members.back().second, depth + 1));
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

  const std::string& t_;
  std::size_t p_ = 0;
};

// Well-formed UTF-8, what Python's bytes.decode("utf-8") accepts; a profile that is not is
// rejected as a whole.
bool valid_utf8(const std::string& s) {
  return detail::first_invalid_utf8(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()) < 0;
}

Status invalid(const std::string& path, const std::string& message) {
  return fail(Error::INVALID_ARGUMENT, kNoOffset, path, "%s", message.c_str());
}

const Value* member(const Value& obj, const char* key) {
  for (const auto& m : obj.members) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

// Unknown keys first (in document order), then missing ones (in the listed order), as
// fields.check_keys, so both name the same field; the keys of `optional` may be absent.
Status keys(const Value& obj, std::initializer_list<const char*> want, const std::string& path,
            std::initializer_list<const char*> optional = {}) {
  for (const auto& m : obj.members) {
    bool known = false;
    for (const char* k : want) known = known || m.first == k;
    for (const char* k : optional) known = known || m.first == k;
    if (!known) return invalid(path.empty() ? m.first : path + "." + m.first, "is not a field of a device profile");
  }
  for (const char* k : want) {
    if (member(obj, k) == nullptr) return invalid(path.empty() ? k : path + "." + k, "is missing");
  }
  return Status();
}

Status text(const Value* v, const std::string& path, std::string& out) {
  if (v->kind != Value::kString) return invalid(path, "must be a string");
  out = v->s;
  return Status();
}

Status integer(const Value* v, const std::string& path, std::uint64_t high, std::uint64_t& out) {
  if (v->kind != Value::kInt || v->i > high) return invalid(path, "must be an integer from 0 to " + std::to_string(high));
  out = v->i;
  return Status();
}

bool one_of(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words) {
    if (s == w) return true;
  }
  return false;
}

// The vocabulary of specs/device-profile.md section 3 (device.py's OS_NAMES, ARCHES,
// X86_FEATURES, ARM_FEATURES, ACCELERATOR_KINDS); tests/loader/test_cpp_profile_parity.py feeds every
// word of device.py to both readers, so a word added on one side only fails there.
const std::initializer_list<const char*> kOsNames = {"linux", "android", "macos", "ios", "windows"};
const std::initializer_list<const char*> kArches = {"x86_64", "aarch64"};
const std::initializer_list<const char*> kX86Features = {
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
    "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16"};
const std::initializer_list<const char*> kArmFeatures = {"asimd", "fphp", "asimdhp", "asimddp", "i8mm",
                                                          "bf16", "sve", "sve2", "sme"};
const std::initializer_list<const char*> kAcceleratorKinds = {"cuda", "metal", "vulkan", "opencl", "npu"};

bool word_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

// device.NAME_PATTERN, [A-Za-z0-9_.-]{1,64}.
bool is_profile_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!word_char(c)) return false;
  }
  return true;
}

// A backend id: 1 to layout.ID_FIELD_SIZE bytes of layout.ID_ALPHABET.
bool is_backend_id(const std::string& s) {
  if (s.empty() || s.size() > format::kIdFieldSize) return false;
  for (char c : s) {
    if (c == '\0' || std::strchr(format::kIdAlphabet, c) == nullptr) return false;
  }
  return true;
}

// fields.EXECUTORCH_BACKEND_PATTERN, [!-~]{1,256}.
bool is_executorch_backend(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  for (unsigned char c : s) {
    if (c < 0x21 || c > 0x7E) return false;
  }
  return true;
}

// device.ACCELERATOR_NAME_PATTERN, [ -~]{1,256}.
bool is_accelerator_name(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

// device.CUDA_VERSION_PATTERN (exactly 2 components) or API_VERSION_PATTERN (1 to 3): each a
// decimal integer without leading zeros, at most 4 digits.
bool is_version(const std::string& s, std::size_t min_parts, std::size_t max_parts) {
  std::size_t parts = 0, i = 0;
  for (;;) {
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    const std::size_t digits = i - start;
    if (digits == 0 || digits > 4 || (digits > 1 && s[start] == '0')) return false;
    ++parts;
    if (i == s.size()) break;
    if (s[i] != '.') return false;
    ++i;
  }
  return parts >= min_parts && parts <= max_parts;
}

Status accelerator(const Value& a, const std::string& path, Accelerator& acc) {
  if (a.kind != Value::kObject) return invalid(path, "must be an object");
  FATPTE_RETURN_IF_ERROR(keys(a, {"kind", "name", "version", "memory_bytes"}, path));
  FATPTE_RETURN_IF_ERROR(text(member(a, "kind"), path + ".kind", acc.kind));
  FATPTE_RETURN_IF_ERROR(text(member(a, "name"), path + ".name", acc.name));
  FATPTE_RETURN_IF_ERROR(text(member(a, "version"), path + ".version", acc.version));
  FATPTE_RETURN_IF_ERROR(
      integer(member(a, "memory_bytes"), path + ".memory_bytes", (std::uint64_t{1} << 63) - 1, acc.memory_bytes));
  if (!one_of(acc.kind, kAcceleratorKinds)) {
    return invalid(path + ".kind", "'" + acc.kind + "' is not an accelerator kind (one of cuda, metal, vulkan, "
                   "opencl, npu)");
  }
  if (!is_accelerator_name(acc.name)) return invalid(path + ".name", "must be 1 to 256 printable ASCII characters");
  const bool cuda = acc.kind == "cuda";
  if (!is_version(acc.version, cuda ? 2 : 1, cuda ? 2 : 3)) {
    return invalid(path + ".version", "'" + acc.version + "' is not " +
                   (cuda ? std::string("a compute capability MAJOR.MINOR such as \"8.0\"")
                         : std::string("a version of 1 to 3 dot-separated numbers such as \"1.3\"")) +
                   " (numbers without leading zeros, at most 4 digits)");
  }
  return Status();
}

}  // namespace

// The checks and their order are device.py's DeviceProfile._from_json then _check_profile, so
// both readers accept the same profiles and name the same first bad field.
Result<DeviceProfile> profile_from_json(const std::string& json) {
  if (json.size() > kMaxProfileBytes) {
    return invalid("$", "is larger than the limit of 1048576 bytes for a device profile");
  }
  if (!valid_utf8(json)) return invalid("$", "is not valid UTF-8");
  Value root;
  Parser parser(json);
  FATPTE_RETURN_IF_ERROR(parser.parse(root));
  if (root.kind != Value::kObject) return invalid("$", "a device profile must be a JSON object");
  FATPTE_RETURN_IF_ERROR(keys(root, {"name", "os", "arch", "cpu_features", "accelerators", "memory_bytes", "backends"},
                              "", {"executorch_backends"}));
  DeviceProfile p;
  FATPTE_RETURN_IF_ERROR(text(member(root, "name"), "name", p.name));
  FATPTE_RETURN_IF_ERROR(text(member(root, "os"), "os", p.os));
  FATPTE_RETURN_IF_ERROR(text(member(root, "arch"), "arch", p.arch));
  const Value* features = member(root, "cpu_features");
  if (features->kind != Value::kArray) return invalid("cpu_features", "must be an array of strings");
  std::vector<std::string> words(features->items.size());
  for (std::size_t i = 0; i < features->items.size(); ++i) {
    FATPTE_RETURN_IF_ERROR(text(&features->items[i], "cpu_features[" + std::to_string(i) + "]", words[i]));
  }
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (!p.cpu_features.insert(words[i]).second) {
      return invalid("cpu_features[" + std::to_string(i) + "]", "'" + words[i] + "' is listed twice");
    }
  }
  const Value* accs = member(root, "accelerators");
  if (accs->kind != Value::kArray) return invalid("accelerators", "must be an array of objects");
  if (accs->items.size() > kMaxAccelerators) return invalid("accelerators", "lists more than 64 accelerators");
  for (std::size_t i = 0; i < accs->items.size(); ++i) {
    Accelerator acc;
    FATPTE_RETURN_IF_ERROR(accelerator(accs->items[i], "accelerators[" + std::to_string(i) + "]", acc));
    p.accelerators.push_back(std::move(acc));
  }
  FATPTE_RETURN_IF_ERROR(integer(member(root, "memory_bytes"), "memory_bytes", (std::uint64_t{1} << 63) - 1,
                                 p.memory_bytes));
  const Value* backends = member(root, "backends");
  if (backends->kind != Value::kObject) return invalid("backends", "must be an object mapping backend ids to ABI versions");
  for (const auto& m : backends->members) {
    std::uint64_t v = 0;
    FATPTE_RETURN_IF_ERROR(integer(&m.second, "backends." + m.first, 0xFFFFFFFFu, v));
    p.backends[m.first] = static_cast<std::uint32_t>(v);
  }
  if (const Value* et = member(root, "executorch_backends")) {
    if (et->kind != Value::kArray) return invalid("executorch_backends", "must be an array of strings");
    if (et->items.size() > kMaxExecutorchBackends) {
      return invalid("executorch_backends", "lists more than 64 backends");
    }
    std::vector<std::string> ids(et->items.size());
    for (std::size_t i = 0; i < et->items.size(); ++i) {
      FATPTE_RETURN_IF_ERROR(text(&et->items[i], "executorch_backends[" + std::to_string(i) + "]", ids[i]));
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::string path = "executorch_backends[" + std::to_string(i) + "]";
      if (!is_executorch_backend(ids[i])) {
        return invalid(path, "'" + ids[i] + "' is not an ExecuTorch backend id (1 to 256 printable ASCII "
                       "characters, no space)");
      }
      if (!seen.insert(ids[i]).second) return invalid(path, "'" + ids[i] + "' is listed twice");
    }
    p.executorch_backends = std::move(seen);
  }
  if (!is_profile_name(p.name)) return invalid("name", "'" + p.name + "' must be 1 to 64 characters from [A-Za-z0-9_.-]");
  if (!one_of(p.os, kOsNames)) return invalid("os", "'" + p.os + "' is not an operating system of the vocabulary");
  if (!one_of(p.arch, kArches)) return invalid("arch", "'" + p.arch + "' is not a CPU architecture of the vocabulary");
  const auto& allowed = p.arch == "x86_64" ? kX86Features : kArmFeatures;
  const auto& other = p.arch == "x86_64" ? kArmFeatures : kX86Features;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (one_of(words[i], allowed)) continue;
    return invalid("cpu_features[" + std::to_string(i) + "]",
                   "'" + words[i] + "' " +
                       (one_of(words[i], other) ? "is a feature of the other architecture, not one of " + p.arch
                                                : "is not a CPU feature of the vocabulary for " + p.arch));
  }
  // std::map orders keys by bytes, which for UTF-8 is Python's code point order.
  for (const auto& b : p.backends) {
    if (!is_backend_id(b.first)) {
      return invalid("backends." + b.first, "'" + b.first + "' is not a backend id (1 to 32 characters from "
                     "[A-Za-z0-9_.-])");
    }
  }
  return p;
}

Result<DeviceProfile> profile_from_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it (as Python does).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return fail(Error::IO_ERROR, kNoOffset, "", "cannot read the device profile %s: %s", path.c_str(),
                std::strerror(errno));
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    ::close(fd);
    return fail(Error::NOT_A_FILE, kNoOffset, "",
                "the device profile %s is not a regular file (a directory, device, FIFO or socket)", path.c_str());
  }
  std::string text(kMaxProfileBytes + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, &text[got], text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return fail(Error::IO_ERROR, kNoOffset, "", "cannot read the device profile %s: %s", path.c_str(),
                  std::strerror(err));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  if (text.size() > kMaxProfileBytes) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "$", "%s is larger than 1 MiB: not a device profile",
                path.c_str());
  }
  Result<DeviceProfile> r = profile_from_json(text);
  if (!r.ok()) {
    return fail(r.error().code(), r.error().offset(), r.error().field(), "%s: %s", path.c_str(),
                r.error().message().c_str());
  }
  return r;
}

const char* devices_dir() noexcept {
  const char* env = std::getenv("FATPTE_DEVICES_DIR");
  if (env != nullptr && env[0] != '\0') return env;
  // The source tree's profiles when this build runs from it, else the installed copy.
  struct stat sb;
  if (stat(FATPTE_DEVICES_DIR, &sb) == 0 && S_ISDIR(sb.st_mode)) return FATPTE_DEVICES_DIR;
  return FATPTE_INSTALLED_DEVICES_DIR;
}

Result<DeviceProfile> load_profile(const std::string& word) {
  if (word == "host") return probe_host();
  // As Python's DeviceProfile.load: a word of the name pattern that does not end in .json is a
  // name in the devices folder; anything else is a path.
  const bool is_name = !word.empty() && word.size() <= 64 &&
                       word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
                           std::string::npos &&
                       !(word.size() >= 5 && word.compare(word.size() - 5, 5, ".json") == 0);
  if (!is_name) return profile_from_file(word);
  const std::string dir = devices_dir();
  const std::string path = dir + "/" + word + ".json";
  struct stat present;
  if (stat(path.c_str(), &present) != 0) {  // stat, not open: a FIFO of that name must not block
    std::vector<std::string> names;
    if (DIR* d = opendir(dir.c_str())) {
      while (const dirent* ent = readdir(d)) {
        const std::string f = ent->d_name;
        if (f.size() > 5 && f.compare(f.size() - 5, 5, ".json") == 0) names.push_back(f.substr(0, f.size() - 5));
      }
      closedir(d);
    }
    std::sort(names.begin(), names.end());
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "device",
                "no device profile named '%s' in %s; known profiles: %s (or give a path to a profile JSON file)",
                word.c_str(), dir.c_str(), known.empty() ? "none" : known.c_str());
  }
  return profile_from_file(path);
}

}  // namespace fatpte
