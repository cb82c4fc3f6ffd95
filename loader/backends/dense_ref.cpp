// Example backend `dense_ref`: the dense network in plain C++, available everywhere.
#include "dense_model.hpp"

namespace {

float dot(const float* w, const float* x, std::uint32_t n) {
  float s = 0.0f;
  for (std::uint32_t i = 0; i < n; ++i) s += w[i] * x[i];
  return s;
}

int is_available(const char*, char*, size_t) { return 0; }

const fatpte_backend kTable = {FATPTE_BACKEND_ABI_VERSION, "dense_ref", is_available, fatpte_example::load,
                                fatpte_example::run<dot>, fatpte_example::unload};

}  // namespace

extern "C" __attribute__((visibility("default"))) const fatpte_backend* fatpte_backend_v1(void) { return &kTable; }
