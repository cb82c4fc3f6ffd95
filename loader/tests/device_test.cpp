// The host probe's decoders over recorded values, and the canonical JSON printer's exact bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "device/identity.hpp"
#include "fatpte/device.hpp"
#include "fatpte/profile.hpp"

namespace fatpte {
namespace {

using probe::X86Words;

X86Words sapphire_rapids() {
  X86Words w;
  w.max_leaf = 0x20;
  w.leaf1_ecx = (1u << 20) | (1u << 27) | (1u << 28) | (1u << 12) | (1u << 29);
  w.leaf7_eax = 1;
  w.leaf7_ebx = (1u << 5) | (1u << 16) | (1u << 30) | (1u << 31);
  w.leaf7_ecx = 1u << 11;
  w.leaf7_edx = (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25);
  w.leaf7_1_eax = 1u << 5;
  w.xcr0 = 0x602E7;  // x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM, PKRU, tile config, tile data
  return w;
}

TEST(X86Features, EveryFeatureWhenTheOsSavesEveryState) {
  const std::set<std::string> want = {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw",
                                      "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
                                      "amx_int8", "amx_bf16"};
  EXPECT_EQ(probe::x86_features(sapphire_rapids()), want);
}

TEST(X86Features, Avx512AndAmxNeedTheirStateInXcr0) {
  X86Words w = sapphire_rapids();
  w.xcr0 = 0x7;  // the OS saves SSE and AVX state only
  EXPECT_EQ(probe::x86_features(w), (std::set<std::string>{"sse4_2", "avx", "avx2", "fma", "f16c"}));
  w.xcr0 = 0xE7;  // AVX-512 but not AMX
  EXPECT_EQ(probe::x86_features(w).count("avx512f"), 1u);
  EXPECT_EQ(probe::x86_features(w).count("amx_tile"), 0u);
}

TEST(X86Features, NoOsxsaveMeansNoVectorState) {
  X86Words w = sapphire_rapids();
  w.leaf1_ecx &= ~(1u << 27);  // xcr0 is then not readable and ignored
  EXPECT_EQ(probe::x86_features(w), (std::set<std::string>{"sse4_2"}));
  w.max_leaf = 0;
  EXPECT_TRUE(probe::x86_features(w).empty());
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
TEST(X86Words, WhatGlibcKeptIsWhatCpuidSays) {
  // x86_words() reads glibc's record where there is one; it must be this CPU's cpuid, bit for bit.
  const X86Words kept = probe::x86_words(), read = probe::x86_words_cpuid();
  EXPECT_EQ(kept.leaf1_ecx, read.leaf1_ecx);
  EXPECT_EQ(kept.leaf7_eax, read.max_leaf >= 7 ? read.leaf7_eax : 0u);
  EXPECT_EQ(kept.leaf7_ebx, read.leaf7_ebx);
  EXPECT_EQ(kept.leaf7_ecx, read.leaf7_ecx);
  EXPECT_EQ(kept.leaf7_edx, read.leaf7_edx);
  EXPECT_EQ(kept.leaf7_1_eax, read.leaf7_1_eax);
  EXPECT_EQ(kept.xcr0, read.xcr0);
  EXPECT_EQ(probe::x86_features(kept), probe::x86_features(read));
}
#endif

TEST(ArmHwcaps, BitsOfBothWords) {
  const std::uint64_t hwcap = (1u << 1) | (1u << 20) | (1u << 22);
  const std::uint64_t hwcap2 = (1u << 1) | (1u << 14);
  EXPECT_EQ(probe::arm_hwcap_features(hwcap, hwcap2),
            (std::set<std::string>{"asimd", "asimddp", "sve", "sve2", "bf16"}));
}

TEST(Meminfo, MemTotalInKibibytes) {
  EXPECT_EQ(probe::meminfo_total("MemFree:  5 kB\nMemTotal:       16384 kB\n"), 16384u * 1024);
  EXPECT_EQ(probe::meminfo_total("MemTotal: 12 MB\n"), 0u);
  EXPECT_EQ(probe::meminfo_total("MemTotal: x kB\n"), 0u);
  EXPECT_EQ(probe::meminfo_total(""), 0u);
}

// Issue 42, M1: planned memory a file may ask for is bounded by the device's (half), never more
// than 64 GiB, and 64 GiB where the memory is unknown.
TEST(PlannedMemory, HalfTheDevicesMemoryAtMost64GiB) {
  const std::uint64_t gib = std::uint64_t{1} << 30;
  EXPECT_EQ(fatpte::planned_memory_limit_for(4 * gib), 2 * gib);  // a 4 GB phone: 2 GiB
  EXPECT_EQ(fatpte::planned_memory_limit_for(3 * gib + 1), (3 * gib + 1) / 2);
  EXPECT_EQ(fatpte::planned_memory_limit_for(128 * gib), 64 * gib);
  EXPECT_EQ(fatpte::planned_memory_limit_for(~std::uint64_t{0}), 64 * gib);
  EXPECT_EQ(fatpte::planned_memory_limit_for(0), 64 * gib);
  EXPECT_EQ(fatpte::kPlannedMemoryCeiling, 64 * gib);
  const std::uint64_t probed = fatpte::probe_host(fatpte::ProbeScope{false, true, false, false, {}, std::nullopt}).memory_bytes;
  EXPECT_EQ(fatpte::default_planned_memory_limit(), fatpte::planned_memory_limit_for(probed));
  EXPECT_NE(fatpte::default_planned_memory_origin().find("the default limit"), std::string::npos);
}

TEST(PrintableName, LikePythonsReplacement) {
  EXPECT_EQ(probe::printable_name("  NVIDIA H100 80GB HBM3 ", 0), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(probe::printable_name("GPU\xc3\xa9\t", 0), "GPU??");
  EXPECT_EQ(probe::printable_name("   ", 3), "CUDA device 3");
}

// A fake driver: two devices, the second one's memory query fails and is left out.
int fake_init(unsigned) { return 0; }
int fake_count(int* n) { *n = 2; return 0; }
int fake_get(int* dev, int ordinal) { *dev = ordinal; return 0; }
int fake_name(char* buf, int len, int dev) {
  std::snprintf(buf, static_cast<std::size_t>(len), "Fake GPU %d", dev);
  return 0;
}
int fake_attr(int* v, int attr, int) { *v = attr == 75 ? 8 : 6; return 0; }
int fake_mem(std::size_t* m, int dev) {
  *m = std::size_t{1} << 34;
  return dev == 1 ? 2 : 0;
}

TEST(Cuda, OneAcceleratorPerAnsweringDevice) {
  probe::CudaDriver d;
  d.cuInit = fake_init;
  d.cuDeviceGetCount = fake_count;
  d.cuDeviceGet = fake_get;
  d.cuDeviceGetName = fake_name;
  d.cuDeviceGetAttribute = fake_attr;
  d.cuDeviceTotalMem_v2 = fake_mem;
  auto accs = probe::cuda_accelerators(d);
  ASSERT_EQ(accs.size(), 1u);
  EXPECT_EQ(accs[0].kind, "cuda");
  EXPECT_EQ(accs[0].name, "Fake GPU 0");
  EXPECT_EQ(accs[0].version, "8.6");
  EXPECT_EQ(accs[0].memory_bytes, std::uint64_t{1} << 34);
  d.cuDeviceTotalMem_v2 = nullptr;  // a driver missing an entry point: no device
  EXPECT_TRUE(probe::cuda_accelerators(d).empty());
}

TEST(CanonicalJson, ExactBytesLikeJsonDumpsIndent2) {
  DeviceProfile p;
  p.name = "host";
  p.os = "linux";
  p.arch = "x86_64";
  p.cpu_features = {"avx2", "avx"};
  p.accelerators.push_back(Accelerator{"cuda", "A \"quoted\" GPU", "9.0", 85899345920ull, "", {}});
  p.memory_bytes = 1024;
  p.backends = {{"xnnpack", 2}, {"portable", 1}};
  EXPECT_EQ(canonical_json(p),
            "{\n"
            "  \"name\": \"host\",\n"
            "  \"os\": \"linux\",\n"
            "  \"arch\": \"x86_64\",\n"
            "  \"cpu_features\": [\n"
            "    \"avx\",\n"
            "    \"avx2\"\n"
            "  ],\n"
            "  \"accelerators\": [\n"
            "    {\n"
            "      \"kind\": \"cuda\",\n"
            "      \"name\": \"A \\\"quoted\\\" GPU\",\n"
            "      \"version\": \"9.0\",\n"
            "      \"memory_bytes\": 85899345920\n"
            "    }\n"
            "  ],\n"
            "  \"memory_bytes\": 1024,\n"
            "  \"backends\": {\n"
            "    \"portable\": 1,\n"
            "    \"xnnpack\": 2\n"
            "  }\n"
            "}\n");
  DeviceProfile empty;
  EXPECT_EQ(canonical_json(empty),
            "{\n  \"name\": \"\",\n  \"os\": \"\",\n  \"arch\": \"\",\n  \"cpu_features\": [],\n"
            "  \"accelerators\": [],\n  \"memory_bytes\": 0,\n  \"backends\": {}\n}\n");
}

// An OpenVINO device's optional `device` and `capabilities` (specs/device-profile.md 4.1): the
// named Core Ultra profile, written by Python's printer, read and printed again byte for byte.
TEST(CanonicalJson, VendorDeviceKeysPrintAsPythonWroteThem) {
  auto p = load_profile("intel-core-ultra-7-155h");
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p.value().accelerators.size(), 3u);
  const Accelerator& gpu = p.value().accelerators[1];
  EXPECT_EQ(gpu.device, "GPU");
  EXPECT_EQ(gpu.capabilities, (std::vector<std::string>{"bin", "export_import", "fp16", "fp32", "int8"}));
  std::ifstream file(profile_path("intel-core-ultra-7-155h"));
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(canonical_json(p.value()), text.str());
  // Capabilities given out of order are read sorted; an empty list is printed as none.
  auto q = profile_from_json(R"({"name": "q", "os": "linux", "arch": "x86_64", "cpu_features": [],
      "accelerators": [{"kind": "openvino", "name": "N", "version": "2026.4.0", "memory_bytes": 0,
      "device": "NPU", "capabilities": ["int8", "fp16"]}, {"kind": "openvino", "name": "C",
      "version": "1", "memory_bytes": 0, "capabilities": []}], "memory_bytes": 0, "backends": {}})");
  ASSERT_TRUE(q.ok()) << q.error().message();
  EXPECT_NE(canonical_json(q.value()).find("      \"memory_bytes\": 0,\n      \"device\": \"NPU\",\n"
                                           "      \"capabilities\": [\n        \"fp16\",\n        \"int8\"\n      ]\n    },"),
            std::string::npos)
      << canonical_json(q.value());
  EXPECT_NE(canonical_json(q.value()).find("\"version\": \"1\",\n      \"memory_bytes\": 0\n    }\n"), std::string::npos);
}

// The samples of tests/device/test_identity.py, with the same answers as Python's probe_identity.
const char* kSnapdragon855 =
    "processor\t: 0\nFeatures\t: fp asimd asimddp\nCPU implementer\t: 0x51\nCPU architecture: 8\n"
    "CPU variant\t: 0x7\nCPU part\t: 0x805\nCPU revision\t: 14\n\nprocessor\t: 7\nCPU implementer\t: 0x51\n"
    "CPU architecture: 8\nCPU variant\t: 0xd\nCPU part\t: 0x804\nCPU revision\t: 14\n";
const char* kX86 =
    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8480+\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n"
    "model\t\t: 183\n";

TEST(Identity, CpuinfoCoresOfTheArchitectureOnly) {
  using V = std::vector<std::string>;
  EXPECT_EQ(probe::cpuinfo_cores(kSnapdragon855, "aarch64"), (V{"cortex-a55", "cortex-a76"}));
  EXPECT_EQ(probe::cpuinfo_cores(kSnapdragon855, "x86_64"), V{});
  EXPECT_EQ(probe::cpuinfo_cores(kX86, "x86_64"), (V{"sapphirerapids", "AuthenticAMD:25:183"}));
  EXPECT_EQ(probe::cpuinfo_cores(kX86, "aarch64"), V{});
  EXPECT_EQ(probe::cpuinfo_cores("CPU implementer: 41\nCPU part: 0xd0b\nCPU implementer: 0x100\nCPU part: 0xd0b\n"
                                 "CPU implementer: 0x41\nCPU part: 0x1d0b\n", "aarch64"), V{});
  EXPECT_EQ(probe::cpuinfo_cores("vendor_id: Genuine Intel\ncpu family: 6\nmodel: 143\n", "x86_64"), V{});
  EXPECT_EQ(probe::cpuinfo_cores("vendor_id: GenuineIntel\ncpu family: 06\nmodel: 143\n", "x86_64"), V{});
}

TEST(Identity, OsRelease) {
  EXPECT_EQ(probe::os_release_of("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n"),
            "debian 12");
  EXPECT_EQ(probe::os_release_of("ID='ubuntu'\nVERSION_ID=24.04\nID=ubuntu\r\n"), "ubuntu 24.04");
  EXPECT_EQ(probe::os_release_of("ID=arch\n"), "arch");
  EXPECT_EQ(probe::os_release_of("ID=arch linux\nVERSION_ID=1\n"), "");
  EXPECT_EQ(probe::os_release_of("NAME=x\n"), "");
}

TEST(Identity, CoreTable) {
  ASSERT_NE(detail::core_by_id("0x51:0x804"), nullptr);
  EXPECT_STREQ(detail::core_by_id("0x51:0x804")->name, "cortex-a76");
  EXPECT_EQ(detail::core_by_name("neoverse-n1")->generation, detail::core_by_name("cortex-a76")->generation);
  EXPECT_TRUE(detail::is_core_id("0x41:0xd99", "aarch64"));
  EXPECT_FALSE(detail::is_core_id("0x41:0xD99", "aarch64"));
  EXPECT_TRUE(detail::is_core_id("AuthenticAMD:25:183", "x86_64"));
  EXPECT_FALSE(detail::is_core_id("AuthenticAMD:025:183", "x86_64"));
}

TEST(Identity, X86CoreFromCpuidAsLinuxPrintsIt) {
  // "GenuineIntel" in ebx, edx, ecx; leaf 1 eax of Emerald Rapids (family 6, model 0xcf).
  EXPECT_EQ(probe::x86_core_id(0x756e6547, 0x49656e69, 0x6c65746e, 0x000C06F2), "GenuineIntel:6:207");
  EXPECT_EQ(probe::core_word("GenuineIntel:6:207"), "emeraldrapids");
  // "AuthenticAMD"; Genoa: base family 0xf plus extended 0xa, model 0x11.
  EXPECT_EQ(probe::x86_core_id(0x68747541, 0x69746e65, 0x444d4163, 0x00A10F11), "AuthenticAMD:25:17");
  EXPECT_EQ(probe::x86_core_id(0x20202020, 0x69746e65, 0x444d4163, 0x00A10F11), "");  // spaces: no id
}

void write_file(const std::filesystem::path& p, const std::string& data) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
}

TEST(Identity, AFolderStandingForSlash) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() / "fatpte_identity_test";
  std::filesystem::remove_all(root);
  write_file(root / "proc/cpuinfo", "processor: 0\nFeatures: fp asimd\n");
  const char* midrs[] = {"0x00000000410fd0b1\n", "0x00000000410fd0b1\n", "0x00000000410fd051\n"};
  for (int n = 0; n < 3; ++n) {
    write_file(root / ("sys/devices/system/cpu/cpu" + std::to_string(n)) / "regs/identification/midr_el1", midrs[n]);
  }
  write_file(root / "usr/lib/os-release", "ID=debian\nVERSION_ID=\"12\"\n");
  write_file(root / "proc/device-tree/model", std::string("Raspberry Pi 5 Model B Rev 1.0\0", 31));
  write_file(root / "proc/device-tree/compatible", std::string("raspberrypi,5-model-b\0brcm,bcm2712\0", 35));
  write_file(root / "sys/devices/soc0/family", "BCM2712\n");
  write_file(root / "sys/devices/soc0/soc_id", "\xff\xfe\n");
  DeviceProfile p;
  p.arch = "aarch64";
  probe::read_identity(root.string(), p);
  EXPECT_EQ(p.cpu_cores, (std::set<std::string>{"cortex-a55", "cortex-a76"}));
  EXPECT_EQ(p.os_release, std::optional<std::string>("debian 12"));
  EXPECT_EQ(p.machine, std::optional<std::string>("Raspberry Pi 5 Model B Rev 1.0"));
  EXPECT_EQ(p.soc, (std::set<std::string>{"BCM2712", "brcm,bcm2712", "raspberrypi,5-model-b"}));
  DeviceProfile none;
  none.arch = "aarch64";
  probe::read_identity((root / "empty").string(), none);
  EXPECT_FALSE(none.cpu_cores || none.os_release || none.machine || none.soc);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace fatpte
