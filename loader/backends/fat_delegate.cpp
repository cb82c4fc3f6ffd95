// libexecutorch_backend_fatpte.so: the fat delegate (loader/src/delegate/fat_backend.hpp) as an
// ExecuTorch backend library. Loading it registers backend id FatpteBackend in the process's
// ExecuTorch registry, as loading any backend library registers its backend; the build option
// FATPTE_FAT_DELEGATE_ALIAS (CMake) names one more id to register it under, e.g. NativeBackend
// for upstream's fat programs in a runtime that links no native backend of its own. Its name
// follows ExecuTorch's naming of backend libraries (FatpteBackend -> libexecutorch_backend_fatpte.so),
// so fatpte-run finds it like any other. Everything of libfatpte inside it is hidden
// (--exclude-libs), so it coexists with a libfatpte the application links.
#include "delegate/fat_backend.hpp"

#include <executorch/runtime/platform/log.h>

extern "C" {

// Register the fat delegate under one more backend id (e.g. "NativeBackend"); 0 when it is
// registered under `id` now (also by an earlier call), else ExecuTorch's error code.
__attribute__((visibility("default"))) int fatpte_register_fat_backend(const char* id) {
  return static_cast<int>(fatpte::et::register_fat_backend(id));
}

}  // extern "C"

namespace {

bool register_ids() {
  if (fatpte_register_fat_backend(fatpte::et::kFatBackendId) != 0) {
    ET_LOG(Error, "fatpte fat delegate: cannot register backend id %s", fatpte::et::kFatBackendId);
  }
#ifdef FATPTE_FAT_DELEGATE_ALIAS
  if (fatpte_register_fat_backend(FATPTE_FAT_DELEGATE_ALIAS) != 0) {
    ET_LOG(Error, "fatpte fat delegate: cannot register backend id %s", FATPTE_FAT_DELEGATE_ALIAS);
  }
#endif
  return true;
}

const bool registered = register_ids();

}  // namespace
