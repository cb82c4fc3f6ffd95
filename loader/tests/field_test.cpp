// What a load does in the field (issue 38): the child process of an isolated qualification
// (run/qualify.hpp: its argument vector and environment, its bounded output, its deadline, no
// zombie and no leaked descriptor), which call outcomes fail an entry (field/fallback.hpp), and
// ContainerModule falling back after load on containers that tests/loader/test_field.py writes
// with the test backend that fails on purpose (loader/backends/faulty.cpp): those tests run only
// where FATPTE_FIELD_CONTAINERS names their folder, and skip elsewhere.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "fatpte/module.hpp"
#include "field/fallback.hpp"
#include "run/qualify.hpp"

namespace {

using fatpte::detail::ChildOutcome;
using fatpte::detail::run_child;

std::size_t open_descriptors() {
  std::size_t n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

TEST(IsolatedChild, ASignalIsNamedAndTheChildIsReaped) {
  const ChildOutcome out = run_child({"/bin/sh", "-c", "kill -SEGV $$"}, {}, 10000);
  ASSERT_TRUE(out.started) << out.error;
  EXPECT_FALSE(out.timed_out);
  EXPECT_EQ(out.signal, SIGSEGV);
  EXPECT_EQ(fatpte::detail::signal_name(out.signal), "SIGSEGV");
  EXPECT_EQ(fatpte::detail::signal_name(SIGILL), "SIGILL");
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);  // no child left: reaped, no zombie
}

TEST(IsolatedChild, TheExitStatusAndTheOutputComeBack) {
  const ChildOutcome out = run_child({"/bin/sh", "-c", "echo said; echo why >&2; exit 3"}, {}, 10000);
  ASSERT_TRUE(out.started);
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_EQ(out.output, "said\nwhy\n");
}

TEST(IsolatedChild, ItsEnvironmentIsExactlyTheOneGiven) {
  ::setenv("FATPTE_FIELD_TEST_SECRET", "leaked", 1);
  const ChildOutcome out = run_child({"/usr/bin/env"}, {"ONLY=this"}, 10000);
  ::unsetenv("FATPTE_FIELD_TEST_SECRET");
  ASSERT_TRUE(out.started);
  EXPECT_EQ(out.output, "ONLY=this\n");
}

TEST(IsolatedChild, ItsOutputIsBounded) {
  const ChildOutcome out = run_child({"/bin/sh", "-c", "head -c 1000000 /dev/zero"}, {}, 20000);
  ASSERT_TRUE(out.started);
  EXPECT_EQ(out.exit_code, 0);  // read to the end (the child is not blocked), kept only the bound
  EXPECT_EQ(out.output.size(), fatpte::detail::kMaxChildOutput);
}

TEST(IsolatedChild, PastTheDeadlineItIsKilledAndNothingLeaks) {
  const std::size_t before = open_descriptors();
  const ChildOutcome out = run_child({"/bin/sh", "-c", "exec sleep 30"}, {}, 200);
  ASSERT_TRUE(out.started);
  EXPECT_TRUE(out.timed_out);
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(open_descriptors(), before);
}

TEST(IsolatedChild, ItsExitCountsEvenWhenAProcessItStartedHoldsThePipe) {
  const ChildOutcome out = run_child({"/bin/sh", "-c", "(exec sleep 30 &); exit 4"}, {}, 10000);
  ASSERT_TRUE(out.started);
  EXPECT_FALSE(out.timed_out);
  EXPECT_EQ(out.exit_code, 4);
}

TEST(IsolatedChild, AProgramThatIsNotThereIsAFailureNotACrash) {
  const ChildOutcome out = run_child({"/nonexistent/fatpte-run"}, {}, 1000);
  if (out.started) {
    // Under qemu-user, whose vfork is a fork, the failed exec is the child's exit 127.
    EXPECT_EQ(out.exit_code, 127);
  } else {
    EXPECT_NE(out.error.find("cannot start"), std::string::npos) << out.error;
  }
}

fatpte::Tensor floats(std::vector<float> values) {
  fatpte::Tensor t;
  t.dtype = fatpte::DType::kFloat32;
  t.shape = {static_cast<std::int64_t>(values.size())};
  t.data.resize(values.size() * sizeof(float));
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

TEST(FallbackAfterLoad, WhichOutcomesFailTheEntry) {
  using R = fatpte::Result<std::vector<fatpte::Tensor>>;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const R good = std::vector<fatpte::Tensor>{floats({1, 2})};
  const R not_finite = std::vector<fatpte::Tensor>{floats({1, nan})};
  EXPECT_FALSE(fatpte::entry_failure(good, true));
  EXPECT_FALSE(fatpte::entry_failure(not_finite, false));  // opt-in
  ASSERT_TRUE(fatpte::entry_failure(not_finite, true));
  EXPECT_EQ(fatpte::entry_failure(not_finite, true)->reason, "non_finite_output");
  EXPECT_EQ(fatpte::entry_failure(not_finite, true)->detail, "output 0 holds NaN at element 1");
  const R inputs = fatpte::fail(fatpte::Error::INVALID_ARGUMENT, fatpte::kNoOffset, "inputs[0]", "wrong shape");
  EXPECT_FALSE(fatpte::entry_failure(inputs, true));  // the caller's: no entry would take them
  const R execute = fatpte::fail(fatpte::Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "execute failed");
  ASSERT_TRUE(fatpte::entry_failure(execute, false));
  EXPECT_EQ(fatpte::entry_failure(execute, false)->reason, "execute_error");
  const R late = fatpte::fail(fatpte::Error::INVALID_ARGUMENT, fatpte::kNoOffset, "deadline", "past it");
  EXPECT_EQ(fatpte::entry_failure(late, false)->reason, "deadline");
}

// ---- ContainerModule on the containers tests/loader/test_field.py writes ----

std::string field_container(const std::string& name) {
  const char* dir = std::getenv("FATPTE_FIELD_CONTAINERS");
  return dir == nullptr ? std::string() : std::string(dir) + "/" + name;
}

// A float32 tensor of shape [2, 3] over `data` (kept alive by the caller).
struct Input {
  std::vector<float> data;
  std::vector<executorch::aten::SizesType> sizes{2, 3};
  std::vector<executorch::aten::DimOrderType> order{0, 1};
  std::vector<executorch::aten::StridesType> strides{3, 1};
  std::unique_ptr<executorch::aten::TensorImpl> impl;
  explicit Input(std::vector<float> values) : data(std::move(values)) {
    impl = std::make_unique<executorch::aten::TensorImpl>(executorch::aten::ScalarType::Float, 2, sizes.data(),
                                                          data.data(), order.data(), strides.data());
  }
  executorch::runtime::EValue value() { return executorch::runtime::EValue(executorch::aten::Tensor(impl.get())); }
};

std::vector<float> output0(const std::vector<executorch::runtime::EValue>& outputs) {
  const auto& t = outputs.at(0).toTensor();
  const float* p = t.const_data_ptr<float>();
  return std::vector<float>(p, p + t.numel());
}

fatpte::ModuleOptions faulty_options() {
  fatpte::ModuleOptions o;
  o.load.libraries["FaultyBackend"] = FATPTE_FAULTY_LIBRARY;
  return o;
}

TEST(ModuleFallback, AnExecuteErrorOnTheFirstCallServesThePortableEntry) {
  const std::string path = field_container("add_execute_error.nfat");
  if (path.empty()) GTEST_SKIP() << "FATPTE_FIELD_CONTAINERS is not set (tests/loader/test_field.py sets it)";
  auto module = fatpte::load_module(path, faulty_options());
  ASSERT_TRUE(module.ok()) << module.error().describe();
  EXPECT_EQ(module.value()->entry().name, "faulty0");
  Input x({1, 2, 3, 4, 5, 6}), y({10, 20, 30, 40, 50, 60});
  auto out = module.value()->execute("forward", {x.value(), y.value()});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(output0(out.get()), (std::vector<float>{11, 22, 33, 44, 55, 66}));
  EXPECT_EQ(module.value()->entry().name, "cpu");
  ASSERT_EQ(module.value()->fallback_events().size(), 1u);
  const fatpte::FallbackEvent& e = module.value()->fallback_events()[0];
  EXPECT_EQ(e.call, 0u);
  EXPECT_EQ(e.from_entry, 0u);
  EXPECT_EQ(e.to_entry, std::optional<std::uint32_t>(1));
  EXPECT_EQ(e.reason, "execute_error");
}

TEST(ModuleFallback, NonFiniteOutputsFallBackOnlyWhenAsked) {
  const std::string path = field_container("add_nan.nfat");
  if (path.empty()) GTEST_SKIP() << "FATPTE_FIELD_CONTAINERS is not set (tests/loader/test_field.py sets it)";
  for (const bool check : {false, true}) {
    fatpte::ModuleOptions o = faulty_options();
    o.load.check_finite = check;
    auto module = fatpte::load_module(path, o);
    ASSERT_TRUE(module.ok()) << module.error().describe();
    Input x({1, 2, 3, 4, 5, 6}), y({1, 1, 1, 1, 1, 1});
    auto out = module.value()->execute("forward", {x.value(), y.value()});
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(std::isnan(output0(out.get())[0]), !check);
    EXPECT_EQ(module.value()->fallback_events().size(), check ? 1u : 0u);
    if (check) {
      EXPECT_EQ(module.value()->fallback_events()[0].reason, "non_finite_output");
    }
  }
}

TEST(ModuleFallback, TheFallbackEntryStartsFromItsOwnState) {
  const std::string faulty = field_container("buffer_execute_error.nfat");
  if (faulty.empty()) GTEST_SKIP() << "FATPTE_FIELD_CONTAINERS is not set (tests/loader/test_field.py sets it)";
  auto failing = fatpte::load_module(faulty, faulty_options());
  auto alone = fatpte::load_module(field_container("buffer_portable.nfat"));
  ASSERT_TRUE(failing.ok() && alone.ok());
  for (int call = 0; call < 3; ++call) {
    Input a({1, 2, 3, 4, 5, 6}), b({1, 2, 3, 4, 5, 6});
    auto got = failing.value()->execute("forward", {a.value()});
    auto want = alone.value()->execute("forward", {b.value()});
    ASSERT_TRUE(got.ok() && want.ok()) << call;
    EXPECT_EQ(output0(got.get()), output0(want.get())) << "call " << call;
  }
  EXPECT_EQ(failing.value()->fallback_events().size(), 1u);
}


// ---- A signature adapter at ContainerModule's door (specs/nfat-manifest.md 5.3) ----
// mlp_adapted.nfat (tests/loader/test_adapters_runtime.py writes it): entry fp16io, the float16-I/O
// XNNPACK export behind the float32 signature, first in the table and preferred. A Module caller's
// float32 ExecuTorch tensor is converted into the program's float16 and the output back, giving what
// the runner's door (Tensor in, Tensor out) gives for the same call; a float16 tensor is refused.

struct Tensor14 {
  std::vector<std::uint8_t> data;
  std::vector<executorch::aten::SizesType> sizes{1, 4};
  std::vector<executorch::aten::DimOrderType> order{0, 1};
  std::vector<executorch::aten::StridesType> strides{4, 1};
  std::unique_ptr<executorch::aten::TensorImpl> impl;
  Tensor14(executorch::aten::ScalarType type, std::vector<std::uint8_t> bytes) : data(std::move(bytes)) {
    impl = std::make_unique<executorch::aten::TensorImpl>(type, 2, sizes.data(), data.data(), order.data(),
                                                          strides.data());
  }
  executorch::runtime::EValue value() { return executorch::runtime::EValue(executorch::aten::Tensor(impl.get())); }
};

TEST(ModuleAdapter, ConvertsAtTheModulesDoorAsAtTheRunners) {
  const std::string path = field_container("mlp_adapted.nfat");
  if (path.empty()) GTEST_SKIP() << "FATPTE_FIELD_CONTAINERS is not set (tests/loader/test_adapters_runtime.py sets it)";
  const std::vector<float> x{-0.99f, -0.79f, -0.43f, -0.95f};
  std::vector<std::uint8_t> bytes(16);
  std::memcpy(bytes.data(), x.data(), 16);
  auto module = fatpte::load_module(path, fatpte::ModuleOptions{});
  ASSERT_TRUE(module.ok()) << module.error().describe();
  EXPECT_EQ(module.value()->entry().name, "fp16io");
  Tensor14 in(executorch::aten::ScalarType::Float, bytes);
  auto out = module.value()->execute("forward", {in.value()});
  ASSERT_TRUE(out.ok());
  const auto& got = out.get().at(0).toTensor();
  ASSERT_EQ(got.scalar_type(), executorch::aten::ScalarType::Float);
  ASSERT_EQ(got.numel(), 3);
  const std::vector<float> module_out(got.const_data_ptr<float>(), got.const_data_ptr<float>() + 3);

  auto c = fatpte::Container::open_file(path);
  ASSERT_TRUE(c.ok());
  fatpte::Dispatch runner;
  ASSERT_TRUE(fatpte::load(*c.value(), fatpte::Choice{}, fatpte::LoadOptions{}, runner).ok());
  fatpte::Tensor t;
  t.shape = {1, 4};
  t.data = bytes;
  auto ran = runner.loaded->run({t});
  ASSERT_TRUE(ran.ok()) << ran.error().describe();
  ASSERT_EQ(ran.value().at(0).dtype, fatpte::DType::kFloat32);
  std::vector<float> runner_out(3);
  std::memcpy(runner_out.data(), ran.value().at(0).data.data(), 12);
  EXPECT_EQ(module_out, runner_out);  // the same conversions, the same program: the same bits

  std::vector<std::uint8_t> half(8);
  for (int i = 0; i < 4; ++i) {
    const std::uint16_t h = fatpte::float_to_half(x[static_cast<std::size_t>(i)]);
    std::memcpy(half.data() + 2 * i, &h, 2);
  }
  Tensor14 wrong(executorch::aten::ScalarType::Half, half);
  EXPECT_FALSE(module.value()->execute("forward", {wrong.value()}).ok());
}

}  // namespace
