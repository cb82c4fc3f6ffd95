// libFuzzer target for run inputs (issue 33, I1) under AddressSanitizer and
// UndefinedBehaviorSanitizer: fatpte::calls_from_json on the input as a calls.json, as
// `fatpte-run --inputs` reads it, then what the runner does with each tensor before a method sees
// it: its element count (which must not wrap) and its bytes, and the JSON and text it is printed
// as (for tensors of at most 4096 elements, so output stays bounded). The fuzz build has no
// ExecuTorch (-DFATPTE_EXECUTORCH=OFF): the method's own checks of a call are exercised by
// loader/tests/executorch_test.cpp (RandomShapesIntoARealMethod) under ASan instead. Seeded with
// the fixtures' calls and the structure-aware generator's (tests/strategies.hostile_calls: huge,
// zero and overflowing shapes, NaN and Infinity, long and deep arrays). Any sanitizer report,
// crash or leak is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fatpte/tensor.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto calls = fatpte::calls_from_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!calls.ok()) return 0;
  for (const fatpte::Call& call : calls.value()) {
    for (const fatpte::Tensor& t : call.inputs) {
      const std::uint64_t n = t.numel();
      // What the loader trusts of a parsed tensor: its count fits, and its bytes are exactly it.
      if (n == fatpte::kNoCount || t.data.size() != n * fatpte::element_size(t.dtype)) std::abort();
      if (n <= 4096) {
        volatile std::size_t sink = fatpte::tensor_json(t).size() + fatpte::tensor_text(t).size();
        (void)sink;
        for (std::size_t i = 0; i < n; ++i) (void)t.as_double(i);
      }
    }
  }
  return 0;
}
