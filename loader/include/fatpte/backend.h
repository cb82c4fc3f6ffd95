/* backend.h: the ABI between libfatpte and a backend kernel library.
 *
 * A backend library is a shared library named libfatpte_backend_<backend_id>.so (.dylib on
 * macOS), found only in the directories the caller configures and then in FATPTE_BACKEND_PATH,
 * never at a path taken from a container. It exports one C symbol, FATPTE_BACKEND_ENTRY_SYMBOL,
 * returning its function table. The loader checks abi_version and backend_id before calling
 * anything else in the table; a library that fails either check is refused and never called.
 *
 * Every function returns 0 on success; on failure it writes a NUL-terminated reason into `why`
 * (at most why_size bytes) and returns non-zero. None may throw or longjmp across this boundary.
 */
#ifndef FATPTE_BACKEND_H_
#define FATPTE_BACKEND_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FATPTE_BACKEND_ABI_VERSION 1u
#define FATPTE_BACKEND_ENTRY_SYMBOL "fatpte_backend_v1"

/* Named data of the container, zero-copy: lookup sets *data and *size to the bytes stored under
 * `key` (read-only, valid until the container is closed) and returns 0, or returns non-zero when
 * the container has no such key. */
typedef struct fatpte_named_data {
  void* context;
  int (*lookup)(void* context, const char* key, const void** data, uint64_t* size);
} fatpte_named_data;

typedef struct fatpte_backend {
  uint32_t abi_version; /* FATPTE_BACKEND_ABI_VERSION the library was built against */
  const char* backend_id; /* must equal the id in the library's file name */
  /* Whether this machine can run the backend (e.g. the CPU has the instructions it uses);
   * device_json is the canonical device profile. Returns 0 when available. */
  int (*is_available)(const char* device_json, char* why, size_t why_size);
  /* Prepare a payload (pointer into the container's read-only mapping, aligned as its entry
   * says) for running; *model receives the backend's handle. */
  int (*load)(const void* payload, uint64_t size, const fatpte_named_data* named_data, void** model, char* why,
              size_t why_size);
  /* Run once: `input_count` floats in, at most `output_capacity` floats out, *output_count set. */
  int (*run)(void* model, const float* input, size_t input_count, float* output, size_t output_capacity,
             size_t* output_count, char* why, size_t why_size);
  void (*unload)(void* model);
} fatpte_backend;

typedef const fatpte_backend* (*fatpte_backend_entry)(void);

#ifdef __cplusplus
}
#endif

#endif /* FATPTE_BACKEND_H_ */
