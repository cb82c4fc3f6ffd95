// Reading a device profile from JSON (specs/device-profile.md): the loader's JSON parser under
// the profile's rules (common/json.hpp: UTF-8, 64 levels of arrays and objects, integers of at
// most 4300 digits, lone surrogates kept as Python keeps them), then the profile's shape rules,
// so the loader reads the same profiles as Python's DeviceProfile.from_json. Errors are
// INVALID_ARGUMENT naming the field path.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.hpp"
#include "common/text.hpp"
#include "device/identity.hpp"
#include "device/origin.hpp"
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
constexpr std::size_t kMaxSources = 16;             // fields.MAX_SOURCES

Status invalid(const std::string& path, const std::string& message) {
  return fail(Error::INVALID_ARGUMENT, kNoOffset, path, "%s", message.c_str());
}

using json::Kind;
using json::Value;
using detail::quoted;

// Unknown keys first (in document order), then missing ones (in the listed order), as
// fields.check_keys, so both name the same field; the keys of `optional` may be absent.
Status keys(const Value& obj, std::initializer_list<const char*> want, const std::string& path,
            std::initializer_list<const char*> optional = {}) {
  for (const Value::Member m : obj.members()) {
    bool known = false;
    for (const char* k : want) known = known || m.key == k;
    for (const char* k : optional) known = known || m.key == k;
    const std::string key(m.key);
    if (!known) return invalid(path.empty() ? key : path + "." + key, "is not a field of a device profile");
  }
  for (const char* k : want) {
    if (!obj.find(k)) return invalid(path.empty() ? k : path + "." + k, "is missing");
  }
  return Status();
}

Status field_text(const Value& v, const std::string& path, std::string& out) {
  if (!v.is(Kind::kString)) return invalid(path, "must be a string");
  out = v.text();
  return Status();
}

// What a value is, in the words of fields.kind_of (a number with a fraction or an exponent is a
// float to Python's json).
const char* kind_of(const Value& v) {
  switch (v.kind()) {
    case Kind::kObject: return "an object";
    case Kind::kArray: return "an array";
    case Kind::kString: return "a string";
    case Kind::kBool: return "a boolean";
    case Kind::kNull: return "null";
    case Kind::kNumber: break;
  }
  return v.text().find_first_of(".eE") == std::string_view::npos ? "an integer" : "a floating-point number";
}

// A non-negative integer (or -0, which Python reads as 0) up to `high`, in fields.integer's
// words: anything else "must be an integer, not KIND"; an integer outside the range is quoted as
// the file writes it, clipped (errors.clipped), however many digits it has: "1000...(401 bytes) is
// outside 0..N", never a number the file does not hold.
Status integer(const Value& v, const std::string& path, std::uint64_t high, std::uint64_t& out) {
  if (!v.is(Kind::kNumber) || v.text().find_first_of(".eE") != std::string_view::npos) {
    return invalid(path, std::string("must be an integer, not ") + kind_of(v));
  }
  bool negative = false;
  std::uint64_t n = 0;
  if (!json::integer(v, negative, n) || (negative && n != 0) || n > high) {
    return invalid(path, detail::clipped(std::string(v.text())) + " is outside 0.." + std::to_string(high));
  }
  out = n;
  return Status();
}

// The words comma-separated, as Python's ", ".join of the same vocabulary.
std::string joined(std::initializer_list<const char*> words) {
  std::string out;
  for (const char* w : words) out += (out.empty() ? "" : ", ") + std::string(w);
  return out;
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
const std::initializer_list<const char*> kAcceleratorKinds = {"cuda", "metal", "vulkan", "opencl", "npu",
                                                               "openvino"};
constexpr std::size_t kMaxCapabilities = 32;  // fields.MAX_CAPABILITIES

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

// Printable ASCII, 1 to `longest` characters: device.ACCELERATOR_NAME_PATTERN, [ -~]{1,256}, and
// fields.SOURCE_PATTERN, [ -~]{1,512}.
bool is_printable(const std::string& s, std::size_t longest) {
  if (s.empty() || s.size() > longest) return false;
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

// fields.DEVICE_NAME_PATTERN, [A-Za-z0-9_.-]{1,64} (the profile name's rule).
bool is_device_name(const std::string& s) { return is_profile_name(s); }

// fields.CAPABILITY_PATTERN, [a-z0-9_]{1,32}.
bool is_capability(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// The optional `device` and `capabilities` as given (accelerator.py Accelerator.from_json):
// their shapes; `device_given` says whether the key was there.
Status read_vendor_keys(const Value& a, const std::string& path, Accelerator& acc, bool& device_given,
                        std::vector<std::string>& caps) {
  const Value device = a.find("device");
  device_given = static_cast<bool>(device);
  if (device_given) FATPTE_RETURN_IF_ERROR(field_text(device, path + ".device", acc.device));
  const Value list = a.find("capabilities");
  if (!list) return Status();
  if (!list.is(Kind::kArray)) return invalid(path + ".capabilities", "must be an array of strings");
  if (list.size() > kMaxCapabilities) return invalid(path + ".capabilities", "lists more than 32 capabilities");
  caps.assign(list.size(), std::string());
  std::size_t n = 0;
  for (const Value c : list.items()) {
    FATPTE_RETURN_IF_ERROR(field_text(c, path + ".capabilities[" + std::to_string(n) + "]", caps[n]));
    ++n;
  }
  return Status();
}

// accelerator.py _check_vendor: the device name when given, then each capability in file order.
Status check_vendor_keys(const std::string& path, Accelerator& acc, bool device_given,
                         const std::vector<std::string>& caps) {
  if (device_given && !is_device_name(acc.device)) {
    return invalid(path + ".device", quoted(acc.device) + " is not a device name (1 to 64 characters from "
                   "[A-Za-z0-9_.-], as the runtime lists it: CPU, GPU.0, NPU)");
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < caps.size(); ++i) {
    const std::string p = path + ".capabilities[" + std::to_string(i) + "]";
    if (!is_capability(caps[i])) {
      return invalid(p, quoted(caps[i]) + " is not a capability (1 to 32 characters from [a-z0-9_]: the runtime's "
                     "word lower-cased, such as fp16)");
    }
    if (!seen.insert(caps[i]).second) return invalid(p, quoted(caps[i]) + " is listed twice");
  }
  acc.capabilities.assign(seen.begin(), seen.end());  // sorted bytewise, as Python's sorted()
  return Status();
}

Status accelerator(const Value& a, const std::string& path, Accelerator& acc) {
  if (!a.is(Kind::kObject)) return invalid(path, "must be an object");
  FATPTE_RETURN_IF_ERROR(keys(a, {"kind", "name", "version", "memory_bytes"}, path, {"device", "capabilities"}));
  FATPTE_RETURN_IF_ERROR(field_text(a.find("kind"), path + ".kind", acc.kind));
  FATPTE_RETURN_IF_ERROR(field_text(a.find("name"), path + ".name", acc.name));
  FATPTE_RETURN_IF_ERROR(field_text(a.find("version"), path + ".version", acc.version));
  FATPTE_RETURN_IF_ERROR(
      integer(a.find("memory_bytes"), path + ".memory_bytes", (std::uint64_t{1} << 63) - 1, acc.memory_bytes));
  bool device_given = false;
  std::vector<std::string> caps;
  FATPTE_RETURN_IF_ERROR(read_vendor_keys(a, path, acc, device_given, caps));
  if (!one_of(acc.kind, kAcceleratorKinds)) {
    return invalid(path + ".kind", quoted(acc.kind) + " is not an accelerator kind (one of cuda, metal, vulkan, "
                   "opencl, npu, openvino)");
  }
  if (!is_printable(acc.name, 256)) return invalid(path + ".name", "must be 1 to 256 printable ASCII characters");
  const bool cuda = acc.kind == "cuda";
  if (!is_version(acc.version, cuda ? 2 : 1, cuda ? 2 : 3)) {
    return invalid(path + ".version", quoted(acc.version) + " is not " +
                   (cuda ? std::string("a compute capability MAJOR.MINOR such as \"8.0\"")
                         : std::string("a version of 1 to 3 dot-separated numbers such as \"1.3\"")) +
                   " (numbers without leading zeros, at most 4 digits)");
  }
  return check_vendor_keys(path, acc, device_given, caps);
}

// The profile's `cpu_features` as given (the vocabulary is checked once `arch` is known), each
// once.
Status read_cpu_features(const Value& root, DeviceProfile& p, std::vector<std::string>& words) {
  const Value features = root.find("cpu_features");
  if (!features.is(Kind::kArray)) return invalid("cpu_features", "must be an array of strings");
  words.assign(features.size(), std::string());
  std::size_t n = 0;
  for (const Value f : features.items()) {
    FATPTE_RETURN_IF_ERROR(field_text(f, "cpu_features[" + std::to_string(n) + "]", words[n]));
    ++n;
  }
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (!p.cpu_features.insert(words[i]).second) {
      return invalid("cpu_features[" + std::to_string(i) + "]", quoted(words[i]) + " is listed twice");
    }
  }
  return Status();
}

// `accelerators`, `memory_bytes` and `backends` (ids checked by check_vocabulary).
Status read_resources(const Value& root, DeviceProfile& p) {
  const Value accs = root.find("accelerators");
  if (!accs.is(Kind::kArray)) return invalid("accelerators", "must be an array of objects");
  if (accs.size() > kMaxAccelerators) return invalid("accelerators", "lists more than 64 accelerators");
  for (const Value a : accs.items()) {
    Accelerator acc;
    FATPTE_RETURN_IF_ERROR(accelerator(a, "accelerators[" + std::to_string(p.accelerators.size()) + "]", acc));
    p.accelerators.push_back(std::move(acc));
  }
  FATPTE_RETURN_IF_ERROR(integer(root.find("memory_bytes"), "memory_bytes", (std::uint64_t{1} << 63) - 1,
                                 p.memory_bytes));
  const Value backends = root.find("backends");
  if (!backends.is(Kind::kObject)) return invalid("backends", "must be an object mapping backend ids to ABI versions");
  for (const Value::Member m : backends.members()) {
    std::uint64_t v = 0;
    const std::string id(m.key);
    FATPTE_RETURN_IF_ERROR(integer(m.value, "backends." + id, 0xFFFFFFFFu, v));
    p.backends[id] = static_cast<std::uint32_t>(v);
  }
  return Status();
}

// The optional `executorch_backends`: ExecuTorch backend ids, each once.
Status read_executorch_backends(const Value& root, DeviceProfile& p) {
  const Value et = root.find("executorch_backends");
  if (!et) return Status();
  if (!et.is(Kind::kArray)) return invalid("executorch_backends", "must be an array of strings");
  if (et.size() > kMaxExecutorchBackends) {
    return invalid("executorch_backends", "lists more than 64 backends");
  }
  std::vector<std::string> ids(et.size());
  std::size_t n = 0;
  for (const Value id : et.items()) {
    FATPTE_RETURN_IF_ERROR(field_text(id, "executorch_backends[" + std::to_string(n) + "]", ids[n]));
    ++n;
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string path = "executorch_backends[" + std::to_string(i) + "]";
    if (!is_executorch_backend(ids[i])) {
      return invalid(path, quoted(ids[i]) + " is not an ExecuTorch backend id (1 to 256 printable ASCII "
                     "characters, no space)");
    }
    if (!seen.insert(ids[i]).second) return invalid(path, quoted(ids[i]) + " is listed twice");
  }
  p.executorch_backends = std::move(seen);
  return Status();
}

// The optional `sources`: 1 to 16 printable ASCII strings, each once, kept in the file's order
// (profile.py's _read_sources: the array, its length, each element's type, then the rest).
Status read_sources(const Value& root, DeviceProfile& p) {
  const Value src = root.find("sources");
  if (!src) return Status();
  if (!src.is(Kind::kArray)) return invalid("sources", "must be an array of strings");
  if (src.size() > kMaxSources) return invalid("sources", "lists more than 16 sources");
  std::vector<std::string> words(src.size());
  std::size_t n = 0;
  for (const Value w : src.items()) {
    FATPTE_RETURN_IF_ERROR(field_text(w, "sources[" + std::to_string(n) + "]", words[n]));
    ++n;
  }
  if (words.empty()) return invalid("sources", "is empty; leave the key out when no source is cited");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string path = "sources[" + std::to_string(i) + "]";
    if (!is_printable(words[i], 512)) return invalid(path, "is not a source (1 to 512 printable ASCII characters)");
    if (!seen.insert(words[i]).second) return invalid(path, quoted(words[i]) + " is listed twice");
  }
  p.sources = std::move(words);
  return Status();
}

// The identity keys' shapes (profile._read_identity): `cpu_cores` and `soc` arrays of at most 64
// strings, `kernel`, `os_release` and `machine` strings; `words` gets the arrays' words in file
// order for check_identity.
Status read_identity(const Value& root, DeviceProfile& p, std::vector<std::string> (&words)[2]) {
  const char* arrays[2] = {"cpu_cores", "soc"};
  for (int k = 0; k < 2; ++k) {
    const Value a = root.find(arrays[k]);
    if (!a) continue;
    if (!a.is(Kind::kArray)) return invalid(arrays[k], "must be an array of strings");
    if (a.size() > 64) return invalid(arrays[k], std::string("lists more than 64 ") + (k == 0 ? "cores" : "words"));
    words[k].assign(a.size(), std::string());
    std::size_t n = 0;
    for (const Value w : a.items()) {
      FATPTE_RETURN_IF_ERROR(field_text(w, std::string(arrays[k]) + "[" + std::to_string(n) + "]", words[k][n]));
      ++n;
    }
    (k == 0 ? p.cpu_cores : p.soc) = std::set<std::string>(words[k].begin(), words[k].end());
  }
  std::optional<std::string>* texts[3] = {&p.kernel, &p.os_release, &p.machine};
  const char* names[3] = {"kernel", "os_release", "machine"};
  for (int k = 0; k < 3; ++k) {
    const Value v = root.find(names[k]);
    if (!v) continue;
    std::string text;
    FATPTE_RETURN_IF_ERROR(field_text(v, names[k], text));
    *texts[k] = std::move(text);
  }
  return Status();
}

// The identity's values (profile._check_identity), after every other check: each core a name of
// the table for the profile's arch or the id of a core it does not name, the texts printable
// ASCII, no word twice.
Status check_identity(const DeviceProfile& p, const std::vector<std::string> (&words)[2]) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < words[0].size(); ++i) {
    const std::string& w = words[0][i];
    const std::string path = "cpu_cores[" + std::to_string(i) + "]";
    const detail::Core* core = detail::core_by_name(w);
    if (core != nullptr && p.arch != core->arch) {
      return invalid(path, quoted(w) + " is a " + core->arch + " core, not one of " + p.arch);
    }
    if (core == nullptr && !detail::is_core_id(w, p.arch)) {
      return invalid(path, quoted(w) + " is neither a core name of the table for " + p.arch +
                               " (specs/device-profile.md 3.6) nor the id of a core it does not name");
    }
    if (const detail::Core* named = detail::core_by_id(w)) {
      return invalid(path, quoted(w) + " is the core " + named->name + ": write its name");
    }
    if (!seen.insert(w).second) return invalid(path, quoted(w) + " is listed twice");
  }
  const std::optional<std::string>* texts[3] = {&p.kernel, &p.os_release, &p.machine};
  const char* names[3] = {"kernel", "os_release", "machine"};
  for (int k = 0; k < 3; ++k) {
    if (*texts[k] && !detail::is_identity_text(**texts[k])) {
      return invalid(names[k], quoted(**texts[k]) + " is not 1 to 256 printable ASCII characters");
    }
  }
  seen.clear();
  for (std::size_t i = 0; i < words[1].size(); ++i) {
    const std::string path = "soc[" + std::to_string(i) + "]";
    if (!detail::is_identity_text(words[1][i])) return invalid(path, "is not 1 to 256 printable ASCII characters");
    if (!seen.insert(words[1][i]).second) return invalid(path, quoted(words[1][i]) + " is listed twice");
  }
  return Status();
}

// The values against the vocabulary, once every field has its shape: name, os, arch, each CPU
// feature for that arch (`words`, as given), each backend id.
Status check_vocabulary(const DeviceProfile& p, const std::vector<std::string>& words) {
  if (!is_profile_name(p.name)) {
    return invalid("name", quoted(p.name) + " must be 1 to 64 characters from [A-Za-z0-9_.-]");
  }
  if (!one_of(p.os, kOsNames)) {
    return invalid("os", quoted(p.os) + " is not an operating system of the vocabulary (" + joined(kOsNames) + ")");
  }
  if (!one_of(p.arch, kArches)) {
    return invalid("arch", quoted(p.arch) + " is not a CPU architecture of the vocabulary (" + joined(kArches) + ")");
  }
  const auto& allowed = p.arch == "x86_64" ? kX86Features : kArmFeatures;
  const auto& other = p.arch == "x86_64" ? kArmFeatures : kX86Features;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (one_of(words[i], allowed)) continue;
    return invalid("cpu_features[" + std::to_string(i) + "]",
                   quoted(words[i]) + " " +
                       (one_of(words[i], other) ? "is a feature of the other architecture, not one of " + p.arch
                                                : "is not a CPU feature of the vocabulary for " + p.arch));
  }
  // std::map orders keys by bytes, which for UTF-8 is Python's code point order.
  for (const auto& b : p.backends) {
    if (!is_backend_id(b.first)) {
      return invalid("backends." + b.first, quoted(b.first) + " is not a backend id (1 to 32 characters from "
                     "[A-Za-z0-9_.-])");
    }
  }
  return Status();
}

}  // namespace

// The checks and their order are device.py's DeviceProfile._from_json then _check_profile, so
// both readers accept the same profiles and name the same first bad field.
Result<DeviceProfile> profile_from_json(const std::string& text) {
  json::Options rules;
  rules.max_bytes = kMaxProfileBytes;
  rules.utf8 = true;  // what Python's bytes.decode("utf-8") accepts, else refused as a whole
  rules.max_depth = kMaxNesting;
  rules.depth_counts_scalars = false;
  rules.max_integer_digits = kMaxIntegerDigits;
  rules.lone_surrogates = true;  // kept, so the shape rules below refuse them by field, as Python's
  Result<json::Document> doc = json::parse(text, rules);
  if (!doc.ok()) {
    return fail(Error::INVALID_ARGUMENT, doc.error().offset(), "$", "invalid JSON: %s", doc.error().message().c_str());
  }
  const Value root = doc.value().root();
  if (!root.is(Kind::kObject)) return invalid("$", "a device profile must be a JSON object");
  FATPTE_RETURN_IF_ERROR(keys(root, {"name", "os", "arch", "cpu_features", "accelerators", "memory_bytes", "backends"},
                              "", {"executorch_backends", "cpu_cores", "kernel", "os_release", "machine", "soc",
                                   "sources"}));
  DeviceProfile p;
  FATPTE_RETURN_IF_ERROR(field_text(root.find("name"), "name", p.name));
  FATPTE_RETURN_IF_ERROR(field_text(root.find("os"), "os", p.os));
  FATPTE_RETURN_IF_ERROR(field_text(root.find("arch"), "arch", p.arch));
  std::vector<std::string> words;
  FATPTE_RETURN_IF_ERROR(read_cpu_features(root, p, words));
  FATPTE_RETURN_IF_ERROR(read_resources(root, p));
  FATPTE_RETURN_IF_ERROR(read_executorch_backends(root, p));
  std::vector<std::string> identity_words[2];
  FATPTE_RETURN_IF_ERROR(read_identity(root, p, identity_words));
  FATPTE_RETURN_IF_ERROR(read_sources(root, p));
  FATPTE_RETURN_IF_ERROR(check_vocabulary(p, words));
  FATPTE_RETURN_IF_ERROR(check_identity(p, identity_words));
  return p;
}

Result<DeviceProfile> profile_from_file(const std::string& path) {
  bool more = false;
  Result<std::string> text = json::read_head(path, kMaxProfileBytes, "the device profile", more);
  if (!text.ok()) return text.error();
  if (more) {
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "$", "%s is larger than 1 MiB: not a device profile",
                path.c_str());
  }
  Result<DeviceProfile> r = profile_from_json(text.value());
  if (!r.ok()) {
    return fail(r.error().code(), r.error().offset(), r.error().field(), "%s: %s", path.c_str(),
                r.error().message().c_str());
  }
  return r;
}

namespace {

// The build tree's binaries read the source tree's profiles (when it is there); an install
// prefix, moved or not, its own share/fatpte/devices (device/origin.hpp), never the source
// tree's; a copy that cannot tell where it is, the configured install folder.
std::string default_devices_dir() {
  const detail::Origin& o = detail::origin();
  struct stat sb;
  if (o.build_tree && stat(FATPTE_DEVICES_DIR, &sb) == 0 && S_ISDIR(sb.st_mode)) return FATPTE_DEVICES_DIR;
  if (o.file.empty()) return FATPTE_INSTALLED_DEVICES_DIR;
  return detail::prefix_devices_dir();
}

}  // namespace

const char* devices_dir() noexcept {
  const char* env = std::getenv("FATPTE_DEVICES_DIR");
  if (env != nullptr && env[0] != '\0') return env;
  static const std::string dir = default_devices_dir();
  return dir.c_str();
}

std::string profile_path(const std::string& word) {
  if (word == "host") return "";
  // As Python's DeviceProfile.load: a word of the name pattern that does not end in .json is a
  // name in the devices folder; anything else is a path.
  const bool is_name = !word.empty() && word.size() <= 64 &&
                       word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
                           std::string::npos &&
                       !(word.size() >= 5 && word.compare(word.size() - 5, 5, ".json") == 0);
  return is_name ? std::string(devices_dir()) + "/" + word + ".json" : word;
}

Result<DeviceProfile> load_profile(const std::string& word) {
  if (word == "host") return probe_host();
  const std::string path = profile_path(word);
  if (path == word) return profile_from_file(word);
  const std::string dir = devices_dir();
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
