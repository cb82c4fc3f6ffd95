// The host probe (mirrors fatpte/device/host.py, probe_linux.py, probe_macos.py, probe_cuda.py)
// and the canonical JSON printer (fatpte/device/profile.py canonical_text).
#include "fatpte/device.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "common/text.hpp"
#include "vendor/openvino.hpp"
#include "vendor/runtimes.hpp"
#include "device/identity.hpp"

#if defined(__linux__) || defined(__APPLE__)
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#endif
#if defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FATPTE_X86 1
#include <cpuid.h>
#endif

namespace fatpte {

// ---- canonical JSON ----

namespace {

// Each piece appended in place (detail::append_json_quoted): joined temporaries cost a receipt,
// which prints the profile, more than its content (callgrind, issue 38).
void add(std::string& o, const char* text) { o.append(text); }

void add_quoted(std::string& o, const char* before, const std::string& value, const char* after) {
  o.append(before);
  detail::append_json_quoted(o, value);
  o.append(after);
}

void add_number(std::string& o, const char* before, std::uint64_t value, const char* after) {
  o.append(before);
  o += std::to_string(value);
  o.append(after);
}

// An accelerator's optional `device` and `capabilities` (printed only when set), after its
// `memory_bytes` line, as json.dumps(indent=2) prints them at that depth.
void append_vendor_keys(std::string& o, const Accelerator& a) {
  if (!a.device.empty()) add_quoted(o, ",\n      \"device\": ", a.device, "");
  if (a.capabilities.empty()) return;
  add(o, ",\n      \"capabilities\": [\n");
  for (std::size_t k = 0; k < a.capabilities.size(); ++k) {
    add_quoted(o, "        ", a.capabilities[k], k + 1 < a.capabilities.size() ? ",\n" : "\n");
  }
  add(o, "      ]");
}

// `  "key": [...]` of words in their order (a std::set's: sorted bytewise, like sorted()), as
// json.dumps(indent=2) prints a list.
template <typename Words>
void add_words(std::string& o, const char* key, const Words& words) {
  add(o, "  \"");
  add(o, key);
  if (words.empty()) {
    add(o, "\": []");
    return;
  }
  add(o, "\": [\n");
  std::size_t k = 0;
  for (const std::string& w : words) add_quoted(o, "    ", w, ++k < words.size() ? ",\n" : "\n");
  add(o, "  ]");
}

void add_accelerators(std::string& o, const std::vector<Accelerator>& accelerators) {
  if (accelerators.empty()) {
    add(o, "  \"accelerators\": [],\n");
    return;
  }
  add(o, "  \"accelerators\": [\n");
  for (std::size_t i = 0; i < accelerators.size(); ++i) {
    const Accelerator& a = accelerators[i];
    add_quoted(o, "    {\n      \"kind\": ", a.kind, ",\n");
    add_quoted(o, "      \"name\": ", a.name, ",\n");
    add_quoted(o, "      \"version\": ", a.version, ",\n");
    add_number(o, "      \"memory_bytes\": ", a.memory_bytes, "");
    append_vendor_keys(o, a);
    add(o, i + 1 < accelerators.size() ? "\n    },\n" : "\n    }\n");
  }
  add(o, "  ],\n");
}

// The members from `backends` on, joined by ",\n": which is last depends on which optional keys
// the profile has. Sets are sorted bytewise, like sorted(); each optional key only when known.
void add_rest(std::string& o, const DeviceProfile& p) {
  if (p.backends.empty()) {
    add(o, "  \"backends\": {}");
  } else {
    add(o, "  \"backends\": {\n");
    std::size_t k = 0;
    for (const auto& kv : p.backends) {
      add_quoted(o, "    ", kv.first, ": ");
      add_number(o, "", kv.second, ++k < p.backends.size() ? ",\n" : "\n");
    }
    add(o, "  }");
  }
  if (p.executorch_backends) add_words(o.append(",\n"), "executorch_backends", *p.executorch_backends);
  if (p.cpu_cores) add_words(o.append(",\n"), "cpu_cores", *p.cpu_cores);
  if (p.kernel) add_quoted(o, ",\n  \"kernel\": ", *p.kernel, "");
  if (p.os_release) add_quoted(o, ",\n  \"os_release\": ", *p.os_release, "");
  if (p.machine) add_quoted(o, ",\n  \"machine\": ", *p.machine, "");
  if (p.soc) add_words(o.append(",\n"), "soc", *p.soc);
  if (p.sources) add_words(o.append(",\n"), "sources", *p.sources);  // in the profile's order
}

}  // namespace

std::string canonical_json(const DeviceProfile& p) {
  // Appended to a string rather than streamed: a process's first ostringstream sets up its
  // locale, tens of microseconds that a run of fatpte-run paid for nothing else.
  std::string o;
  o.reserve(512);
  add_quoted(o, "{\n  \"name\": ", p.name, ",\n");
  add_quoted(o, "  \"os\": ", p.os, ",\n");
  add_quoted(o, "  \"arch\": ", p.arch, ",\n");
  if (p.cpu_features.empty()) {
    add(o, "  \"cpu_features\": [],\n");
  } else {
    add(o, "  \"cpu_features\": [\n");
    std::size_t k = 0;
    for (const std::string& f : p.cpu_features) {  // std::set: sorted bytewise, like sorted()
      add_quoted(o, "    ", f, ++k < p.cpu_features.size() ? ",\n" : "\n");
    }
    add(o, "  ],\n");
  }
  add_accelerators(o, p.accelerators);
  add_number(o, "  \"memory_bytes\": ", p.memory_bytes, ",\n");
  add_rest(o, p);
  add(o, "\n}\n");
  return o;
}

namespace probe {


std::set<std::string> x86_features(const X86Words& w) {
  std::set<std::string> out;
  if (w.max_leaf < 1) return out;
  const auto bit = [](std::uint64_t word, int b) { return ((word >> b) & 1u) != 0; };
  if (bit(w.leaf1_ecx, 20)) out.insert("sse4_2");
  const bool osxsave = bit(w.leaf1_ecx, 27);
  const std::uint64_t xcr0 = osxsave ? w.xcr0 : 0;
  // XCR0 bit 1 SSE, 2 AVX (YMM upper halves); 5-7 opmask, ZMM upper halves, ZMM16-31;
  // 17-18 AMX tile config and tile data.
  const bool avx_state = (xcr0 & 0x6) == 0x6;
  const bool avx512_state = (xcr0 & 0xE6) == 0xE6;
  const bool amx_state = (xcr0 & 0x60000) == 0x60000;
  if (avx_state) {
    if (bit(w.leaf1_ecx, 28)) out.insert("avx");
    if (bit(w.leaf1_ecx, 12)) out.insert("fma");
    if (bit(w.leaf1_ecx, 29)) out.insert("f16c");
  }
  if (w.max_leaf < 7) return out;
  if (avx_state && bit(w.leaf7_ebx, 5)) out.insert("avx2");
  if (avx512_state) {
    if (bit(w.leaf7_ebx, 16)) out.insert("avx512f");
    if (bit(w.leaf7_ebx, 30)) out.insert("avx512bw");
    if (bit(w.leaf7_ebx, 31)) out.insert("avx512vl");
    if (bit(w.leaf7_ecx, 11)) out.insert("avx512_vnni");
    if (bit(w.leaf7_edx, 23)) out.insert("avx512_fp16");
    if (w.leaf7_eax >= 1 && bit(w.leaf7_1_eax, 5)) out.insert("avx512_bf16");
  }
  if (amx_state) {
    if (bit(w.leaf7_edx, 22)) out.insert("amx_bf16");
    if (bit(w.leaf7_edx, 24)) out.insert("amx_tile");
    if (bit(w.leaf7_edx, 25)) out.insert("amx_int8");
  }
  return out;
}

std::set<std::string> arm_hwcap_features(std::uint64_t hwcap, std::uint64_t hwcap2) {
  // arch/arm64/include/uapi/asm/hwcap.h, as fatpte/device/probe_linux.py ARM_HWCAP_BITS.
  struct Bit {
    const char* feature;
    bool second;
    int bit;
  };
  static const Bit kBits[] = {{"asimd", false, 1},  {"fphp", false, 9}, {"asimdhp", false, 10},
                              {"asimddp", false, 20}, {"sve", false, 22}, {"sve2", true, 1},
                              {"i8mm", true, 13},   {"bf16", true, 14}, {"sme", true, 23}};
  std::set<std::string> out;
  for (const Bit& b : kBits) {
    if (((b.second ? hwcap2 : hwcap) >> b.bit) & 1u) out.insert(b.feature);
  }
  return out;
}

std::uint64_t meminfo_total(const std::string& meminfo) {
  // Parsed by hand, not with string streams: their locale set-up cost each run a tenth of a
  // millisecond before it could load anything.
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  std::size_t start = 0;
  while (start < meminfo.size()) {
    std::size_t end = meminfo.find('\n', start);
    if (end == std::string::npos) end = meminfo.size();
    const std::string line = meminfo.substr(start, end - start);
    start = end + 1;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    const auto a = name.find_first_not_of(" \t");
    const auto b = name.find_last_not_of(" \t");
    if (a == std::string::npos || name.substr(a, b - a + 1) != "MemTotal") continue;
    // The words after the colon: exactly a number and "kB".
    std::vector<std::string> words;
    for (std::size_t i = colon + 1; i < line.size();) {
      while (i < line.size() && space(line[i])) ++i;
      const std::size_t w = i;
      while (i < line.size() && !space(line[i])) ++i;
      if (i > w) words.push_back(line.substr(w, i - w));
    }
    if (words.size() != 2 || words[1] != "kB") return 0;
    std::uint64_t kb = 0;
    for (char c : words[0]) {
      if (c < '0' || c > '9' || kb > (~std::uint64_t{0} - 9) / 10 / 1024) return 0;
      kb = kb * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return kb * 1024;
  }
  return 0;
}

std::string printable_name(const std::string& raw, int ordinal) {
  return vendor::printable_device_name(raw, "CUDA device " + std::to_string(ordinal));
}

std::vector<Accelerator> cuda_accelerators(const CudaDriver& d) {
  constexpr int kSuccess = 0;
  constexpr int kMaxDevices = 64;  // probe_cuda.MAX_DEVICES
  constexpr int kNameSize = 256;   // probe_cuda.NAME_BUFFER_SIZE
  std::vector<Accelerator> out;
  if (!d.cuInit || !d.cuDeviceGetCount || !d.cuDeviceGet || !d.cuDeviceGetName || !d.cuDeviceGetAttribute ||
      !d.cuDeviceTotalMem_v2) {
    return out;
  }
  if (d.cuInit(0) != kSuccess) return out;
  int count = 0;
  if (d.cuDeviceGetCount(&count) != kSuccess) return out;
  for (int ordinal = 0; ordinal < count && ordinal < kMaxDevices; ++ordinal) {
    // A device whose queries fail is left out; the others are still usable.
    int dev = 0;
    if (d.cuDeviceGet(&dev, ordinal) != kSuccess) continue;
    int major = -1, minor = -1;
    if (d.cuDeviceGetAttribute(&major, 75, dev) != kSuccess) continue;  // COMPUTE_CAPABILITY_MAJOR
    if (d.cuDeviceGetAttribute(&minor, 76, dev) != kSuccess) continue;  // COMPUTE_CAPABILITY_MINOR
    if (major < 0 || minor < 0) continue;
    std::size_t memory = 0;
    if (d.cuDeviceTotalMem_v2(&memory, dev) != kSuccess) continue;
    char name[kNameSize + 1] = {0};
    if (d.cuDeviceGetName(name, kNameSize, dev) != kSuccess) continue;
    name[kNameSize] = '\0';
    Accelerator a;
    a.kind = "cuda";
    a.name = printable_name(std::string(name, strnlen(name, kNameSize)), ordinal);
    a.version = std::to_string(major) + "." + std::to_string(minor);
    a.memory_bytes = memory;
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace probe

namespace {

std::vector<Accelerator> probe_cuda() {
#if defined(__linux__)
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return {};
  probe::CudaDriver d;
  // POSIX guarantees that a data pointer from dlsym converts to a function pointer.
  d.cuInit = reinterpret_cast<int (*)(unsigned)>(dlsym(lib, "cuInit"));
  d.cuDeviceGetCount = reinterpret_cast<int (*)(int*)>(dlsym(lib, "cuDeviceGetCount"));
  d.cuDeviceGet = reinterpret_cast<int (*)(int*, int)>(dlsym(lib, "cuDeviceGet"));
  d.cuDeviceGetName = reinterpret_cast<int (*)(char*, int, int)>(dlsym(lib, "cuDeviceGetName"));
  d.cuDeviceGetAttribute = reinterpret_cast<int (*)(int*, int, int)>(dlsym(lib, "cuDeviceGetAttribute"));
  d.cuDeviceTotalMem_v2 = reinterpret_cast<int (*)(std::size_t*, int)>(dlsym(lib, "cuDeviceTotalMem_v2"));
  std::vector<Accelerator> out = probe::cuda_accelerators(d);
  // The driver stays loaded: unloading CUDA after cuInit is unsupported.
  return out;
#else
  return {};
#endif
}

#if defined(__APPLE__)
bool sysctl_int(const char* name, std::uint64_t* out) {
  std::uint64_t v = 0;
  std::size_t size = sizeof v;
  if (sysctlbyname(name, &v, &size, nullptr, 0) != 0 || (size != 4 && size != 8)) return false;
  *out = size == 4 ? static_cast<std::uint32_t>(v) : v;
  return true;
}

std::string sysctl_text(const char* name) {
  char buf[4096];
  std::size_t size = sizeof buf;
  if (sysctlbyname(name, buf, &size, nullptr, 0) != 0 || size == 0) return "";
  return std::string(buf, strnlen(buf, size));
}

bool sysctl_flag(const char* name) {
  std::uint64_t v = 0;
  return sysctl_int(name, &v) && v != 0;
}

void probe_macos(DeviceProfile& p) {
  std::uint64_t mem = 0;
  p.memory_bytes = sysctl_int("hw.memsize", &mem) ? mem : 0;
  if (p.arch == "aarch64") {
    struct Key {
      const char* feature;
      const char* a;
      const char* b;
    };
    static const Key kKeys[] = {{"asimd", "hw.optional.AdvSIMD", "hw.optional.neon"},
                                {"fphp", "hw.optional.arm.FEAT_FP16", "hw.optional.neon_fp16"},
                                {"asimdhp", "hw.optional.arm.FEAT_FP16", "hw.optional.neon_fp16"},
                                {"asimddp", "hw.optional.arm.FEAT_DotProd", nullptr},
                                {"i8mm", "hw.optional.arm.FEAT_I8MM", nullptr},
                                {"bf16", "hw.optional.arm.FEAT_BF16", nullptr},
                                {"sme", "hw.optional.arm.FEAT_SME", nullptr}};
    for (const Key& k : kKeys) {
      if (sysctl_flag(k.a) || (k.b != nullptr && sysctl_flag(k.b))) p.cpu_features.insert(k.feature);
    }
    // The Apple-silicon GPU: Metal version by macOS release (probe_macos.METAL_VERSION_BY_MACOS).
    const std::string release = sysctl_text("kern.osproductversion");
    const int major = std::atoi(release.c_str());
    static const std::pair<int, const char*> kMetal[] = {{11, "2.3"}, {12, "2.4"}, {13, "3.0"},
                                                         {14, "3.1"}, {15, "3.2"}, {26, "4.0"}};
    const char* version = nullptr;
    for (const auto& m : kMetal) {
      if (m.first <= major) version = m.second;
    }
    if (version != nullptr) {
      std::string name;
      for (char c : sysctl_text("machdep.cpu.brand_string")) {
        if (c >= ' ' && c <= '~') name += c;
      }
      const auto a = name.find_first_not_of(' ');
      name = a == std::string::npos ? "" : name.substr(a, name.find_last_not_of(' ') - a + 1).substr(0, 256);
      p.accelerators.push_back(Accelerator{"metal", name.empty() ? "Apple GPU" : name, version, p.memory_bytes, "", {}});
    }
  }
}
#endif

// The identity facts (specs/device-profile.md section 9, "Identity"): the kernel release from
// uname on every POSIX system, the rest from Linux's files.
void probe_identity(DeviceProfile& p) {
#if defined(__linux__) || defined(__APPLE__)
  struct utsname u;
  if (uname(&u) == 0 && detail::is_identity_text(u.release)) p.kernel = std::string(u.release);
#endif
#if defined(__linux__) && defined(FATPTE_X86)
  // cpuid, not /proc/cpuinfo: the kernel samples every CPU's frequency to print that file
  // (milliseconds); the values are the ones it prints (probe::x86_core_id).
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) && a >= 1) {
    const unsigned vb = b, vd = d, vc = c;
    __cpuid(1, a, b, c, d);
    const std::string id = probe::x86_core_id(vb, vd, vc, a);
    if (!id.empty()) p.cpu_cores = std::set<std::string>{probe::core_word(id)};
  }
  probe::read_identity("/", p, false);
#elif defined(__linux__)
  probe::read_identity("/", p);
#endif
}

}  // namespace

DeviceProfile probe_host() { return probe_host(ProbeScope{}); }

DeviceProfile probe_host(bool accelerators) { return probe_host(ProbeScope{true, true, accelerators, true, {}, std::nullopt}); }

DeviceProfile probe_host(const ProbeScope& scope) { return probe_host(scope, nullptr); }

DeviceProfile probe_host(const ProbeScope& scope, std::vector<VendorRuntimeSearch>* searched) {
  DeviceProfile p;
  p.name = "host";
#if defined(__x86_64__)
  p.arch = "x86_64";
#elif defined(__aarch64__)
  p.arch = "aarch64";
#endif
#if defined(__APPLE__)
  p.os = "macos";
#elif defined(__ANDROID__)
  p.os = "android";
#elif defined(__linux__)
  p.os = "linux";
#elif defined(_WIN32)
  p.os = "windows";
#endif
#ifdef FATPTE_X86
  if (scope.cpu_features) p.cpu_features = probe::x86_features(probe::x86_words());
#endif
#if defined(__linux__)
#if defined(__aarch64__)
  if (scope.cpu_features) {
    const probe::ArmWords words = probe::arm_words();
    p.cpu_features = probe::arm_hwcap_features(words.hwcap, words.hwcap2);
  }
#endif
  if (scope.memory) p.memory_bytes = probe::meminfo_total(detail::read_bounded("/proc/meminfo", 4u << 20));
  if (scope.memory && p.memory_bytes == 0) {
    const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && size > 0) p.memory_bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(size);
  }
  // Android runs a Linux kernel; its userland is told by ANDROID_ROOT or /system/build.prop.
  struct stat sb;
  if (std::getenv("ANDROID_ROOT") != nullptr || (stat("/system/build.prop", &sb) == 0 && S_ISREG(sb.st_mode))) {
    p.os = "android";
  }
#endif
#if defined(__APPLE__)
#ifdef FATPTE_X86
  p.cpu_features.clear();  // Python reads hw.optional.* on Intel Macs; cpuid gives the same bits
  p.cpu_features = probe::x86_features(probe::x86_words());
#endif
  probe_macos(p);
#endif
  if (!scope.cpu_features) p.cpu_features.clear();
  if (!scope.memory) p.memory_bytes = 0;
  if (scope.identity) probe_identity(p);
  if (!scope.accelerators) return p;
  std::vector<Accelerator> cuda = probe_cuda();
  p.accelerators.insert(p.accelerators.end(), cuda.begin(), cuda.end());
  // The devices each vendor runtime found lists, in its order, after any other accelerators.
  for (vendor::Probed& found : vendor::probe_runtimes(scope.vendor_runtimes,
                                                      scope.vendor_devices ? &*scope.vendor_devices : nullptr)) {
    if (searched != nullptr) searched->push_back(found.where);
    for (vendor::VendorDevice& d : found.devices) {
      p.accelerators.push_back(Accelerator{found.runtime->name, std::move(d.name), std::move(d.version),
                                           d.memory_bytes, std::move(d.device), std::move(d.capabilities)});
    }
  }
  return p;
}

std::uint64_t planned_memory_limit_for(std::uint64_t memory_bytes) {
  if (memory_bytes == 0) return kPlannedMemoryCeiling;
  return std::min(memory_bytes / 2, kPlannedMemoryCeiling);
}

namespace {

std::uint64_t probed_memory() {
  static const std::uint64_t memory = probe_host(ProbeScope{false, true, false, false, {}, std::nullopt}).memory_bytes;
  return memory;
}

}  // namespace

std::uint64_t default_planned_memory_limit() { return planned_memory_limit_for(probed_memory()); }

std::string default_planned_memory_origin() {
  const std::uint64_t memory = probed_memory();
  const auto gib = [](std::uint64_t n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(n) / (std::uint64_t{1} << 30));
    return std::string(buf);
  };
  if (memory == 0) return "the default limit, " + gib(kPlannedMemoryCeiling) + " (this device's memory is unknown)";
  return "the default limit, half of this device's " + gib(memory) + " of memory (at most " +
         gib(kPlannedMemoryCeiling) + ")";
}

}  // namespace fatpte
