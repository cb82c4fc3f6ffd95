// The fat delegate (specs/executorch.md, "Fat delegates"): an ExecuTorch backend whose delegate
// payload is an NFAT container of several lowerings of the same partition. Its init validates the
// container (every rule, bounded by the payload's size), chooses the entry for this device with
// fatpte's selection rule, made runtime-aware by giving the device profile the backends that are
// registered and available in this process's ExecuTorch registry, and then either forwards init,
// execute and destroy to the chosen entry's backend (get_backend_class; the inner payload handed
// over zero-copy, with the same BackendInitContext) or, for an entry whose payload is a whole
// program (ET12), loads and runs that program as a nested one. When the chosen entry fails to
// initialise the next one is tried; every decision is logged through ExecuTorch's log.
//
// Load-time options (runtime specs, per backend id) "prefer" and "exclude": entry names or backend
// ids, comma-separated, as `--prefer` and `--exclude` take them; "self_test"; "isolate" and
// "isolate_timeout_ms" (delegate/isolate.hpp: a nested program qualified in a child process).
#ifndef FATPTE_SRC_DELEGATE_FAT_BACKEND_HPP_
#define FATPTE_SRC_DELEGATE_FAT_BACKEND_HPP_

#include <string>

#include <executorch/runtime/core/error.h>

#include "executorch/backend_ids.hpp"

namespace fatpte {
namespace et {

// Register the fat delegate in this process's ExecuTorch registry under `id` (kFatBackendId, or
// the id another producer's fat programs use, e.g. upstream's "NativeBackend"). Ok when it is
// registered under `id` now, including by an earlier call; InvalidArgument for an id that is
// empty or longer than 128 bytes; ExecuTorch's error when another backend holds the id.
executorch::runtime::Error register_fat_backend(const char* id);

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_DELEGATE_FAT_BACKEND_HPP_
