// Memory for a loaded ExecuTorch method, shared by the loader's runner (run/et_runner.hpp) and the fat
// delegate's nested programs (delegate/fat_backend.hpp): aligned zeroed buffers, the planned buffers a
// method's MethodMeta asks for (bounded), and reasons made of ExecuTorch's errors.
#ifndef FATPTE_SRC_EXECUTORCH_MEMORY_HPP_
#define FATPTE_SRC_EXECUTORCH_MEMORY_HPP_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/span.h>
#include <executorch/runtime/core/data_loader.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>

#include "executorch/runtime.hpp"

namespace fatpte {
namespace et {

struct FreeDeleter {
  void operator()(std::uint8_t* p) const noexcept { std::free(p); }
};
using Buffer = std::unique_ptr<std::uint8_t, FreeDeleter>;

// `size` bytes (at least one) aligned to 64, for any SIMD load the kernels do, and zeroed, so a run
// never depends on what the allocator left there; null when out of memory.
Buffer zeroed(std::size_t size);

// "12 B", "3.5 KiB", "1.2 MiB".
std::string bytes_text(std::uint64_t n);

// ExecuTorch's error and what it logged while failing, as one reason.
std::string et_reason(const char* what, executorch::runtime::Error error, const Capture& capture);

// The planned buffers of `meta` (method `method`), at most `limit` bytes in all, appended to
// `buffers` with their spans; "" when allocated, else why not. `total` receives the bytes.
std::string plan_memory(const executorch::runtime::MethodMeta& meta, const std::string& method, std::uint64_t limit,
                        std::vector<Buffer>& buffers, std::vector<executorch::runtime::Span<std::uint8_t>>& spans,
                        std::uint64_t& total);

// Program::load of a program whose flatbuffer read_program (executorch/program.hpp) has verified;
// `loader` serves the same bytes, which start at `flatbuffer`. ExecuTorch's InternalConsistency
// is that verification (the flatbuffers verifier of the same schema over the same program_size
// bytes) followed by validate_program (tensor sizes that cannot overflow, list element types).
// The verification is not run a second time: validate_program runs here, then Program::load with
// Minimal. What ExecuTorch logs on the way is kept by the caller's Capture.
executorch::runtime::Result<executorch::runtime::Program> load_verified(executorch::runtime::DataLoader* loader,
                                                                        const void* flatbuffer);

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_EXECUTORCH_MEMORY_HPP_
