// An entry's signature adapter as its manifest states it (specs/nfat-manifest.md 5.3): for one
// method, each user input and output whose TensorSpec states a `program_dtype`, with the dtype the
// caller gives or gets (the signature's) and the one the program has. What the method type
// (executorch/method.hpp) converts at the edge; fatpte/manifest/model.py's TensorSpec.program_dtype.
#ifndef FATPTE_SRC_MANIFEST_ADAPTER_HPP_
#define FATPTE_SRC_MANIFEST_ADAPTER_HPP_

#include <optional>
#include <string>
#include <vector>

#include "fatpte/tensor.hpp"
#include "nfat_manifest_generated.h"

namespace fatpte {

// One adapted position: the caller's dtype (the container's signature) and the program's.
struct EdgeSlot {
  DType call = DType::kFloat32;
  DType program = DType::kFloat16;
};

struct EdgeAdapter {
  std::vector<std::optional<EdgeSlot>> inputs;   // per user input; nullopt: no conversion
  std::vector<std::optional<EdgeSlot>> outputs;  // per user output
  bool empty() const noexcept;
  // `inputs[0] float32 <- float16, outputs[0] float32 <- float16`: for a load's details.
  std::string text() const;
};

// The adapter entry `me` declares for method `method`; empty when the entry states no signature,
// no such method or no program_dtype (the manifest passed its value rules, 2.2.12).
EdgeAdapter edge_adapter(const nfat::manifest::Entry* me, const std::string& method);

}  // namespace fatpte

#endif  // FATPTE_SRC_MANIFEST_ADAPTER_HPP_
