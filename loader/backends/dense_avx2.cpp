// Example backend `dense_avx2`: the dense network with AVX2 + FMA intrinsics. This file alone is
// compiled with -mavx2 -mfma; is_available refuses to run where the CPU or the OS lacks them.
#include <immintrin.h>

#include "dense_model.hpp"

namespace {

float dot(const float* w, const float* x, std::uint32_t n) {
  __m256 acc = _mm256_setzero_ps();
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  float total = _mm_cvtss_f32(s);
  for (; i < n; ++i) total += w[i] * x[i];
  return total;
}

int is_available(const char*, char* why, size_t why_size) {
  // __builtin_cpu_supports consults cpuid and the OS-enabled state (XCR0) for AVX.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 0;
  return fatpte_example::say(why, why_size, "this CPU (or its OS) does not provide AVX2 and FMA");
}

const fatpte_backend kTable = {FATPTE_BACKEND_ABI_VERSION, "dense_avx2", is_available, fatpte_example::load,
                                fatpte_example::run<dot>, fatpte_example::unload};

}  // namespace

extern "C" __attribute__((visibility("default"))) const fatpte_backend* fatpte_backend_v1(void) { return &kTable; }
