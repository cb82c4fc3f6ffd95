// device.hpp: the device profile of the running host, probed the way fatpte/device/host.py does
// it, and printed in the canonical JSON of specs/device-profile.md, byte for byte what Python's
// `DeviceProfile.host().to_json_text()` (and `fatpte device --json`) prints.
//
// Probing never fails: what cannot be read is "absent" (no feature, memory 0, no accelerator),
// which only makes selection more conservative. The decoders are pure functions over the raw
// values (cpuid words, hwcaps, /proc text, driver answers) so tests can feed recorded samples.
#ifndef FATPTE_DEVICE_HPP_
#define FATPTE_DEVICE_HPP_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fatpte/cpu_words.hpp"
#include "fatpte/vendor_search.hpp"

namespace fatpte {

struct Accelerator {
  std::string kind;     // "cuda" | "metal" | "vulkan" | "opencl" | "npu" | "openvino"
  std::string name;     // printable ASCII
  std::string version;  // cuda: compute capability "X.Y"; others: API version
  std::uint64_t memory_bytes = 0;
  // A vendor runtime's name of the device ("CPU", "GPU.0", "NPU"; empty: none) and the
  // capabilities it reports of it, lower-cased ("fp16", "int8"), sorted, each once
  // (specs/device-profile.md 4.1).
  std::string device;
  std::vector<std::string> capabilities;
};

struct DeviceProfile {
  std::string name;
  std::string os;    // "linux" | "android" | "macos" | "ios" | "windows"
  std::string arch;  // "x86_64" | "aarch64"
  std::set<std::string> cpu_features;
  std::vector<Accelerator> accelerators;
  std::uint64_t memory_bytes = 0;
  std::map<std::string, std::uint32_t> backends;  // backend id -> ABI version
  // The ExecuTorch backend ids registered in the device's runtime ("XnnpackBackend", ...); empty:
  // none (portable operators only); absent: not known (specs/device-profile.md section 5.1).
  std::optional<std::set<std::string>> executorch_backends;
  // Identity (specs/device-profile.md section 2.1), each absent when not known: the CPU's cores (a
  // core table name, or the id of a core it does not name), the kernel release, the distribution
  // ("debian 12"), the machine model and the SoC's words (device-tree compatible strings,
  // /sys/devices/soc0 values).
  std::optional<std::set<std::string>> cpu_cores;
  std::optional<std::string> kernel;
  std::optional<std::string> os_release;
  std::optional<std::string> machine;
  std::optional<std::set<std::string>> soc;
  // The documents the profile's facts come from, in the writer's order; absent: none cited
  // (specs/device-profile.md section 2).
  std::optional<std::vector<std::string>> sources;
};

// json.dumps(profile.to_json(), indent=2) + "\n": keys in the canonical order, features and
// backends sorted.
std::string canonical_json(const DeviceProfile& profile);

// Which facts of the machine a probe reads. Each costs start-up time that selection only needs
// when some entry's requirement reads the fact: the cpuid leaves (each a VM exit under a
// hypervisor, 10-15 us apiece measured), /proc/meminfo, and the search for the CUDA driver (about
// 0.2 ms of failed opens where there is none). What is not read is absent: no feature, memory 0,
// no accelerator. The name, os and arch are always set.
struct ProbeScope {
  bool cpu_features = true;
  bool memory = true;
  bool accelerators = true;
  bool identity = true;  // cpu_cores, kernel, os_release, machine, soc: a few small files
  // With accelerators: the caller's paths of vendor runtimes (LoadOptions::vendor_runtimes, name
  // -> library; "" withholds one), searched first (specs/device-profile.md 9.1).
  std::map<std::string, std::string> vendor_runtimes;
  // With accelerators: which vendor runtimes' devices to ask for. Absent: every device of every
  // runtime (what --device-json prints). Present: only the runtimes it names, each only for the
  // device types in its set ("CPU", "GPU"; "" for every device of it): a runtime asked for one
  // device type loads that plugin alone, where listing every device loads them all (OpenVINO:
  // about 4 ms more, measured).
  std::optional<std::map<std::string, std::set<std::string>>> vendor_devices;
};

// Probe the running machine; the profile is named "host".
DeviceProfile probe_host();
// Only the facts of `scope` (select.hpp's probe_scope() says which a container's entries read).
DeviceProfile probe_host(const ProbeScope& scope);
// The same, and with accelerators where each vendor runtime looked for was found or every place
// looked, appended to `searched` in the table's order: a load's lines and report reuse it rather
// than search again.
DeviceProfile probe_host(const ProbeScope& scope, std::vector<VendorRuntimeSearch>* searched);
// probe_host() without looking for accelerators when `accelerators` is false.
DeviceProfile probe_host(bool accelerators);

// The planned memory a loaded method may reserve unless the caller says otherwise
// (LoadOptions::planned_memory_limit, the fat delegate): half of `memory_bytes`, and never more
// than kPlannedMemoryCeiling; the ceiling itself when the memory is unknown (0). Planned memory is
// reserved, not committed (loader/README.md, "Memory"), so the limit is what a program may come to
// use once it writes its buffers: a small file declaring more is refused before anything runs,
// rather than a device's memory running out while it runs.
constexpr std::uint64_t kPlannedMemoryCeiling = std::uint64_t{64} << 30;
std::uint64_t planned_memory_limit_for(std::uint64_t memory_bytes);
// planned_memory_limit_for(this machine's memory as probe_host reports it), probed once a process.
std::uint64_t default_planned_memory_limit();
// Where default_planned_memory_limit() comes from, for a reason: "the default limit, half of this
// device's 7.6 GiB of memory (at most 64.0 GiB)".
std::string default_planned_memory_origin();

namespace probe {

// x86 features of the vocabulary: a vector feature counts only when the OS saves its register
// state (XCR0: SSE+AVX for AVX, plus opmask/ZMM for AVX-512, plus tile config/data for AMX).
std::set<std::string> x86_features(const X86Words& w);
// arm64 features from getauxval(AT_HWCAP) and getauxval(AT_HWCAP2).
std::set<std::string> arm_hwcap_features(std::uint64_t hwcap, std::uint64_t hwcap2);
// MemTotal of /proc/meminfo text in bytes; 0 when absent or malformed.
std::uint64_t meminfo_total(const std::string& meminfo);
// A driver-reported device name as printable ASCII, or "CUDA device N" when nothing is left.
std::string printable_name(const std::string& raw, int ordinal);

// The CUDA driver API entry points the probe calls, so tests can pass fakes.
struct CudaDriver {
  int (*cuInit)(unsigned int) = nullptr;
  int (*cuDeviceGetCount)(int*) = nullptr;
  int (*cuDeviceGet)(int*, int) = nullptr;
  int (*cuDeviceGetName)(char*, int, int) = nullptr;
  int (*cuDeviceGetAttribute)(int*, int, int) = nullptr;
  int (*cuDeviceTotalMem_v2)(std::size_t*, int) = nullptr;
};
// One accelerator per device the driver reports, in ordinal order; none on any failure.
std::vector<Accelerator> cuda_accelerators(const CudaDriver& driver);

}  // namespace probe
}  // namespace fatpte

#endif  // FATPTE_DEVICE_HPP_
