// Test backends that the loader must refuse without calling them: built three times, as
// libfatpte_backend_wrong_abi.so (abi_version FATPTE_BACKEND_ABI_VERSION + 1), as
// libfatpte_backend_wrong_id.so (whose table says it is `dense_ref`) and as
// libfatpte_backend_abi_range.so (a well-formed `dense_avx2` table of this loader's ABI version,
// installed by the test for an entry whose manifest backend_abi range excludes that version).
// Every function aborts, so a loader that called one would crash the test.
#include <cstdlib>

#include "fatpte/backend.h"

namespace {

int is_available(const char*, char*, size_t) { std::abort(); }
int load(const void*, uint64_t, const fatpte_named_data*, void**, char*, size_t) { std::abort(); }
int run(void*, const float*, size_t, float*, size_t, size_t*, char*, size_t) { std::abort(); }
void unload(void*) { std::abort(); }

#if defined(FATPTE_REFUSED_WRONG_ABI)
const fatpte_backend kTable = {FATPTE_BACKEND_ABI_VERSION + 1, "wrong_abi", is_available, load, run, unload};
#elif defined(FATPTE_REFUSED_ABI_RANGE)
const fatpte_backend kTable = {FATPTE_BACKEND_ABI_VERSION, "dense_avx2", is_available, load, run, unload};
#else
const fatpte_backend kTable = {FATPTE_BACKEND_ABI_VERSION, "dense_ref", is_available, load, run, unload};
#endif

}  // namespace

extern "C" __attribute__((visibility("default"))) const fatpte_backend* fatpte_backend_v1(void) { return &kTable; }
