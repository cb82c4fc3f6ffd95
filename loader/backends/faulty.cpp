// libexecutorch_backend_faulty.so: a test-only ExecuTorch backend that fails on purpose (issue 38),
// so the tests can show that an application survives a backend that crashes or misbehaves and is
// served by the next eligible entry. Registered as ExecuTorch backend id FaultyBackend (ExecuTorch's
// naming: FaultyBackend -> libexecutorch_backend_faulty.so); built only with FATPTE_BUILD_TESTS,
// into a folder of its own (build/loader/fault-backends), never on a default search path.
//
// One library serves every test: what it does is read from its delegate payload (the processed
// bytes tests/support/faulty.py writes), "FAULTY1 " then a mode:
//   good          execute computes the sum of its float32 inputs into its last argument (for the
//                 add fixture: x + y, the portable entry's function);
//   segv_init     init dereferences an invalid address (SIGSEGV);
//   sigill_init   init runs an undefined instruction (SIGILL: ud2 on x86-64, udf on aarch64);
//   newer_core_init  init runs an instruction of a newer core (aarch64: SDOT, ARMv8.2 dot product,
//                 SIGILL on a Cortex-A53; x86-64: an AVX-512 instruction, SIGILL without AVX-512);
//   execute_error execute returns Error::Internal;
//   nan           execute fills its last argument with quiet NaNs;
//   hang          execute sleeps forever.
// A mode may end in "@N": it applies from the call N (counted from 0 per handle) on, and the calls
// before it compute as `good`: a failure after good calls, for a stateful program.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include <unistd.h>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/platform/log.h>

namespace {

namespace R = executorch::runtime;

constexpr char kMagic[] = "FAULTY1 ";

enum class Mode { kGood, kSegvInit, kSigillInit, kNewerCoreInit, kExecuteError, kNan, kHang };

struct Handle {
  Mode mode = Mode::kGood;
  std::uint64_t from_call = 0;  // the mode applies from this call on
  std::uint64_t calls = 0;
};

bool parse_mode(const std::string& word, Mode& mode) {
  static const struct {
    const char* name;
    Mode mode;
  } kModes[] = {{"good", Mode::kGood},
                {"segv_init", Mode::kSegvInit},
                {"sigill_init", Mode::kSigillInit},
                {"newer_core_init", Mode::kNewerCoreInit},
                {"execute_error", Mode::kExecuteError},
                {"nan", Mode::kNan},
                {"hang", Mode::kHang}};
  for (const auto& m : kModes) {
    if (word == m.name) {
      mode = m.mode;
      return true;
    }
  }
  return false;
}

// "FAULTY1 mode[@N]" into `h`; false when the payload says something else.
bool parse_payload(const void* data, std::size_t size, Handle& h) {
  const std::size_t magic = sizeof kMagic - 1;
  if (data == nullptr || size <= magic || size > 256 || std::memcmp(data, kMagic, magic) != 0) return false;
  std::string text(static_cast<const char*>(data) + magic, size - magic);
  while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
  const std::size_t at = text.find('@');
  if (at != std::string::npos) {
    const std::string n = text.substr(at + 1);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 9) return false;
    h.from_call = std::stoull(n);
    text.resize(at);
  }
  return parse_mode(text, h.mode);
}

[[noreturn]] void undefined_instruction() {
#if defined(__x86_64__)
  __asm__ volatile("ud2");
#elif defined(__aarch64__)
  __asm__ volatile(".inst 0x00000000");  // udf #0
#endif
  __builtin_trap();
}

// An instruction the base architecture lacks; returns where the core has it.
void newer_core_instruction() {
#if defined(__aarch64__)
  __asm__ volatile(".inst 0x4e829420" ::: "v0");  // sdot v0.4s, v1.16b, v2.16b (ARMv8.2 dotprod)
#elif defined(__x86_64__)
  __asm__ volatile(".byte 0x62, 0xf1, 0x7c, 0x48, 0x57, 0xc0" ::: "xmm0");  // vxorps zmm0, zmm0, zmm0 (AVX-512F)
#else
  undefined_instruction();
#endif
}

// An address no process maps, read through a volatile so the compiler cannot see the fault coming.
volatile std::uintptr_t unmapped_address = 16;

void segfault() { *reinterpret_cast<volatile int*>(unmapped_address) = 1; }

// `good`: the last argument is the sum of the float32 tensors before it, elementwise.
R::Error sum_into_last(R::Span<R::EValue*> args, bool nan) {
  if (args.size() < 2 || !args[args.size() - 1]->isTensor()) return R::Error::InvalidArgument;
  auto out = args[args.size() - 1]->toTensor();
  if (out.scalar_type() != executorch::aten::ScalarType::Float) return R::Error::InvalidArgument;
  float* o = out.mutable_data_ptr<float>();
  const auto n = static_cast<std::size_t>(out.numel());
  for (std::size_t i = 0; i < n; ++i) o[i] = nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
  if (nan) return R::Error::Ok;
  for (std::size_t a = 0; a + 1 < args.size(); ++a) {
    if (!args[a]->isTensor()) continue;
    auto in = args[a]->toTensor();
    if (in.scalar_type() != executorch::aten::ScalarType::Float || static_cast<std::size_t>(in.numel()) != n) {
      return R::Error::InvalidArgument;
    }
    const float* x = in.const_data_ptr<float>();
    for (std::size_t i = 0; i < n; ++i) o[i] += x[i];
  }
  return R::Error::Ok;
}

class FaultyBackend final : public R::BackendInterface {
 public:
  bool is_available() const override { return true; }

  R::Result<R::DelegateHandle*> init(R::BackendInitContext& context, R::FreeableBuffer* processed,
                                     R::ArrayRef<R::CompileSpec>) const override {
    Handle parsed;
    if (processed == nullptr || !parse_payload(processed->data(), processed->size(), parsed)) {
      ET_LOG(Error, "FaultyBackend: the payload is not \"FAULTY1 mode[@N]\"");
      return R::Error::InvalidProgram;
    }
    processed->Free();
    if (parsed.mode == Mode::kSegvInit) segfault();
    if (parsed.mode == Mode::kSigillInit) undefined_instruction();
    if (parsed.mode == Mode::kNewerCoreInit) newer_core_instruction();
    Handle* h = context.get_runtime_allocator()->allocateInstance<Handle>();
    if (h == nullptr) return R::Error::MemoryAllocationFailed;
    new (h) Handle(parsed);
    return h;
  }

  R::Error execute(R::BackendExecutionContext&, R::DelegateHandle* handle, R::Span<R::EValue*> args) const override {
    auto* h = static_cast<Handle*>(handle);
    const bool faulty = h->calls++ >= h->from_call;
    const Mode mode = faulty ? h->mode : Mode::kGood;
    if (mode == Mode::kExecuteError) {
      ET_LOG(Error, "FaultyBackend: execute fails on purpose (call %llu)",
             static_cast<unsigned long long>(h->calls - 1));
      return R::Error::Internal;
    }
    if (mode == Mode::kHang) {
      for (;;) pause();
    }
    return sum_into_last(args, mode == Mode::kNan);
  }

  void destroy(R::DelegateHandle* handle) const override {
    if (handle != nullptr) static_cast<Handle*>(handle)->~Handle();
  }
};

FaultyBackend backend;
const R::Error registered = R::register_backend(R::Backend{"FaultyBackend", &backend});

}  // namespace
