// Loading one ExecuTorch program entry of a container and running one of its methods.
//
// The steps, each recorded in the attempt: the payload's CRC32C (damage stops the load); the
// program's methods and delegates (executorch/program.hpp); the operator libraries (once per process);
// for each ExecuTorch backend the method's delegates name: withheld by the caller, already
// registered, or its library found, loaded and registered, then is_available(); Program::load
// from a BufferDataLoader over the payload in the mapping (zero copies); the planned buffers
// MethodMeta asks for; Program::load_method with the container's named data (executorch/named_data.hpp).
// Any step but the first that fails makes the entry skipped with the reason (ExecuTorch's error
// code and what it logged), so the loader tries the next eligible entry.
#ifndef FATPTE_SRC_RUN_ET_RUNNER_HPP_
#define FATPTE_SRC_RUN_ET_RUNNER_HPP_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace et {

class ProgramMethod;

// Whether this build carries the ExecuTorch runner (false: built without the SDK).
bool available() noexcept;

// set_executorch_log (dispatch.hpp).
void set_log_forwarding(bool forward);

// Load the operator libraries the options name ("kernels", "kernels_*"), once per process;
// one note per library saying what happened.
void load_operator_libraries(const LoadOptions& options, const std::vector<std::string>& dirs,
                             std::vector<std::string>& notes);

// Whether the ExecuTorch backends the manifest says `entry`'s program needs (its
// executorch_backends, revision 2) are there, loading their libraries: read before a byte of the
// payload is, so an entry that cannot run is neither hashed nor checksummed nor parsed. False with
// attempt.outcome saying why; true when they are, or when the manifest does not say (the
// program's own delegates are then checked by load_entry, after its bytes were checked).
Result<bool> listed_backends_ready(const Container& container, const Entry& entry, const LoadOptions& options,
                                   const std::vector<std::string>& dirs, Attempt& attempt);

// The method of a loaded program entry (executorch/method.hpp), and the program's bytes as
// ExecuTorch reads them (in the mapping, or the aligned copy): what the Module of
// module/module.cpp runs. nullptr and empty for any other kind of Loaded.
ProgramMethod* program_method(Loaded& loaded);
Bytes program_bytes(const Loaded& loaded);

// Whether ExecuTorch backend `id` is registered in this process now (false without the SDK).
bool backend_registered(const std::string& id);

// The backends registered and available in this process's ExecuTorch registry once every
// `libexecutorch_backend_*` library in `dirs` (but those the options withhold) is loaded.
std::set<std::string> registry_backends(const LoadOptions& options, const std::vector<std::string>& dirs);

// Load `entry`, whose listed backends are ready. Returns a failed Status only for damage (the
// payload's or a segment's checksum); otherwise `out` holds the loaded method, or is empty and
// attempt.outcome says why.
Status load_entry(const Container& container, const Entry& entry, const LoadOptions& options,
                  const std::vector<std::string>& dirs, Attempt& attempt, std::unique_ptr<Loaded>& out);

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_RUN_ET_RUNNER_HPP_
