// An entry's golden calls, read to be run (specs/nfat-manifest.md section 11): each key's tensor
// (its layout and its segment's bytes in the mapping), the checks a reader makes before running
// them, and how far an output is from its golden tensor. What run/self_test.cpp and the fat
// delegate run; fatpte/manifest/model.py (`golden_bound`) bounds the distance the same way in Python.
#ifndef FATPTE_SRC_CONTAINER_GOLDEN_HPP_
#define FATPTE_SRC_CONTAINER_GOLDEN_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"
#include "fatpte/tensor.hpp"

namespace fatpte {

// A golden tensor: a named-data key with a contiguous layout.
struct GoldenTensor {
  std::string key;
  std::string dtype;              // the layout's dtype name
  std::int8_t scalar_type = 0;    // ExecuTorch's ScalarType number of it
  std::uint64_t element_size = 0;
  std::vector<std::int64_t> sizes;
  std::uint32_t segment = 0;
  Bytes bytes;                    // the segment, in the mapping: read only after check_golden_segments
};

// A golden input as a call's Tensor (its bytes copied): what the method type's input policy takes.
Tensor golden_input(const GoldenTensor& t);

struct GoldenOutputSpec {
  GoldenTensor want;
  double atol = 0;
  double rtol = 0;
};

struct GoldenCallSpec {
  std::uint32_t index = 0;  // of the call in the entry's golden list
  std::string method;
  std::vector<GoldenTensor> inputs;
  std::vector<GoldenOutputSpec> outputs;
};

// The golden calls of table entry `index`, from the verified manifest: each key found with a
// contiguous layout (E0421), its segment holding the layout's bytes (E0419), and, when the entry's
// provenance states `fatpte.golden.sha256`, the calls hashing to it (E0423). No segment byte is
// read. Empty when the entry has none.
Result<std::vector<GoldenCallSpec>> golden_calls(const Container& container, std::uint32_t index);
// Whether entry `index` has golden calls of `method`; true too when its calls cannot be read (the
// self-test that runs them then says what is wrong with them). Isolated qualification asks, to
// have the child self-test (run/qualify.cpp, delegate/isolate.cpp).
bool has_golden_calls(const Container& container, std::uint32_t index, const std::string& method);
// The CRC32C of every segment the calls name, each once, in the order they name them (E0305):
// before a byte of them is read.
Status check_golden_segments(const Container& container, const std::vector<GoldenCallSpec>& calls);

// E0422 (specs/nfat-manifest.md 11.2) for the first of entry `index`'s golden `calls` whose method
// its program signature does not list (every call, when it states none), `*bad` pointing at it;
// OK when each is listed. A self-test fails on it whichever method it serves (the container is
// invalid): the entry is skipped and the next one tried, as fatpte check reports it (exit 1).
Status golden_methods_listed(const Container& container, std::uint32_t index, const std::vector<GoldenCallSpec>& calls,
                             const GoldenCallSpec** bad);

// How far an output is from its golden tensor (specs/nfat-manifest.md 11.1).
struct GoldenComparison {
  std::string problem;   // not comparable: another dtype or shape, or a dtype without numbers ("" when comparable)
  double max_abs = 0;    // max |got - want|: infinity where a NaN or an infinity meets another value
  double max_want = 0;   // max |want| over its finite elements
  double bound = 0;      // golden_bound(atol, rtol, max_want)
  bool passed = false;   // within(max_abs, bound)
  // max_abs / max_want: 0 when both are 0, infinity when only max_want is.
  double max_rel() const noexcept;
};
// atol + rtol * max_want, saturated at the largest finite double where it would overflow (11.1).
double golden_bound(double atol, double rtol, double max_want) noexcept;
// Whether a difference is within a bound: a difference that is not finite (a NaN or an infinity
// against another value) never is, however large the bound.
bool within(double difference, double bound) noexcept;
// `got` holds `got_bytes` bytes of ScalarType `got_type`, row-major, of `got_sizes`.
GoldenComparison compare_golden(const GoldenOutputSpec& spec, std::int8_t got_type,
                                const std::vector<std::int64_t>& got_sizes, const std::uint8_t* got,
                                std::uint64_t got_bytes);

}  // namespace fatpte

#endif  // FATPTE_SRC_CONTAINER_GOLDEN_HPP_
