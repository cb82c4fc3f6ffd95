// One ExecuTorch method, loaded and driven: what the loader's runner (run/et_runner.hpp) and the
// fat delegate's nested programs (delegate/fat_backend.hpp) both run, so neither re-implements it.
//
// It owns the program's bytes as ExecuTorch reads them (the payload in place, or its aligned
// copy), the data loader over them, the Program, the bounded memory (planned buffers reserved as
// executorch/memory.hpp says, the method and temp allocators) and one loaded Method. Loading goes
// step by step, so each caller words its own reasons: load_program, reserve, load_method. Driving
// has one input-safety policy (set_input): a call's value is checked against the method's
// MethodMeta (its tag, dtype, rank, each size within the method's own, the bytes its dtype and
// shape hold) before a byte is staged, whether it comes from calls.json, the C API, a golden call
// or the fat delegate's caller. ExecuTorch's ScalarType numbers are read here and in value/ only.
#ifndef FATPTE_SRC_EXECUTORCH_METHOD_HPP_
#define FATPTE_SRC_EXECUTORCH_METHOD_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/named_data_map.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>

#include "container/golden.hpp"
#include "executorch/memory.hpp"
#include "manifest/adapter.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"
#include "fatpte/tensor.hpp"

namespace fatpte {
namespace et {

// What one method may take: its method and temp allocators' limits, its planned memory's limit and
// where that limit comes from (said when a method is past it).
struct MethodLimits {
  std::uint64_t method_allocator = 0;
  std::uint64_t temp_allocator = 0;
  std::uint64_t planned = 0;
  std::string planned_origin;
};

class ProgramMethod {
 public:
  // `program`: the program's bytes, aligned to alignof(std::max_align_t) as ExecuTorch reads them:
  // the payload in place, or `copy` (its aligned copy, which this object then owns).
  ProgramMethod(Bytes program, Buffer copy, const MethodLimits& limits);
  ProgramMethod(const ProgramMethod&) = delete;
  ProgramMethod& operator=(const ProgramMethod&) = delete;

  // ---- loading, in this order; the caller keeps a Capture around each for ExecuTorch's log ----
  // Program::load of the verified program (load_verified).
  executorch::runtime::Error load_program();
  const executorch::runtime::Program& program() const { return *program_; }
  // The planned buffers of method `name` (`meta`, of this program), within the limit; "" when
  // reserved, else why not (plan_memory). `total` receives the bytes asked for.
  std::string reserve(const std::string& name, const executorch::runtime::MethodMeta& meta, std::uint64_t& total);
  // load_method of the reserved method, with `named_data` for its external data.
  executorch::runtime::Error load_method(const executorch::runtime::NamedDataMap* named_data);
  // The entry's signature adapter (manifest/adapter.hpp), checked against the loaded method: each
  // adapted position a tensor of the program dtype it declares. "" when it fits, and from then on
  // every door below converts at the edge (inputs to the program's dtype before set_input, outputs
  // back to the signature's), round to nearest even; else why not, and nothing is adapted.
  std::string adapt(EdgeAdapter adapter);

  // ---- what was loaded ----
  const std::string& name() const noexcept { return name_; }
  executorch::runtime::Method* executorch_method() { return method_ ? &*method_ : nullptr; }
  Bytes program_bytes() const noexcept { return bytes_; }
  bool copied() const noexcept { return static_cast<bool>(copy_); }
  std::size_t planned_buffers() const noexcept { return spans_.size(); }
  const BoundedAllocator& method_allocator() const noexcept { return method_allocator_; }

  // ---- driving the loaded method ----
  // The inputs of one call, through the input policy, staged (copied into the method's layout);
  // INVALID_ARGUMENT naming `inputs[i]` (or `inputs` for the wrong count) and nothing run.
  Status set_inputs(const std::vector<Tensor>& inputs);
  // Method::execute; INVALID_ARGUMENT with ExecuTorch's error and log.
  Status execute();
  // Output i, copied out row-major (a None output, an Int, Double or Bool as one element).
  Result<Tensor> output(std::size_t i) const;
  // set_inputs, execute, every output.
  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs);
  // Golden call `call`: "" when every output is within its tolerance, else why not
  // (container/golden.hpp compares). The method's state changes.
  std::string golden(const GoldenCallSpec& call);
  // Input i given as an ExecuTorch value (a Module's caller, the fat delegate's): a tensor through
  // the input policy, zero-copy (a refusal is logged and is InvalidArgument), then set_input.
  executorch::runtime::Error set_value(std::size_t i, const executorch::runtime::EValue& value);
  // A Module's call (module/module.cpp): each input but None through set_value, execute, the outputs.
  executorch::runtime::Result<std::vector<executorch::runtime::EValue>> execute_values(
      const std::vector<executorch::runtime::EValue>& inputs);
  // Its two halves: the inputs set (an error is the caller's), then execute and the outputs (an
  // error here is the method's, never its inputs': what a fallback after load acts on).
  executorch::runtime::Error set_values(const std::vector<executorch::runtime::EValue>& inputs);
  executorch::runtime::Result<std::vector<executorch::runtime::EValue>> execute_set();
  // A delegate call: `args` holds the inputs, then the outputs the method's outputs are copied
  // into (resized where they are dynamic). The inputs pass the input policy, zero-copy.
  executorch::runtime::Error forward(executorch::runtime::Span<executorch::runtime::EValue*> args);

 private:
  // One staged tensor input: its elements laid out as the method expects, and ExecuTorch's view.
  struct StagedInput {
    std::vector<std::uint8_t> data;
    std::vector<executorch::runtime::etensor::TensorImpl::SizesType> sizes;
    std::vector<executorch::runtime::etensor::TensorImpl::DimOrderType> dim_order;
    std::vector<executorch::runtime::etensor::TensorImpl::StridesType> strides;
    std::unique_ptr<executorch::runtime::etensor::TensorImpl> impl;
  };
  // `program`: the dtype a signature adapter converts `in` to (the method's); none: `in`'s own.
  Status set_input(const executorch::runtime::MethodMeta& meta, std::size_t i, const Tensor& in, StagedInput& staged,
                   std::optional<DType> program = std::nullopt);
  Status set(std::size_t i, const executorch::runtime::EValue& v);
  executorch::runtime::Error set_checked(std::size_t i, const executorch::runtime::EValue& value);
  const EdgeSlot* in_slot(std::size_t i) const noexcept;
  const EdgeSlot* out_slot(std::size_t j) const noexcept;
  // An adapted input given as an ExecuTorch tensor of the call's dtype, converted into `staged`.
  executorch::runtime::Error stage_adapted(std::size_t i, const EdgeSlot& slot, const executorch::runtime::EValue& value,
                                           StagedInput& staged);

  // Destroyed in reverse: the method before the memory and the program it points into.
  Buffer copy_;
  Bytes bytes_;  // the program's: in place, or copy_
  executorch::extension::BufferDataLoader loader_;
  std::optional<executorch::runtime::Program> program_;
  std::string name_;
  Reserved planned_;
  std::vector<executorch::runtime::Span<std::uint8_t>> spans_;
  std::unique_ptr<executorch::runtime::HierarchicalAllocator> planned_allocator_;
  BoundedAllocator method_allocator_;
  BoundedAllocator temp_allocator_;
  std::uint64_t planned_limit_;
  std::string planned_origin_;
  std::unique_ptr<executorch::runtime::MemoryManager> memory_;
  std::optional<executorch::runtime::Method> method_;
  std::vector<StagedInput> staged_;  // the last call's inputs: a non-planned input points into them
  EdgeAdapter edge_;                 // the signature adapter; empty: none
  std::vector<StagedInput> edge_outputs_;  // execute_set's adapted outputs, until the next call
};

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_EXECUTORCH_METHOD_HPP_
