// Device identity: the core table and the Linux probe of specs/device-profile.md sections 3.6 and
// 9, step for step as fatpte/device/probe_identity.py and fatpte/format/vocabulary.py (CORES):
// tests/loader/test_cpp_profile_parity.py feeds every core of the Python table to both readers.
#include "device/identity.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <set>

namespace fatpte {
namespace detail {
namespace {

struct CoreRow {
  Core core;
  const char* ids;  // space-separated
};

// vocabulary.CORES, in its order (generation: tens the instruction-set level, units the design).
const CoreRow kCores[] = {
    {{"cortex-a53", "aarch64", 10}, "0x41:0xd03"},
    {{"cortex-a57", "aarch64", 11}, "0x41:0xd07"},
    {{"cortex-a72", "aarch64", 12}, "0x41:0xd08"},
    {{"cortex-a73", "aarch64", 13}, "0x41:0xd09"},
    {{"cortex-a55", "aarch64", 20}, "0x41:0xd05 0x51:0x803 0x51:0x805"},
    {{"cortex-a75", "aarch64", 21}, "0x41:0xd0a 0x51:0x802"},
    {{"cortex-a76", "aarch64", 22}, "0x41:0xd0b 0x51:0x804"},
    {{"neoverse-n1", "aarch64", 22}, "0x41:0xd0c"},
    {{"cortex-a77", "aarch64", 23}, "0x41:0xd0d"},
    {{"cortex-a78", "aarch64", 24}, "0x41:0xd41"},
    {{"cortex-a78ae", "aarch64", 24}, "0x41:0xd42"},
    {{"cortex-a78c", "aarch64", 24}, "0x41:0xd4b"},
    {{"cortex-x1", "aarch64", 25}, "0x41:0xd44"},
    {{"cortex-x1c", "aarch64", 25}, "0x41:0xd4c"},
    {{"a64fx", "aarch64", 26}, "0x46:0x001"},
    {{"neoverse-v1", "aarch64", 30}, "0x41:0xd40"},
    {{"cortex-a510", "aarch64", 40}, "0x41:0xd46"},
    {{"cortex-a710", "aarch64", 41}, "0x41:0xd47"},
    {{"neoverse-n2", "aarch64", 41}, "0x41:0xd49"},
    {{"cortex-x2", "aarch64", 42}, "0x41:0xd48"},
    {{"cortex-a715", "aarch64", 43}, "0x41:0xd4d"},
    {{"cortex-x3", "aarch64", 44}, "0x41:0xd4e"},
    {{"neoverse-v2", "aarch64", 44}, "0x41:0xd4f"},
    {{"cortex-a520", "aarch64", 50}, "0x41:0xd80"},
    {{"cortex-a720", "aarch64", 51}, "0x41:0xd81"},
    {{"cortex-x4", "aarch64", 52}, "0x41:0xd82"},
    {{"nehalem", "x86_64", 10}, "GenuineIntel:6:26 GenuineIntel:6:30 GenuineIntel:6:31 GenuineIntel:6:46"},
    {{"westmere", "x86_64", 11}, "GenuineIntel:6:37 GenuineIntel:6:44 GenuineIntel:6:47"},
    {{"sandybridge", "x86_64", 12}, "GenuineIntel:6:42 GenuineIntel:6:45"},
    {{"ivybridge", "x86_64", 13}, "GenuineIntel:6:58 GenuineIntel:6:62"},
    {{"haswell", "x86_64", 20}, "GenuineIntel:6:60 GenuineIntel:6:63 GenuineIntel:6:69 GenuineIntel:6:70"},
    {{"znver1", "x86_64", 20}, "AuthenticAMD:23:1 AuthenticAMD:23:8 AuthenticAMD:23:17 AuthenticAMD:23:24"},
    {{"broadwell", "x86_64", 21}, "GenuineIntel:6:61 GenuineIntel:6:71 GenuineIntel:6:79 GenuineIntel:6:86"},
    {{"skylake", "x86_64", 22}, "GenuineIntel:6:78 GenuineIntel:6:94 GenuineIntel:6:142 GenuineIntel:6:158"},
    {{"znver2", "x86_64", 23}, "AuthenticAMD:23:49 AuthenticAMD:23:96 AuthenticAMD:23:113"},
    {{"znver3", "x86_64", 24}, "AuthenticAMD:25:1 AuthenticAMD:25:33 AuthenticAMD:25:80"},
    {{"skylake-avx512", "x86_64", 30}, "GenuineIntel:6:85"},
    {{"icelake-server", "x86_64", 31}, "GenuineIntel:6:106 GenuineIntel:6:108"},
    {{"sapphirerapids", "x86_64", 32}, "GenuineIntel:6:143"},
    {{"emeraldrapids", "x86_64", 33}, "GenuineIntel:6:207"},
    {{"znver4", "x86_64", 34}, "AuthenticAMD:25:17 AuthenticAMD:25:97 AuthenticAMD:25:116 AuthenticAMD:25:160"},
};

bool has_id(const char* ids, const std::string& id) {
  for (const char* p = ids; *p != '\0';) {
    const char* end = std::strchr(p, ' ');
    const std::size_t n = end == nullptr ? std::strlen(p) : static_cast<std::size_t>(end - p);
    if (n == id.size() && id.compare(0, n, p, n) == 0) return true;
    p += n + (end == nullptr ? 0 : 1);
  }
  return false;
}

bool all_of(const std::string& s, std::size_t from, std::size_t to, bool (*ok)(char)) {
  for (std::size_t i = from; i < to; ++i) {
    if (!ok(s[i])) return false;
  }
  return true;
}

bool lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool any_hex(char c) { return lower_hex(c) || (c >= 'A' && c <= 'F'); }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool alnum(char c) { return digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool word_char(char c) { return alnum(c) || c == '.' || c == '_' || c == '~' || c == '-'; }

// probe_identity._DECIMAL: 0|[1-9][0-9]{0,5}.
bool decimal(const std::string& s) {
  if (s.empty() || s.size() > 6 || !all_of(s, 0, s.size(), digit)) return false;
  return s.size() == 1 || s[0] != '0';
}

// probe_identity._HEX: 0x[0-9a-fA-F]{1,16}, its value in `out`.
bool hex_value(const std::string& s, std::uint64_t& out) {
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || s[1] != 'x' || !all_of(s, 2, s.size(), any_hex)) return false;
  out = 0;
  for (std::size_t i = 2; i < s.size(); ++i) {
    const char c = s[i];
    out = out * 16 + static_cast<std::uint64_t>(digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return true;
}

}  // namespace

const Core* core_by_name(const std::string& name) {
  for (const CoreRow& row : kCores) {
    if (name == row.core.name) return &row.core;
  }
  return nullptr;
}

const Core* core_by_id(const std::string& id) {
  for (const CoreRow& row : kCores) {
    if (has_id(row.ids, id)) return &row.core;
  }
  return nullptr;
}

bool is_core_id(const std::string& w, const std::string& arch) {
  if (arch == "aarch64") {  // 0x[0-9a-f]{2}:0x[0-9a-f]{3}
    return w.size() == 10 && w.compare(0, 2, "0x") == 0 && all_of(w, 2, 4, lower_hex) && w.compare(4, 3, ":0x") == 0 &&
           all_of(w, 7, 10, lower_hex);
  }
  const std::size_t a = w.find(':');
  const std::size_t b = a == std::string::npos ? a : w.find(':', a + 1);
  if (b == std::string::npos || a == 0 || a > 16 || !all_of(w, 0, a, alnum)) return false;
  return decimal(w.substr(a + 1, b - a - 1)) && decimal(w.substr(b + 1));
}

bool is_identity_text(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

std::string read_bounded(const char* path, std::size_t limit) {
  // POSIX reads rather than an ifstream: the first ifstream of a process sets up its locale, a
  // tenth of a millisecond that every run paid before it could load anything.
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "";
  std::string out(std::min<std::size_t>(4096, limit), '\0');  // /proc files report no size
  std::size_t used = 0;
  while (used < limit) {
    if (used == out.size()) out.resize(std::min(out.size() * 2, limit));
    const ssize_t n = ::read(fd, &out[used], out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(used);
  return out;
}

}  // namespace detail

namespace probe {
namespace {

constexpr std::size_t kMaxCores = 64;     // probe_identity.MAX_CORES
constexpr std::size_t kMaxSocWords = 64;  // probe_identity.MAX_SOC_WORDS
constexpr int kMaxCpus = 1024;            // probe_identity.MAX_CPUS
constexpr std::size_t kSmallFile = 64u << 10;
constexpr std::size_t kCpuinfoBytes = 4u << 20;

std::string strip(const std::string& s, const char* chars) {
  const std::size_t a = s.find_first_not_of(chars);
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(chars) - a + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::string arm_id(std::uint64_t implementer, std::uint64_t part) {
  if (implementer > 0xFF || part > 0xFFF) return "";
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%02x:0x%03x", static_cast<unsigned>(implementer), static_cast<unsigned>(part));
  return buf;
}

// probe_identity._core_id over the values of one processor, "" when they are not an id.
std::string core_id(const std::string& arch, const std::vector<std::string>& v) {
  if (arch == "aarch64") {
    std::uint64_t impl = 0, part = 0;
    if (!detail::hex_value(v[0], impl) || !detail::hex_value(v[1], part)) return "";
    return arm_id(impl, part);
  }
  const bool ok = !v[0].empty() && v[0].size() <= 16 && detail::all_of(v[0], 0, v[0].size(), detail::alnum) &&
                  detail::decimal(v[1]) && detail::decimal(v[2]);
  return ok ? v[0] + ":" + v[1] + ":" + v[2] : "";
}

void add_once(std::vector<std::string>& words, const std::string& w, std::size_t limit) {
  if (words.size() < limit && std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
}

}  // namespace

std::string core_word(const std::string& id) {
  const detail::Core* core = detail::core_by_id(id);
  return core != nullptr ? core->name : id;
}

std::string x86_core_id(std::uint32_t ebx, std::uint32_t edx, std::uint32_t ecx, std::uint32_t eax) {
  std::string vendor;
  for (std::uint32_t word : {ebx, edx, ecx}) {
    for (int i = 0; i < 4; ++i) vendor += static_cast<char>((word >> (8 * i)) & 0xFF);
  }
  if (!detail::all_of(vendor, 0, vendor.size(), detail::alnum)) return "";
  std::uint32_t family = (eax >> 8) & 0xF;
  std::uint32_t model = (eax >> 4) & 0xF;
  if (family == 0xF) family += (eax >> 20) & 0xFF;
  if (family >= 6) model += ((eax >> 16) & 0xF) << 4;
  return vendor + ":" + std::to_string(family) + ":" + std::to_string(model);
}

std::vector<std::string> cpuinfo_cores(const std::string& cpuinfo, const std::string& arch) {
  const std::vector<std::string> keys = arch == "aarch64" ? std::vector<std::string>{"CPU implementer", "CPU part"}
                                                          : std::vector<std::string>{"vendor_id", "cpu family", "model"};
  std::vector<std::string> found;
  std::vector<std::string> values(keys.size());
  std::vector<bool> seen(keys.size(), false);
  std::size_t have = 0;
  for (const std::string& line : split(cpuinfo, '\n')) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = strip(line.substr(0, colon), " \t");
    const auto k = std::find(keys.begin(), keys.end(), name);
    if (k == keys.end()) continue;
    const std::size_t i = static_cast<std::size_t>(k - keys.begin());
    values[i] = strip(line.substr(colon + 1), " \t\r");
    if (!seen[i]) ++have;
    seen[i] = true;
    if (have < keys.size()) continue;
    const std::string id = core_id(arch, values);
    std::fill(seen.begin(), seen.end(), false);
    have = 0;
    if (!id.empty()) add_once(found, core_word(id), kMaxCores);
  }
  return found;
}

std::string os_release_of(const std::string& text) {
  std::string id, version;
  bool has_id = false, has_version = false;
  for (const std::string& line : split(text, '\n')) {
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    if (key != "ID" && key != "VERSION_ID") continue;
    std::string value = strip(line.substr(eq + 1), " \t\r");
    if (value.size() >= 2 && value.front() == value.back() && (value[0] == '"' || value[0] == '\'')) {
      value = value.substr(1, value.size() - 2);
    }
    (key == "ID" ? id : version) = value;
    (key == "ID" ? has_id : has_version) = true;
  }
  const auto word = [](const std::string& s) {
    return !s.empty() && s.size() <= 64 && detail::all_of(s, 0, s.size(), detail::word_char);
  };
  if (!has_id || !word(id)) return "";
  return has_version && word(version) ? id + " " + version : id;
}

namespace {

std::vector<std::string> arm_sysfs_cores(const std::string& root) {
  std::vector<std::string> found;
  for (int n = 0; n < kMaxCpus; ++n) {
    const std::string cpu = root + "sys/devices/system/cpu/cpu" + std::to_string(n);
    struct stat sb;
    if (stat(cpu.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) break;
    const std::string value =
        strip(detail::read_bounded((cpu + "/regs/identification/midr_el1").c_str(), 64), " \t\r\n");
    std::uint64_t midr = 0;
    if (!detail::hex_value(value, midr)) continue;
    const std::string id = arm_id(midr >> 24 & 0xFF, midr >> 4 & 0xFFF);
    if (!id.empty()) add_once(found, core_word(id), kMaxCores);
  }
  return found;
}

std::vector<std::string> soc_words(const std::string& root) {
  std::vector<std::string> values;
  for (const std::string& w : split(detail::read_bounded((root + "proc/device-tree/compatible").c_str(), kSmallFile), '\0')) {
    values.push_back(strip(w, " \t\n"));
  }
  for (const char* name : {"machine", "family", "soc_id"}) {
    const std::string path = root + "sys/devices/soc0/" + name;
    if (access(path.c_str(), R_OK) != 0) continue;
    values.push_back(strip(split(detail::read_bounded(path.c_str(), kSmallFile), '\n')[0], " \t\r"));
  }
  std::vector<std::string> words;
  for (const std::string& v : values) {
    if (detail::is_identity_text(v)) add_once(words, v, kMaxSocWords);
  }
  return words;
}

}  // namespace

void read_identity(const std::string& root_dir, DeviceProfile& p, bool read_cores) {
  const std::string root = root_dir.empty() || root_dir.back() == '/' ? root_dir : root_dir + "/";
  std::vector<std::string> cores;
  if (read_cores) cores = cpuinfo_cores(detail::read_bounded((root + "proc/cpuinfo").c_str(), kCpuinfoBytes), p.arch);
  if (read_cores && cores.empty() && p.arch == "aarch64") cores = arm_sysfs_cores(root);
  if (!cores.empty()) p.cpu_cores = std::set<std::string>(cores.begin(), cores.end());
  std::string release_path = root + "etc/os-release";
  if (access(release_path.c_str(), R_OK) != 0) release_path = root + "usr/lib/os-release";
  if (access(release_path.c_str(), R_OK) == 0) {
    const std::string release = os_release_of(detail::read_bounded(release_path.c_str(), kSmallFile));
    if (!release.empty()) p.os_release = release;
  }
  const std::string model = detail::read_bounded((root + "proc/device-tree/model").c_str(), kSmallFile);
  const std::string machine = strip(model.substr(0, model.find('\0')), " \t\n");
  if (detail::is_identity_text(machine)) p.machine = machine;
  const std::vector<std::string> soc = soc_words(root);
  if (!soc.empty()) p.soc = std::set<std::string>(soc.begin(), soc.end());
}

}  // namespace probe
}  // namespace fatpte
