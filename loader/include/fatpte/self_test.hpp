// self_test.hpp: running an entry's golden calls (specs/nfat-manifest.md section 11) through the
// loaded entry, and comparing each output with its golden tensor under its tolerance.
//
// A loader runs them before it serves an entry when asked (LoadOptions::self_test, C
// fatpte_load_options_set_self_test, `fatpte-run --self-test`): a mismatch is a failed load, and
// the next eligible entry is tried with the finding as the reason. `self_test` runs them on an
// entry already loaded and reports every figure (C fatpte_self_test, `fatpte-run
// --golden-report`, what `fatpte check` reads). Golden tensors are read only here: a load without
// a self-test reads no byte of them.
#ifndef FATPTE_SELF_TEST_HPP_
#define FATPTE_SELF_TEST_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/result.hpp"
#include "fatpte/tensor.hpp"

namespace fatpte {

// One output of one golden call, against its golden tensor: passed when it has the golden
// tensor's dtype and shape and max_abs <= atol + rtol * max|want| (= bound).
struct GoldenOutputResult {
  std::string key;             // the golden tensor's named-data key
  std::string dtype;           // the golden tensor's
  std::vector<std::int64_t> shape;
  double max_abs = 0;          // max |got - want| (infinity where a NaN or infinity meets another value)
  double max_rel = 0;          // max_abs / max |want|
  double max_want = 0;         // max |want| over the golden tensor's finite elements
  double atol = 0;
  double rtol = 0;
  double bound = 0;            // atol + rtol * max |want|
  bool passed = false;
  std::string problem;         // why not comparable (another dtype or shape, a None output), or ""
};

// One golden call made.
struct GoldenCallResult {
  std::size_t index = 0;       // of the call in the entry's golden list
  std::string method;
  std::string error;           // the program refused the call ("" when it ran)
  std::vector<GoldenOutputResult> outputs;
  std::vector<Tensor> got;     // the outputs, when SelfTestOptions::keep_outputs
};

struct SelfTestReport {
  std::uint32_t entry = 0;
  std::string method;                  // the loaded method: its golden calls were made
  std::size_t other_method_calls = 0;  // golden calls of other methods, not made
  std::vector<GoldenCallResult> calls;
  bool passed = true;                  // every call ran and every output passed
  // Under a signature, the entry's golden calls are ones it does not vouch for
  // (specs/nfat-signature.md section 6.1): none was made or read, and none can fail the entry.
  bool unsigned_calls = false;
  // One line: `3 golden calls of method 'forward' passed (largest: ...)`, or the first failure:
  // `golden call 1 of method 'forward', output 0 (key K): max abs 0.31 > 1e-05 + ...`; or why none
  // was made (unsigned_calls).
  std::string summary() const;
  // {"entry", "method", "passed", "unsigned_calls", "other_method_calls", "calls": [{"index", "method", "error",
  // "outputs": [{"key", "dtype", "shape", "max_abs", "max_rel", "max_want", "atol", "rtol", "bound",
  // "passed", "problem"}]}]} (names as the container has them; non-finite numbers as Python's
  // json writes them).
  std::string json(const Container& container) const;
};

struct SelfTestOptions {
  bool keep_outputs = false;  // keep each call's outputs in the report (GoldenCallResult::got)
  // The verified statement of a signed load (Dispatch::signature), or null: with it, each golden
  // tensor hashes as signed before a call is made (E1309, E1310), and golden calls the signature
  // does not vouch for are not made (unsigned_calls).
  const SignatureCheck* signature = nullptr;
};

// Run the golden calls of `loaded`'s entry for its loaded method, in order, on `loaded` (whose
// state they change), and compare. A mismatch is in the report (passed false), not an error;
// errors are for the container: a golden key that is not a tensor (E0421, E0419), golden calls
// that do not hash to the entry's fatpte.golden.sha256 (E0423), a damaged segment (E0305).
Result<SelfTestReport> self_test(const Container& container, Loaded& loaded, const SelfTestOptions& options = {});

}  // namespace fatpte

#endif  // FATPTE_SELF_TEST_HPP_
