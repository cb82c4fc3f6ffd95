// The fat delegate (delegate/fat_backend.hpp) as ExecuTorch hands it a payload: its init called
// directly on an NFAT container, without a program around it. Built only with the ExecuTorch SDK
// (FATPTE_EXECUTORCH).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/memory_allocator.h>

#include "delegate/fat_backend.hpp"
#include "executorch/runtime.hpp"
#include "vendor/runtimes.hpp"

#ifndef FATPTE_SPEC_VECTORS
#error "FATPTE_SPEC_VECTORS must name specs/vectors"
#endif

namespace fatpte {
namespace {

namespace R = executorch::runtime;

// An init whose entries require OpenVINO devices probes this machine for them, and the backend
// that opens OpenVINO's runtime is handed that probe's search (vendor::decide), as a load's is:
// one search for the init and the backend's decision together. The delegate probes once per
// process, so this is the process's first fat delegate init that looks for accelerators (no
// other test of fatpte_tests makes one); the kept decisions are forgotten first
// (vendor::testing::forget_decisions), as in a process of its own.
TEST(FatDelegate, AnInitSearchesEachVendorRuntimeOnceWithItsBackend) {
  if (vendor::kSanitizerWithholds) GTEST_SKIP() << "AddressSanitizer withholds vendor runtimes";
  vendor::testing::forget_decisions();
  const vendor::VendorRuntime& ov = *vendor::runtime_named("openvino");
  char pattern[] = "/tmp/fatpte-delegate-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  const std::string given = dir + "/not-a-library.so";  // found by the variable, then lists no device
  std::ofstream(given).put('\0');
  setenv(ov.env, given.c_str(), 1);  // a fat delegate has no caller's paths: the variable is the first step that holds one
  std::ifstream in(std::string(FATPTE_SPEC_VECTORS) + "/openvino/openvino-entries.nfat", std::ios::binary);
  std::vector<std::uint8_t> nfat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(nfat.empty());

  // Under an id of its own: an earlier test may have loaded the fat delegate's library, whose own
  // copy of this code (and of the vendor search's count) holds kFatBackendId.
  constexpr const char* kId = "FatpteDelegateTestBackend";
  et::ensure_runtime();
  ASSERT_EQ(et::register_fat_backend(kId), R::Error::Ok);
  R::BackendInterface* fat = R::get_backend_class(kId);
  ASSERT_NE(fat, nullptr);
  R::MemoryAllocator allocator(0, nullptr);
  R::BackendInitContext context(&allocator);
  R::FreeableBuffer processed(nfat.data(), nfat.size(), nullptr);
  const std::size_t before = vendor::searches();
  R::Result<R::DelegateHandle*> handle = fat->init(context, &processed, {});
  if (handle.ok()) fat->destroy(handle.get());
  EXPECT_EQ(vendor::searches() - before, 1u);

  vendor::Located handed;
  ASSERT_TRUE(vendor::prepare_backend(ov.backend_id, {}, handed));
  EXPECT_EQ(vendor::searches() - before, 1u);
  EXPECT_EQ(handed.path, given);
  EXPECT_EQ(handed.step, "environment_variable");
  vendor::testing::forget_decisions();
  unsetenv(ov.env);
  unsetenv(ov.backend_env);
}

}  // namespace
}  // namespace fatpte
