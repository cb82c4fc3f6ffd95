// Vendor runtimes (loader/src/vendor/): the search order, every place looked, and OpenVINO's answers
// decoded against a fake C API; the same cases as tests/device/test_vendor_runtimes.py.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/fatpte.h"
#include "vendor/openvino.hpp"
#include "vendor/runtimes.hpp"

#ifndef FATPTE_SPEC_VECTORS
#error "FATPTE_SPEC_VECTORS must name specs/vectors"
#endif

namespace fatpte {
namespace vendor {
namespace {

TEST(VendorRuntimes, OpenvinoVersion) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"2026.4.0-22959-99c81491cc3-releases/2026/4", "2026.4.0"}, {"2025.1.0", "2025.1.0"}, {"2026.4", ""},
      {"02026.4.0", ""}, {"2026.4.01", ""}, {"2026.4.12345", ""}, {"x2026.4.0", ""}, {"", ""}};
  for (const auto& c : cases) EXPECT_EQ(openvino_version(c.first), c.second) << c.first;
  EXPECT_EQ(openvino_version(nullptr), "");
}

TEST(VendorRuntimes, OpenvinoCapabilities) {
  EXPECT_EQ(openvino_capabilities("BF16 WINOGRAD FP32 FP16 INT8 BIN EXPORT_IMPORT"),
            (std::vector<std::string>{"bf16", "bin", "export_import", "fp16", "fp32", "int8", "winograd"}));
  EXPECT_EQ(openvino_capabilities("FP32  FP32 fp32"), (std::vector<std::string>{"fp32"}));
  EXPECT_TRUE(openvino_capabilities("FP-16 \xc9 " + std::string(33, 'A')).empty());
  EXPECT_TRUE(openvino_capabilities("").empty());
  std::string forty;
  for (int i = 0; i < 40; ++i) forty += (i < 10 ? "W0" : "W") + std::to_string(i) + " ";
  const std::vector<std::string> kept = openvino_capabilities(forty);
  ASSERT_EQ(kept.size(), 32u);
  EXPECT_EQ(kept.front(), "w00");
  EXPECT_EQ(kept.back(), "w31");
}

TEST(VendorRuntimes, PrintableName) {
  EXPECT_EQ(printable_device_name("  Intel\xc2\xae Arc\xe2\x84\xa2 \xc3\xbf \xff", "x"), "Intel? Arc? ? ?");
  EXPECT_EQ(printable_device_name("   ", "OpenVINO device 2"), "OpenVINO device 2");
  EXPECT_EQ(printable_device_name(std::string(300, 'A'), "x"), std::string(256, 'A'));
}

// The fake runtime: devices and their properties; `fail` names calls that fail.
struct Fake {
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> devices;
  std::string build = "2026.4.0-1-abc";
  std::string fail;
  std::vector<std::string> freed;
  std::vector<char*> names;
};
Fake* fake = nullptr;

int fake_version(OvVersion* v) {
  v->buildNumber = fake->build.c_str();
  return fake->fail == "version" ? -1 : 0;
}
void fake_version_free(OvVersion*) { fake->freed.push_back("version"); }
int fake_core_create(void** core) {
  if (fake->fail == "core") return -1;
  *core = fake;
  return 0;
}
void fake_core_free(void*) { fake->freed.push_back("core"); }
int fake_devices(const void*, OvAvailableDevices* out) {
  if (fake->fail == "devices") return -1;
  fake->names.clear();
  for (auto& d : fake->devices) fake->names.push_back(&d.first[0]);
  out->devices = fake->names.data();
  out->size = fake->names.size();
  return 0;
}
void fake_devices_free(OvAvailableDevices*) { fake->freed.push_back("devices"); }
int fake_property(const void*, const char* device, const char* key, char** value) {
  for (auto& d : fake->devices) {
    if (d.first != device) continue;
    const auto found = d.second.find(key);
    if (found == d.second.end()) return -1;
    *value = strdup(found->second.c_str());
    return 0;
  }
  return -1;
}
void fake_free(const char* value) {
  fake->freed.push_back("property");
  std::free(const_cast<char*>(value));
}

OpenvinoApi fake_api() {
  OpenvinoApi api;
  api.ov_get_openvino_version = fake_version;
  api.ov_version_free = fake_version_free;
  api.ov_core_create = fake_core_create;
  api.ov_core_free = fake_core_free;
  api.ov_core_get_available_devices = fake_devices;
  api.ov_available_devices_free = fake_devices_free;
  api.ov_core_get_property = fake_property;
  api.ov_free = fake_free;
  return api;
}

const std::map<std::string, std::string> kCpu = {{"FULL_DEVICE_NAME", "Intel(R) Core(TM) Ultra 7 155H"},
                                                 {"OPTIMIZATION_CAPABILITIES", "FP32 INT8 FP16 BIN"}};
const std::map<std::string, std::string> kGpu = {{"FULL_DEVICE_NAME", "Intel(R) Arc(TM) Graphics (iGPU)"},
                                                 {"OPTIMIZATION_CAPABILITIES", "FP32 FP16 INT8"},
                                                 {"GPU_DEVICE_TOTAL_MEM_SIZE", "30749147136"}};

TEST(VendorRuntimes, DevicesInTheRuntimesOrderWithTheirProperties) {
  Fake f;
  f.devices = {{"CPU", kCpu}, {"GPU.0", kGpu}, {"NPU", {{"FULL_DEVICE_NAME", "Intel(R) AI Boost"}}},
               {"bad name", kCpu}, {"GPU.1", {}}};
  fake = &f;
  std::string why;
  const std::vector<VendorDevice> got = openvino_devices(fake_api(), nullptr, why);
  EXPECT_EQ(why, "");
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].device, "CPU");
  EXPECT_EQ(got[0].name, "Intel(R) Core(TM) Ultra 7 155H");
  EXPECT_EQ(got[0].version, "2026.4.0");
  EXPECT_EQ(got[0].memory_bytes, 0u);
  EXPECT_EQ(got[0].capabilities, (std::vector<std::string>{"bin", "fp16", "fp32", "int8"}));
  EXPECT_EQ(got[1].device, "GPU.0");
  EXPECT_EQ(got[1].memory_bytes, 30749147136u);
  EXPECT_EQ(got[1].capabilities, (std::vector<std::string>{"fp16", "fp32", "int8"}));
  EXPECT_EQ(got[2].device, "NPU");
  EXPECT_TRUE(got[2].capabilities.empty());
  const auto count = [&f](const char* what) { return std::count(f.freed.begin(), f.freed.end(), what); };
  EXPECT_EQ(count("property"), 6);  // every answer freed: 2 of the CPU, 3 of GPU.0, 1 of the NPU
  EXPECT_EQ(count("devices"), 1);
  EXPECT_EQ(count("core"), 1);
  EXPECT_EQ(count("version"), 1);
  fake = nullptr;
}

// A probe scoped to device types (ProbeScope::vendor_devices) asks each type's AVAILABLE_DEVICES
// and FULL_DEVICE_NAME, and never lists every device (which loads every plugin).
TEST(VendorRuntimes, OnlyTheDeviceTypesAskedFor) {
  Fake f;
  f.devices = {{"CPU", kCpu},
               {"GPU", {{"AVAILABLE_DEVICES", "0 1"}}},
               {"GPU.0", kGpu},
               {"GPU.1", {{"FULL_DEVICE_NAME", "Second GPU"}}},
               {"NPU", {{"AVAILABLE_DEVICES", ""}}}};
  f.fail = "devices";  // listing every device would fail the probe
  fake = &f;
  std::string why;
  const std::set<std::string> gpu_cpu = {"GPU", "CPU"};
  std::vector<VendorDevice> got = openvino_devices(fake_api(), &gpu_cpu, why);
  EXPECT_EQ(why, "");
  ASSERT_EQ(got.size(), 3u);  // the set's order: CPU, then GPU's two ids
  EXPECT_EQ(got[0].device, "CPU");
  EXPECT_EQ(got[1].device, "GPU.0");
  EXPECT_EQ(got[1].memory_bytes, 30749147136u);
  EXPECT_EQ(got[2].device, "GPU.1");
  EXPECT_EQ(got[2].name, "Second GPU");
  const std::set<std::string> npu = {"NPU"};  // AVAILABLE_DEVICES answers, FULL_DEVICE_NAME does not
  EXPECT_TRUE(openvino_devices(fake_api(), &npu, why).empty());
  EXPECT_EQ(why, "it lists no device of the types asked for");
  const std::set<std::string> none;
  EXPECT_TRUE(openvino_devices(fake_api(), &none, why).empty());
  fake = nullptr;
}

TEST(VendorRuntimes, ARuntimeThatDoesNotAnswerListsNothing) {
  for (const auto& c : std::vector<std::pair<std::string, std::string>>{
           {"version", "ov_get_openvino_version failed"},
           {"core", "ov_core_create failed"},
           {"devices", "ov_core_get_available_devices failed"}}) {
    Fake f;
    f.devices = {{"CPU", kCpu}};
    f.fail = c.first;
    fake = &f;
    std::string why;
    EXPECT_TRUE(openvino_devices(fake_api(), nullptr, why).empty());
    EXPECT_EQ(why, c.second);
  }
  fake = nullptr;
}

TEST(VendorRuntimes, AMemoryThatIsNotANumberIs0) {
  for (const char* memory : {"-1", "9223372036854775808"}) {
    Fake f;
    std::map<std::string, std::string> gpu = kGpu;
    gpu["GPU_DEVICE_TOTAL_MEM_SIZE"] = memory;
    f.devices = {{"GPU", gpu}};
    fake = &f;
    std::string why;
    const std::vector<VendorDevice> got = openvino_devices(fake_api(), nullptr, why);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].memory_bytes, 0u) << memory;
  }
  fake = nullptr;
}

TEST(VendorRuntimes, ALibraryThatIsNotOpenvino) {
  std::string why;
  EXPECT_TRUE(probe_openvino("/nonexistent/libopenvino_c.so", nullptr, why).empty());
  EXPECT_EQ(why.rfind("cannot load it: ", 0), 0u) << why;
  EXPECT_TRUE(probe_openvino("libc.so.6", nullptr, why).empty());
  EXPECT_EQ(why, "it lacks an entry point of OpenVINO's C API");
}

// A wheel's layout under `prefix`: PREFIX/lib/python3.11/site-packages/openvino/libs/FILE.
std::string wheel(const std::string& prefix) {
  std::string dir = prefix;
  mkdir(dir.c_str(), 0700);
  for (const char* part : {"/lib", "/python3.11", "/site-packages", "/openvino", "/libs"}) {
    dir += part;
    mkdir(dir.c_str(), 0700);
  }
  const std::string lib = dir + "/libopenvino_c.so.2640";
  std::ofstream(lib).put('\0');
  return lib;
}

// A fresh folder with three wheels' layouts (a virtual environment's, a conda prefix's, one at a
// path the caller gives), $VIRTUAL_ENV and $CONDA_PREFIX naming the first two, and no
// OPENVINO_LIB_PATH: the places of the search order, each holding a runtime.
struct Places {
  std::string dir, venv, conda, given;
};

Places search_places() {
  char pattern[] = "/tmp/fatpte-vendor-XXXXXX";
  Places p;
  p.dir = mkdtemp(pattern);
  p.venv = wheel(p.dir + "/venv");
  p.conda = wheel(p.dir + "/conda");
  p.given = wheel(p.dir + "/given");
  unsetenv("OPENVINO_LIB_PATH");
  setenv("VIRTUAL_ENV", (p.dir + "/venv").c_str(), 1);
  setenv("CONDA_PREFIX", (p.dir + "/conda").c_str(), 1);
  return p;
}

TEST(VendorRuntimes, SearchOrderAndEveryPlaceLooked) {
  if (kSanitizerWithholds) {
    // A build with AddressSanitizer withholds every vendor runtime (runtimes.hpp), whatever is given.
    const Located withheld = locate(*runtime_named("openvino"), {{"openvino", "/nonexistent.so"}});
    EXPECT_TRUE(withheld.withheld);
    EXPECT_NE(withheld.withheld_why.find("AddressSanitizer"), std::string::npos);
    GTEST_SKIP() << "the search order is the release build's (AddressSanitizer withholds vendor runtimes)";
  }
  const Places places = search_places();
  const std::string &dir = places.dir, &venv = places.venv, &conda = places.conda, &given = places.given;
  const VendorRuntime& ov = *runtime_named("openvino");
  EXPECT_EQ(locate(ov, {{"openvino", given}}).path, given);
  setenv("OPENVINO_LIB_PATH", conda.c_str(), 1);
  EXPECT_EQ(locate(ov, {}).source, "OPENVINO_LIB_PATH");
  unsetenv("OPENVINO_LIB_PATH");
  EXPECT_EQ(locate(ov, {}).path, venv);
  unsetenv("VIRTUAL_ENV");
  EXPECT_EQ(locate(ov, {}).source, "the openvino package of $CONDA_PREFIX");
  EXPECT_TRUE(locate(ov, {{"openvino", ""}}).withheld);
  setenv("OPENVINO_LIB_PATH", dir.c_str(), 1);
  setenv("VIRTUAL_ENV", dir.c_str(), 1);
  unsetenv("CONDA_PREFIX");
  const Located none = locate(ov, {{"openvino", dir + "/none.so"}});
  unsetenv("OPENVINO_LIB_PATH");
  unsetenv("VIRTUAL_ENV");
  if (!none.path.empty()) GTEST_SKIP() << "this machine's library search finds " << none.path;
  EXPECT_EQ(none.text().rfind("not found; looked: 1. the caller's path " + dir + "/none.so (not a file), 2. "
                              "OPENVINO_LIB_PATH=" + dir + " (not a file), 3. $VIRTUAL_ENV: no " + dir +
                              "/lib/python3.*/site-packages/openvino/libs/libopenvino_c.so.*, 4. $CONDA_PREFIX "
                              "(not set), 5. the system's library search for libopenvino_c.so (dlopen: ", 0),
            0u)
      << none.text();
}

// One load searches each vendor runtime once: the probe's search gives the load's line and
// record, and the backend that opens the runtime is handed the same answer. prepare_backend keeps
// its first decision for the process (runtimes.hpp): this test and the next start from none
// (testing::forget_decisions), so they pass in a process of their own (ctest) and in fatpte_tests
// run whole (a death test could not: under qemu-user the test binary cannot be executed again).
TEST(VendorRuntimes, OneLoadSearchesOnce) {
  testing::forget_decisions();
  auto c = Container::open_file(std::string(FATPTE_SPEC_VECTORS) + "/openvino/openvino-entries.nfat");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  char pattern[] = "/tmp/fatpte-vendor-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  const std::string given = dir + "/not-a-library.so";  // a file: found at the first step, then refused by the probe
  std::ofstream(given).put('\0');
  LoadOptions options;
  options.vendor_runtimes["openvino"] = given;
  Dispatch out;
  const std::size_t before = searches();
  (void)load(*c.value(), Choice{}, options, out);
  EXPECT_EQ(searches() - before, 1u);
  ASSERT_EQ(out.vendor_runtimes.size(), 1u);
  const Located& where = out.vendor_runtimes[0];
  EXPECT_EQ(where.name, "openvino");
  const VendorRuntime& ov = *runtime_named("openvino");
  EXPECT_EQ(std::count(out.notes.begin(), out.notes.end(), status_line(ov, where, options.command_line)), 1);
  if (kSanitizerWithholds) {
    EXPECT_TRUE(where.withheld);
    return;  // a withheld runtime is not handed to its backend: it searches again when asked
  }
  EXPECT_EQ(where.path, given);
  EXPECT_EQ(where.step, "caller");
  Located handed;
  ASSERT_TRUE(prepare_backend(ov.backend_id, options.vendor_runtimes, handed));
  EXPECT_EQ(searches() - before, 1u);
  EXPECT_EQ(handed.path, given);
  unsetenv(ov.backend_env);
}

// `fatpte-run --device-json --with-executorch` (what `fatpte device` asks): the probe searches,
// and the backends the registry loads are handed its answer (from no decision, as above).
TEST(VendorRuntimes, TheRegistrysBackendsAreHandedTheProbesSearch) {
  if (kSanitizerWithholds) GTEST_SKIP() << "AddressSanitizer withholds vendor runtimes";
  testing::forget_decisions();
  char pattern[] = "/tmp/fatpte-vendor-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  const std::string given = dir + "/not-a-library.so";
  std::ofstream(given).put('\0');
  LoadOptions options;
  options.vendor_runtimes["openvino"] = given;
  options.search_path = {dir};
  ProbeScope scope;
  scope.vendor_runtimes = options.vendor_runtimes;
  std::vector<VendorRuntimeSearch> searched;
  const std::size_t before = searches();
  (void)probe_host(scope, &searched);
  ASSERT_EQ(searched.size(), 1u);
  EXPECT_EQ(searched[0].path, given);
  (void)runtime_backends(options, searched);
  EXPECT_EQ(searches() - before, 1u);
  Located handed;
  ASSERT_TRUE(prepare_backend(runtime_named("openvino")->backend_id, options.vendor_runtimes, handed));
  EXPECT_EQ(handed.path, given);
  EXPECT_EQ(searches() - before, 1u);
  unsetenv(runtime_named("openvino")->backend_env);
}

// The C API's fatpte_select(NULL, ...) probes this machine, and fatpte_load_with on that
// selection hands the probe's search to the backends rather than search again (the selection
// carries it); a runtime the load options give a path of their own is searched with it instead.
TEST(VendorRuntimes, TheCApiLoadsAProbedSelectionWithItsSearch) {
  if (kSanitizerWithholds) GTEST_SKIP() << "AddressSanitizer withholds vendor runtimes";
  const VendorRuntime& ov = *runtime_named("openvino");
  char pattern[] = "/tmp/fatpte-vendor-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  const std::string given = dir + "/not-a-library.so", own = dir + "/the-load-options.so";
  std::ofstream(given).put('\0');
  std::ofstream(own).put('\0');
  setenv(ov.env, given.c_str(), 1);  // fatpte_select has no caller's paths: the variable holds it
  fatpte_container* c = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_open_file((std::string(FATPTE_SPEC_VECTORS) + "/openvino/openvino-entries.nfat").c_str(), &c, &err),
            FATPTE_OK)
      << err.message;
  // Once with the selection's search, once with load options that name their own path.
  for (const bool options_name_it : {false, true}) {
    testing::forget_decisions();
    const std::size_t before = searches();
    fatpte_selection* s = nullptr;
    ASSERT_EQ(fatpte_select(c, nullptr, nullptr, 0, nullptr, 0, &s, &err), FATPTE_OK) << err.message;
    EXPECT_EQ(searches() - before, 1u);
    fatpte_load_options* o = nullptr;
    ASSERT_EQ(fatpte_load_options_new(&o), FATPTE_OK);
    if (options_name_it) {
      ASSERT_EQ(fatpte_load_options_set_vendor_runtime(o, "openvino", own.c_str()), FATPTE_OK);
    }
    fatpte_loaded* loaded = nullptr;
    (void)fatpte_load_with(c, s, o, &loaded, &err);  // its entries' libraries are absent here
    fatpte_unload(loaded);
    Located handed;
    LoadOptions same;
    if (options_name_it) same.vendor_runtimes["openvino"] = own;
    ASSERT_TRUE(prepare_backend(ov.backend_id, same.vendor_runtimes, handed));
    EXPECT_EQ(searches() - before, options_name_it ? 2u : 1u);
    EXPECT_EQ(handed.path, options_name_it ? own : given);
    fatpte_load_options_free(o);
    fatpte_selection_free(s);
  }
  fatpte_close(c);
  testing::forget_decisions();
  unsetenv(ov.env);
  unsetenv(ov.backend_env);
}

TEST(VendorRuntimes, EachStepOfTheSearchIsNamed) {
  if (kSanitizerWithholds) GTEST_SKIP() << "AddressSanitizer withholds vendor runtimes";
  const Places places = search_places();
  const std::string &conda = places.conda, &given = places.given;
  const VendorRuntime& ov = *runtime_named("openvino");
  EXPECT_EQ(locate(ov, {{"openvino", given}}).step, "caller");
  setenv("OPENVINO_LIB_PATH", conda.c_str(), 1);
  EXPECT_EQ(locate(ov, {}).step, "environment_variable");
  unsetenv("OPENVINO_LIB_PATH");
  EXPECT_EQ(locate(ov, {}).step, "virtual_env");
  unsetenv("VIRTUAL_ENV");
  EXPECT_EQ(locate(ov, {}).step, "conda_prefix");
  unsetenv("CONDA_PREFIX");
  const Located none = locate(ov, {{"openvino", ""}});
  EXPECT_TRUE(none.withheld);
  EXPECT_EQ(none.step, "");
  EXPECT_EQ(none.name, "openvino");
}

}  // namespace
}  // namespace vendor
}  // namespace fatpte
