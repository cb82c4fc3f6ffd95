// Example backend `dense_neon`: the dense network with Advanced SIMD (NEON) intrinsics. Built
// only when CMake targets aarch64 (loader/CMakeLists.txt); is_available still asks the OS, since
// a kernel may hide ASIMD from user space.
#include <arm_neon.h>

#if defined(__linux__)
#include <sys/auxv.h>
#endif

#include "dense_model.hpp"

namespace {

float dot(const float* w, const float* x, std::uint32_t n) {
  // Two accumulators so consecutive fused multiply-adds do not wait on each other.
  float32x4_t acc0 = vdupq_n_f32(0.0f);
  float32x4_t acc1 = vdupq_n_f32(0.0f);
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    acc0 = vfmaq_f32(acc0, vld1q_f32(w + i), vld1q_f32(x + i));
    acc1 = vfmaq_f32(acc1, vld1q_f32(w + i + 4), vld1q_f32(x + i + 4));
  }
  if (i + 4 <= n) {
    acc0 = vfmaq_f32(acc0, vld1q_f32(w + i), vld1q_f32(x + i));
    i += 4;
  }
  float total = vaddvq_f32(vaddq_f32(acc0, acc1));
  for (; i < n; ++i) total += w[i] * x[i];
  return total;
}

int is_available(const char*, char* why, size_t why_size) {
#if defined(__linux__)
  // HWCAP_ASIMD is bit 1 of AT_HWCAP on Linux aarch64 (asm/hwcap.h); spelled out so the file
  // does not need the kernel headers, which a cross sysroot may lack.
  constexpr unsigned long kHwcapAsimd = 1ul << 1;
  if ((getauxval(AT_HWCAP) & kHwcapAsimd) == 0) {
    return fatpte_example::say(why, why_size, "the kernel does not report ASIMD (NEON) in AT_HWCAP");
  }
#endif
  // Elsewhere (macOS on Apple silicon) ASIMD is part of the architecture the OS requires.
  return 0;
}

const fatpte_backend kTable = {FATPTE_BACKEND_ABI_VERSION, "dense_neon", is_available, fatpte_example::load,
                                fatpte_example::run<dot>, fatpte_example::unload};

}  // namespace

extern "C" __attribute__((visibility("default"))) const fatpte_backend* fatpte_backend_v1(void) { return &kTable; }
