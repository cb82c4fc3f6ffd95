// Memory for a loaded ExecuTorch method, shared by the loader's runner (run/et_runner.hpp) and the fat
// delegate's nested programs (delegate/fat_backend.hpp): aligned copies of a payload, the planned
// buffers a method's MethodMeta asks for (bounded, reserved rather than committed), and reasons made
// of ExecuTorch's errors.
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

// A copy of `size` bytes at `data` (a payload that does not lie aligned) in memory aligned to 64;
// null when out of memory. Its size is the payload's, which lies in the file: it is committed.
Buffer aligned_copy(const std::uint8_t* data, std::size_t size);

// Memory reserved, not committed: an anonymous private mapping (MAP_NORESERVE where the system has
// it), whose pages read as zero and cost nothing until the program writes them, as ExecuTorch's own
// Module gets from the allocator. So a small file that declares a large planned buffer takes
// address space, not memory; a page counts once written. Unmapped when destroyed.
class Reserved {
 public:
  Reserved() = default;
  // `size` bytes (at least one, page-aligned); empty when the system refuses the mapping.
  static Reserved map(std::size_t size);
  Reserved(Reserved&& other) noexcept;
  Reserved& operator=(Reserved&& other) noexcept;
  Reserved(const Reserved&) = delete;
  Reserved& operator=(const Reserved&) = delete;
  ~Reserved();

  std::uint8_t* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  explicit operator bool() const noexcept { return data_ != nullptr; }

 private:
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// "12 B", "3.5 KiB", "1.2 MiB", "16.0 GiB".
std::string bytes_text(std::uint64_t n);

// ExecuTorch's error and what it logged while failing, as one reason.
std::string et_reason(const char* what, executorch::runtime::Error error, const Capture& capture);

// The planned buffers of `meta` (method `method`), at most `limit` bytes in all, reserved in one
// mapping (`arena`, each buffer at a multiple of 64 in it) and appended to `spans`; "" when
// reserved, else why not: past the limit, the reason names the method, the buffer, its size and
// the limit, then `limit_origin` (where the limit comes from). `total` receives the bytes asked for.
std::string plan_memory(const executorch::runtime::MethodMeta& meta, const std::string& method, std::uint64_t limit,
                        const std::string& limit_origin, Reserved& arena,
                        std::vector<executorch::runtime::Span<std::uint8_t>>& spans, std::uint64_t& total);

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
