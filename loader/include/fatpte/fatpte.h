/* fatpte.h: the C API of libfatpte, the NFAT container loader.
 *
 * Every function returns a fatpte_status (FATPTE_OK = 0, otherwise a pinned error code shared
 * with Python's fatpte.errors.ErrorCode through format_generated.h) and never lets a C++
 * exception escape. Where a function fills a fatpte_error, the error names the byte offset and
 * field path of the broken rule and says what was wrong, like Python's messages.
 *
 * Pointers returned by the entry queries point into the container's read-only mapping and stay
 * valid until fatpte_close. A container opened with fatpte_open_memory borrows the caller's
 * buffer, which must outlive it and must not change.
 */
#ifndef FATPTE_FATPTE_H_
#define FATPTE_FATPTE_H_

#include <stddef.h>
#include <stdint.h>

#include "fatpte/format_generated.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FATPTE_API
#else
#define FATPTE_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define FATPTE_NOEXCEPT noexcept
#else
#define FATPTE_NOEXCEPT
#endif

/* The offset of an error that has none (an I/O error, a bad argument). */
#define FATPTE_NO_OFFSET UINT64_MAX

/* Where and why: filled by the functions that take one (may be NULL: then only the status). */
typedef struct fatpte_error {
  fatpte_status code;
  uint64_t offset;    /* byte offset in the file, or FATPTE_NO_OFFSET */
  char field[96];     /* field path, e.g. "entries[2].size"; "" when none */
  char message[512];  /* "E0203 at 0x48 (entries[2].size): payload of ..." */
} fatpte_error;

typedef struct fatpte_container fatpte_container;

/* The whole message of the last call on this thread that filled a fatpte_error (whose `message`
 * is cut at 511 bytes; a failed load lists every entry tried): "" after a success. Valid until the
 * next such call on this thread. */
FATPTE_API const char* fatpte_last_message(void) FATPTE_NOEXCEPT;

/* The one-line meaning of a status ("the file ends inside the fixed header"); never NULL. */
FATPTE_API const char* fatpte_status_message(fatpte_status status) FATPTE_NOEXCEPT;
/* The status as printed: "E0203", "OK" for FATPTE_OK, "E????" for an unknown value. */
FATPTE_API const char* fatpte_status_tag(fatpte_status status) FATPTE_NOEXCEPT;
/* The ErrorCode name: "PAYLOAD_OUT_OF_BOUNDS", "OK", or "UNKNOWN". */
FATPTE_API const char* fatpte_status_name(fatpte_status status) FATPTE_NOEXCEPT;

/* Map `path` read-only and check its header and whole table (no payload byte is read). */
FATPTE_API fatpte_status fatpte_open_file(const char* path, fatpte_container** out,
                                          fatpte_error* error) FATPTE_NOEXCEPT;
/* The same over `size` bytes at `data`, which the container borrows. */
FATPTE_API fatpte_status fatpte_open_memory(const void* data, size_t size, fatpte_container** out,
                                            fatpte_error* error) FATPTE_NOEXCEPT;
/* Release the container; NULL is accepted. */
FATPTE_API void fatpte_close(fatpte_container* container) FATPTE_NOEXCEPT;

/* Every rule of the spec on an open container: the content checks (padding, manifest, payload
 * and segment checksums, payload kinds) after the structural ones that open ran. Returns the
 * first error in the canonical order, the same code and offset as Python's validate. */
FATPTE_API fatpte_status fatpte_validate(const fatpte_container* container,
                                         fatpte_error* error) FATPTE_NOEXCEPT;
/* Structural and content checks of a file or buffer in one call: the first error of any file,
 * including one that cannot be opened because its header or table is broken. */
FATPTE_API fatpte_status fatpte_validate_file(const char* path, fatpte_error* error) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_validate_memory(const void* data, size_t size,
                                                fatpte_error* error) FATPTE_NOEXCEPT;

/* Container and entry queries. Index-based queries return FATPTE_E_ENTRY_NOT_FOUND for an
 * index out of range and FATPTE_E_INVALID_ARGUMENT for a NULL pointer. */
FATPTE_API fatpte_status fatpte_version(const fatpte_container* c, uint32_t* out) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_entry_count(const fatpte_container* c, uint32_t* out) FATPTE_NOEXCEPT;
/* The entry with this name, else the only entry with this backend id (version 1: the first). */
FATPTE_API fatpte_status fatpte_find_entry(const fatpte_container* c, const char* name_or_backend_id,
                                           uint32_t* index) FATPTE_NOEXCEPT;
/* NUL-terminated, valid until fatpte_close. Version 1 entries are named by their backend id. */
FATPTE_API fatpte_status fatpte_entry_name(const fatpte_container* c, uint32_t index,
                                           const char** out) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_entry_backend_id(const fatpte_container* c, uint32_t index,
                                                 const char** out) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_entry_offset(const fatpte_container* c, uint32_t index,
                                             uint64_t* out) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_entry_size(const fatpte_container* c, uint32_t index,
                                           uint64_t* out) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_entry_alignment(const fatpte_container* c, uint32_t index,
                                                uint32_t* out) FATPTE_NOEXCEPT;
/* *has_checksum is 0 for version 1 entries, which carry none (then *out is 0). */
FATPTE_API fatpte_status fatpte_entry_checksum(const fatpte_container* c, uint32_t index, uint32_t* out,
                                               int* has_checksum) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_entry_priority(const fatpte_container* c, uint32_t index,
                                               int32_t* out) FATPTE_NOEXCEPT;
/* The payload, zero-copy: a pointer into the read-only mapping, aligned as the entry says. */
FATPTE_API fatpte_status fatpte_entry_payload(const fatpte_container* c, uint32_t index, const void** data,
                                                  uint64_t* size) FATPTE_NOEXCEPT;

/* The bytes stored under a named-data key (shared weights), zero-copy: a pointer into the
 * read-only mapping, aligned as its segment says. FATPTE_E_NAMED_DATA_NOT_FOUND when the container
 * has no such key. The first call reads the manifest (after the flatbuffers verifier). */
FATPTE_API fatpte_status fatpte_named_data_get(const fatpte_container* c, const char* key, const void** data,
                                               uint64_t* size) FATPTE_NOEXCEPT;
/* The number of named-data keys, and the key at `index` in bytewise order. */
FATPTE_API fatpte_status fatpte_named_data_count(const fatpte_container* c, uint32_t* out) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_named_data_key(const fatpte_container* c, uint32_t index,
                                               const char** key) FATPTE_NOEXCEPT;

/* The running machine's device profile as canonical JSON (the bytes Python's
 * `fatpte device --json` prints), NUL-terminated in `buffer`. *length receives the JSON's length
 * without the NUL; when `capacity` is too small nothing is written and the status is
 * FATPTE_E_INVALID_ARGUMENT, so a caller can ask with capacity 0 first. */
FATPTE_API fatpte_status fatpte_device_host_json(char* buffer, size_t capacity, size_t* length) FATPTE_NOEXCEPT;

/* ---- device profiles (specs/device-profile.md) ---- */

/* A parsed device profile: read once, handed to fatpte_select_device and fatpte_load_for. */
typedef struct fatpte_device fatpte_device;

/* "host" (this machine, every fact probed), a named profile (`x86-64-v3`, read from
 * $FATPTE_DEVICES_DIR or the named profiles the build knows), or a path to a profile JSON file:
 * read with the checks, in the order, of Python's DeviceProfile.load. */
FATPTE_API fatpte_status fatpte_device_load(const char* host_name_or_path, fatpte_device** out,
                                            fatpte_error* error) FATPTE_NOEXCEPT;
/* A profile from its JSON text (`size` bytes, no NUL needed). */
FATPTE_API fatpte_status fatpte_device_from_json(const char* json, size_t size, fatpte_device** out,
                                                 fatpte_error* error) FATPTE_NOEXCEPT;
/* The profile's canonical JSON, NUL-terminated, with the capacity protocol of
 * fatpte_device_host_json. */
FATPTE_API fatpte_status fatpte_device_json(const fatpte_device* device, char* buffer, size_t capacity,
                                            size_t* length) FATPTE_NOEXCEPT;
FATPTE_API void fatpte_device_free(fatpte_device* device) FATPTE_NOEXCEPT;

/* ---- selection (specs/nfat-manifest.md section 6) ---- */

typedef struct fatpte_selection fatpte_selection;

/* Choose the entry for a device: `device_json` is a device profile's JSON text, or NULL for this
 * machine, probed for only the facts some entry's requirements read (cpu features, memory, the
 * CUDA driver; all of them when an entry goes to an example backend library): the same choice
 * as a full probe, without its start-up cost. `prefer` and `exclude` are entry names or backend
 * ids (NULL when their count is 0). No eligible entry: FATPTE_E_NO_SPECIALIZATION_FITS, the error's message listing every
 * entry and why (cut to the message buffer). The selection must not outlive the container. */
FATPTE_API fatpte_status fatpte_select(const fatpte_container* container, const char* device_json,
                                       const char* const* prefer, size_t prefer_count, const char* const* exclude,
                                       size_t exclude_count, fatpte_selection** out,
                                       fatpte_error* error) FATPTE_NOEXCEPT;
/* fatpte_select for a parsed profile; NULL: this machine, probed for what the entries read. */
FATPTE_API fatpte_status fatpte_select_device(const fatpte_container* container, const fatpte_device* device,
                                              const char* const* prefer, size_t prefer_count,
                                              const char* const* exclude, size_t exclude_count,
                                              fatpte_selection** out, fatpte_error* error) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_selection_chosen(const fatpte_selection* selection, uint32_t* index) FATPTE_NOEXCEPT;
/* The explanation (the device, the chosen entry, one line per entry), built on the first call;
   valid until the selection is freed, also after the container is closed. */
FATPTE_API const char* fatpte_selection_explain(const fatpte_selection* selection) FATPTE_NOEXCEPT;
FATPTE_API void fatpte_selection_free(fatpte_selection* selection) FATPTE_NOEXCEPT;

/* ---- loading and running (fatpte/dispatch.hpp, loader/README.md) ---- */

typedef struct fatpte_loaded fatpte_loaded;
typedef struct fatpte_load_options fatpte_load_options;

/* Where backend libraries come from, and what to load: method "forward", the build's defaults
 * (the ExecuTorch SDK's library folder, its CPU kernels) and FATPTE_BACKEND_PATH in use. */
FATPTE_API fatpte_status fatpte_load_options_new(fatpte_load_options** out) FATPTE_NOEXCEPT;
FATPTE_API void fatpte_load_options_free(fatpte_load_options* options) FATPTE_NOEXCEPT;
/* The method of an ExecuTorch program to load (default "forward"). */
FATPTE_API fatpte_status fatpte_load_options_set_method(fatpte_load_options* options,
                                                        const char* method) FATPTE_NOEXCEPT;
/* A folder to search for backend libraries, after those added before. */
FATPTE_API fatpte_status fatpte_load_options_add_search_dir(fatpte_load_options* options,
                                                            const char* dir) FATPTE_NOEXCEPT;
/* The library of an ExecuTorch backend id ("XnnpackBackend"), or of operators ("kernels",
 * "kernels_*"): a file name to search for, or a path; NULL or "" withholds it. */
FATPTE_API fatpte_status fatpte_load_options_set_library(fatpte_load_options* options, const char* backend_id,
                                                         const char* library) FATPTE_NOEXCEPT;
/* The library of vendor runtime `name` ("openvino": OpenVINO's libopenvino_c), searched before its
 * variable, the Python environments and the system's search; NULL or "" withholds it
 * (specs/device-profile.md 9.1). FATPTE_E_INVALID_ARGUMENT for a name that is no vendor runtime. */
FATPTE_API fatpte_status fatpte_load_options_set_vendor_runtime(fatpte_load_options* options, const char* name,
                                                                const char* library) FATPTE_NOEXCEPT;
/* A backend map file ({"search_path": [...], "libraries": {...}}), merged into the options. */
FATPTE_API fatpte_status fatpte_load_options_read_map(fatpte_load_options* options, const char* path,
                                                      fatpte_error* error) FATPTE_NOEXCEPT;
/* Whether to use the build's defaults and FATPTE_BACKEND_PATH (both 1 by default). */
FATPTE_API fatpte_status fatpte_load_options_set_defaults(fatpte_load_options* options, int use_build_default,
                                                          int use_environment) FATPTE_NOEXCEPT;

/* Whether an entry that cannot be loaded makes the next eligible one be tried (1, the default), or
 * only the chosen entry is tried (0). Fallback goes by entry: each eligible entry once, in rank
 * order, whatever its name or backend id. */
FATPTE_API fatpte_status fatpte_load_options_set_fallback(fatpte_load_options* options, int fallback) FATPTE_NOEXCEPT;
/* Only entry `index` is tried: another method of an entry loaded before, or one entry on purpose
 * (fatpte_find_entry gives an index by name). FATPTE_E_ENTRY_NOT_FOUND when the container has no
 * such entry, FATPTE_E_NO_SPECIALIZATION_FITS when it is not eligible. */
FATPTE_API fatpte_status fatpte_load_options_set_entry(fatpte_load_options* options, uint32_t index) FATPTE_NOEXCEPT;
/* Whether the reasons name fatpte-run's flags (1) rather than the load options (0, the default). */
FATPTE_API fatpte_status fatpte_load_options_set_command_line(fatpte_load_options* options,
                                                              int command_line) FATPTE_NOEXCEPT;
/* Whether each loaded entry runs its golden calls (specs/nfat-manifest.md section 11) before it
 * is served (0, the default: no golden byte is read). A mismatch is a failed load: the next
 * eligible entry is tried, the finding (E1401) its reason in the report. */
FATPTE_API fatpte_status fatpte_load_options_set_self_test(fatpte_load_options* options, int self_test) FATPTE_NOEXCEPT;
/* The verdict store (specs/verdicts.md): `folder` holds the application's file `name`.verdicts.json
 * (name NULL: "fatpte"; folder NULL or "": none, the default; fatpte_default_verdicts_folder() is
 * where an application keeps it unless it has a reason not to). An entry the store remembers
 * crashing or disagreeing is skipped without being tried; one it remembers passing its golden
 * calls is served without them; any other is tried under the crash journal. FATPTE_E_INVALID_ARGUMENT
 * for a name outside [A-Za-z0-9_.-]{1,64}. */
FATPTE_API fatpte_status fatpte_load_options_set_verdicts(fatpte_load_options* options, const char* folder,
                                                          const char* name) FATPTE_NOEXCEPT;
/* Receipts (specs/receipts.md): `callback` gets one line of JSON (no newline; `size` bytes, also
 * NUL-terminated) at the end of each load made with these options, whatever its outcome, in the
 * loading thread; `container_name` is the container's name as receipts give it (NULL: ""), and
 * `details` 1 adds each reason's words (which can name library paths). callback NULL: none. */
typedef void (*fatpte_receipt_callback)(const char* line, size_t size, void* context);
FATPTE_API fatpte_status fatpte_load_options_set_receipt(fatpte_load_options* options,
                                                         fatpte_receipt_callback callback, void* context,
                                                         const char* container_name, int details) FATPTE_NOEXCEPT;
/* $XDG_CACHE_HOME/fatpte/verdicts, else $HOME/.cache/fatpte/verdicts; "" when neither is set. The
 * text lives until the next call from this thread. */
FATPTE_API const char* fatpte_default_verdicts_folder(void) FATPTE_NOEXCEPT;
/* (Signed loading: fatpte_load_options_require_signature, include/fatpte/signature.h.) */
/* Isolated qualification (issue 38; C++ LoadOptions::isolate): before an entry is loaded in this
 * process, a child process (fatpte-run, exec'd: this process never maps the entry's libraries
 * first) loads it and runs its golden calls, or with none the call fatpte_load_options_set_isolate_inputs
 * gives (none: only the load). A crash (any signal), a non-zero exit or a child running past
 * `timeout_ms` (0: the default, 30000; the child is killed then) demotes the entry with that
 * reason (the signal's name) and the next eligible entry is tried. */
FATPTE_API fatpte_status fatpte_load_options_set_isolate(fatpte_load_options* options, int isolate,
                                                         uint32_t timeout_ms) FATPTE_NOEXCEPT;
/* The child program (NULL or "": fatpte-run beside libfatpte, or in ../bin of its lib/). */
FATPTE_API fatpte_status fatpte_load_options_set_qualifier(fatpte_load_options* options,
                                                           const char* program) FATPTE_NOEXCEPT;
/* A word put before the child program (repeatable, in order): a launcher such as qemu-aarch64. */
FATPTE_API fatpte_status fatpte_load_options_add_isolate_launcher(fatpte_load_options* options,
                                                                  const char* word) FATPTE_NOEXCEPT;
/* A variable of this process's environment the child gets (it gets no other). */
FATPTE_API fatpte_status fatpte_load_options_pass_environment(fatpte_load_options* options,
                                                              const char* name) FATPTE_NOEXCEPT;
/* The one call the child runs for an entry without golden calls of the method (copied). */
struct fatpte_tensor; /* below */
FATPTE_API fatpte_status fatpte_load_options_set_isolate_inputs(fatpte_load_options* options,
                                                                const struct fatpte_tensor* inputs,
                                                                size_t input_count) FATPTE_NOEXCEPT;
/* Fallback after load (issue 38): with fallback on (the default), a call the loaded entry fails
 * (an execute error; not inputs that do not fit the method) marks it failed, loads the next
 * eligible entry (its state initialised from its own program) and retries the call once;
 * fatpte_loaded_fallback_count and fatpte_loaded_fallback report each such event. Opt-in: an
 * output holding NaN or an infinity fails the call (check_finite), and so does a call running past
 * `deadline_ms` (0: none); such a call runs on a worker thread, abandoned at the deadline with
 * its entry (never freed: one thread and one loaded entry leak per abandoned call). */
FATPTE_API fatpte_status fatpte_load_options_set_check_finite(fatpte_load_options* options,
                                                              int check_finite) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_load_options_set_call_deadline(fatpte_load_options* options,
                                                               uint32_t deadline_ms) FATPTE_NOEXCEPT;

/* What a load did, whether or not an entry loaded: for an explanation of a failure as well as of
 * a success. */
typedef struct fatpte_load_report fatpte_load_report;

/* The load policy in one call (fatpte/dispatch.hpp): when the options require a signature, verify
 * it before anything else (steps 1 to 8 of specs/nfat-signature.md section 6); choose the entry
 * for `device` (NULL: this machine, probed for what the entries read) with the caller's words;
 * then try the eligible entries by index in rank order: for each, whether the backends and
 * libraries it needs are there (before a byte of its payload is read), its payload and named data
 * hashed against the signed statement (signed loading), then the load; the next one when it
 * cannot be loaded (unless fallback is off). Errors as fatpte_load_with, and a signature that does
 * not verify (FATPTE_E_SIGNATURE_*, exit 5 in fatpte-run). `report`, when not NULL, receives what
 * happened in every case (free it with fatpte_load_report_free). Must not outlive the container. */
FATPTE_API fatpte_status fatpte_load_for(const fatpte_container* container, const fatpte_device* device,
                                         const char* const* prefer, size_t prefer_count, const char* const* exclude,
                                         size_t exclude_count, const fatpte_load_options* options,
                                         fatpte_loaded** out, fatpte_load_report** report,
                                         fatpte_error* error) FATPTE_NOEXCEPT;
/* The selection's explanation, as fatpte_selection_explain ("" when the load stopped before it
 * selected: an unverified signature). */
FATPTE_API const char* fatpte_load_report_selection(const fatpte_load_report* report) FATPTE_NOEXCEPT;
/* Every loading step, as fatpte_loaded_explain: the signature, operator libraries, then per entry
 * tried `dispatch: NAME [ID]: OUTCOME (LIBRARY)` and its details. */
FATPTE_API const char* fatpte_load_report_dispatch(const fatpte_load_report* report) FATPTE_NOEXCEPT;
/* The entries tried, in order: the entry's index and its outcome ("loaded", or why not). */
FATPTE_API fatpte_status fatpte_load_report_attempt_count(const fatpte_load_report* report,
                                                          size_t* count) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_load_report_attempt(const fatpte_load_report* report, size_t i, uint32_t* index,
                                                    const char** outcome) FATPTE_NOEXCEPT;
/* Each vendor runtime the load's probe of this machine looked for, as a JSON list: {"name",
 * "found": true, "path", "step"} or {"name", "found": false, "withheld", "looked"}
 * (specs/run-report.md, `vendor_runtimes`); "[]" when the load probed no accelerator (a device was
 * given, or no entry needs one). */
FATPTE_API const char* fatpte_load_report_vendor_runtimes(const fatpte_load_report* report) FATPTE_NOEXCEPT;
/* The id of the trusted key that verified the signature; "" when none was required. */
FATPTE_API const char* fatpte_load_report_key_id(const fatpte_load_report* report) FATPTE_NOEXCEPT;
FATPTE_API void fatpte_load_report_free(fatpte_load_report* report) FATPTE_NOEXCEPT;

/* Load the best eligible entry of `selection` that loads: an ExecuTorch program with ExecuTorch's
 * runtime and the backend libraries its delegates need, or another payload into its example
 * backend library (fatpte/backend.h). An entry that cannot be loaded is skipped with the reason
 * recorded and the next one is tried; none loads: FATPTE_E_NO_SPECIALIZATION_FITS, the message
 * listing every attempt. A damaged payload or named-data segment stops with its checksum error.
 * `options` may be NULL (the defaults). Must not outlive the container. A selection made for this
 * machine (fatpte_select with no profile) carries where its probe found each vendor runtime: the
 * load uses that search for each runtime `options` give no path of their own, and does not search
 * again (specs/device-profile.md 9.1). */
FATPTE_API fatpte_status fatpte_load_with(const fatpte_container* container, const fatpte_selection* selection,
                                          const fatpte_load_options* options, fatpte_loaded** out,
                                          fatpte_error* error) FATPTE_NOEXCEPT;
/* fatpte_load_with with the default options and `dirs` as search folders. */
FATPTE_API fatpte_status fatpte_load(const fatpte_container* container, const fatpte_selection* selection,
                                     const char* const* dirs, size_t dir_count, fatpte_loaded** out,
                                     fatpte_error* error) FATPTE_NOEXCEPT;
/* The entry that was loaded. */
FATPTE_API fatpte_status fatpte_loaded_entry(const fatpte_loaded* loaded, uint32_t* index) FATPTE_NOEXCEPT;
/* The method loaded ("forward"); valid until unloaded. */
FATPTE_API const char* fatpte_loaded_method(const fatpte_loaded* loaded) FATPTE_NOEXCEPT;
/* How entry `entry` fits the device, as the load's selection graded it (specs/nfat-manifest.md
 * 6.3): "exact", "compatible" or "fallback"; "" when the load made no selection or the entry was
 * not eligible. Valid until unloaded. */
FATPTE_API const char* fatpte_loaded_grade(const fatpte_loaded* loaded, uint32_t entry) FATPTE_NOEXCEPT;
/* Every step: operator libraries, then per entry tried `dispatch: NAME [ID]: OUTCOME (LIBRARY)`
 * and its details; valid until unloaded. */
FATPTE_API const char* fatpte_loaded_explain(const fatpte_loaded* loaded) FATPTE_NOEXCEPT;

/* A tensor: `dtype` is a PyTorch ScalarType code (FATPTE_DTYPE_*), `shape` has `rank` sizes,
 * `data` holds the elements contiguous in row-major order (`nbytes` bytes). */
typedef struct fatpte_tensor {
  int32_t dtype;
  uint32_t rank;
  const int64_t* shape;
  const void* data;
  uint64_t nbytes;
} fatpte_tensor;

#define FATPTE_DTYPE_UINT8 0
#define FATPTE_DTYPE_INT8 1
#define FATPTE_DTYPE_INT16 2
#define FATPTE_DTYPE_INT32 3
#define FATPTE_DTYPE_INT64 4
#define FATPTE_DTYPE_FLOAT16 5
#define FATPTE_DTYPE_FLOAT32 6
#define FATPTE_DTYPE_FLOAT64 7
#define FATPTE_DTYPE_BOOL 11
#define FATPTE_DTYPE_BFLOAT16 15
#define FATPTE_DTYPE_UINT16 27
#define FATPTE_DTYPE_UINT32 28
#define FATPTE_DTYPE_UINT64 29
/* A method output that is no tensor (None): rank 0, no data. */
#define FATPTE_DTYPE_NONE (-1)

/* "float32", ...; NULL for a code that is no dtype. */
FATPTE_API const char* fatpte_dtype_name(int32_t dtype) FATPTE_NOEXCEPT;

/* Run the loaded method once on `inputs` (in the method's order); its state (mutable buffers)
 * carries over to the next call. The outputs stay readable until the next execute or unload. */
FATPTE_API fatpte_status fatpte_execute(fatpte_loaded* loaded, const fatpte_tensor* inputs, size_t input_count,
                                        fatpte_error* error) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_output_count(const fatpte_loaded* loaded, size_t* count) FATPTE_NOEXCEPT;
/* Output `index` of the last execute; its pointers stay valid until the next execute or unload. */
FATPTE_API fatpte_status fatpte_output(const fatpte_loaded* loaded, size_t index, fatpte_tensor* out) FATPTE_NOEXCEPT;

/* One float32 tensor of `input_count` elements in; the first output, which must be float32, out:
 * at most `output_capacity` floats are written to `output`. */
FATPTE_API fatpte_status fatpte_run_f32(fatpte_loaded* loaded, const float* input, size_t input_count,
                                        float* output, size_t output_capacity, size_t* output_count,
                                        fatpte_error* error) FATPTE_NOEXCEPT;
FATPTE_API void fatpte_unload(fatpte_loaded* loaded) FATPTE_NOEXCEPT;

/* One fallback after load (C++ fatpte::FallbackEvent, fatpte/field.hpp): call `call` (counted
 * from 0 since the load) failed on entry `from_entry` for `reason` ("execute_error",
 * "non_finite_output", "deadline"); it was retried on `to_entry` when `has_to_entry`, else no
 * eligible entry remained. The strings stay valid until the next execute or unload. */
typedef struct fatpte_fallback_event {
  uint64_t call;
  uint32_t from_entry;
  int has_to_entry;
  uint32_t to_entry;
  const char* reason;
  const char* detail;
} fatpte_fallback_event;
FATPTE_API fatpte_status fatpte_loaded_fallback_count(const fatpte_loaded* loaded, size_t* count) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_loaded_fallback(const fatpte_loaded* loaded, size_t index,
                                                fatpte_fallback_event* out) FATPTE_NOEXCEPT;

/* ---- golden calls (specs/nfat-manifest.md section 11, fatpte/self_test.hpp) ---- */

typedef struct fatpte_self_test_report fatpte_self_test_report;

/* Run the golden calls of the loaded entry's method on `loaded` (its state changes) and compare
 * each output with its golden tensor: FATPTE_OK when all passed, FATPTE_E_GOLDEN_MISMATCH when one
 * did not or a call could not run (`report` says which, with every figure); another status for a
 * container whose golden calls are damaged (no report). `keep_outputs`: keep each call's outputs
 * for fatpte_self_test_report_output. When `loaded` came from a signed load
 * (fatpte_load_options_require_signature), each golden tensor's bytes hash as signed before a
 * call is made (else the error, no report), and golden calls the signature does not vouch for are
 * not made: FATPTE_OK, the summary says why (specs/nfat-signature.md section 6.1). */
FATPTE_API fatpte_status fatpte_self_test(const fatpte_container* container, fatpte_loaded* loaded, int keep_outputs,
                                          fatpte_self_test_report** report, fatpte_error* error) FATPTE_NOEXCEPT;
/* One line: how many calls passed and the largest difference, or the first failure. */
FATPTE_API const char* fatpte_self_test_report_summary(const fatpte_self_test_report* report) FATPTE_NOEXCEPT;
/* Every figure as JSON (fatpte/self_test.hpp, SelfTestReport::json). */
FATPTE_API const char* fatpte_self_test_report_json(const fatpte_self_test_report* report) FATPTE_NOEXCEPT;
/* The calls made, and output `output` of the `call`-th call made (kept with keep_outputs; its
 * pointers valid until the report is freed). */
FATPTE_API fatpte_status fatpte_self_test_report_call_count(const fatpte_self_test_report* report,
                                                            size_t* count) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_self_test_report_output(const fatpte_self_test_report* report, size_t call,
                                                        size_t output, fatpte_tensor* out) FATPTE_NOEXCEPT;
FATPTE_API void fatpte_self_test_report_free(fatpte_self_test_report* report) FATPTE_NOEXCEPT;

/* ---- reading through a callback (specs/remote.md): a container at a URL, read by ranges ---- */

/* The first read: the header and, in practice, the tables and the manifest (specs/remote.md 2;
 * tests/remote/test_remote_cpp.py checks it equals Python's fatpte.fileio.remote.PREFIX_SIZE). */
#define FATPTE_PREFIX_SIZE 65536

/* The caller's reader: copy the file's `size` bytes at `offset` into `buffer` (an HTTP range
 * request, a read from flash, ...) and return FATPTE_OK, or a status such as FATPTE_E_IO_ERROR or
 * FATPTE_E_REMOTE_TIMEOUT, which the reader reports with the range. Called with ranges inside the
 * file only, one at a time. */
typedef fatpte_status (*fatpte_read_at_fn)(void* user, uint64_t offset, void* buffer, size_t size);

typedef struct fatpte_reader fatpte_reader;

/* Open the container of `file_size` bytes (from the first response's Content-Range, or a HEAD)
 * that `read_at` reads: it reads the first FATPTE_PREFIX_SIZE bytes, then the rest of the
 * header, tables and manifest in at most one more call for a container fatpte wrote, and checks
 * them as fatpte_open_memory does. Nothing else is read until an entry is fetched. */
FATPTE_API fatpte_status fatpte_reader_open(fatpte_read_at_fn read_at, void* user, uint64_t file_size,
                                            fatpte_reader** out, fatpte_error* error) FATPTE_NOEXCEPT;
/* The container, for every query, fatpte_select and fatpte_load; valid until the reader is
 * closed. Its bytes that were never fetched are unreadable: a payload pointer is usable after
 * fatpte_reader_fetch_entry. A load (fatpte_load, fatpte_load_with, fatpte_load_for, and C++'s
 * load_module over it) reads no byte the reader did not fetch: an eligible entry whose payload,
 * listed named data or (self-testing) golden tensors were not all fetched is skipped once its
 * backends are found (an entry whose libraries are missing keeps that reason), its outcome in
 * the report starting "not fetched:"; fetch it and load again to have it tried (docs/remote.md). */
FATPTE_API const fatpte_container* fatpte_reader_container(const fatpte_reader* reader) FATPTE_NOEXCEPT;
/* Read entry `index`'s payload and the named data its manifest entry lists, each checked against
 * its CRC32C (FATPTE_E_PAYLOAD_CHECKSUM_MISMATCH, FATPTE_E_SEGMENT_CHECKSUM_MISMATCH). */
FATPTE_API fatpte_status fatpte_reader_fetch_entry(fatpte_reader* reader, uint32_t index,
                                                   fatpte_error* error) FATPTE_NOEXCEPT;
/* Read the signature region the header places (nothing when it places none), checked against
 * signature_checksum (FATPTE_E_SIGNATURE_CHECKSUM_MISMATCH): call it before
 * fatpte_verify_signature on the reader's container (include/fatpte/signature.h). */
FATPTE_API fatpte_status fatpte_reader_fetch_signature(fatpte_reader* reader, fatpte_error* error) FATPTE_NOEXCEPT;
/* Read the golden tensors entry `index`'s golden calls name, each checked against its CRC32C:
 * before a self-test of that entry (fatpte_load_options_set_self_test, fatpte_self_test). A load
 * without one reads none of them. */
FATPTE_API fatpte_status fatpte_reader_fetch_golden(fatpte_reader* reader, uint32_t index,
                                                    fatpte_error* error) FATPTE_NOEXCEPT;
/* The bytes read and the read_at calls made so far. */
FATPTE_API fatpte_status fatpte_reader_stats(const fatpte_reader* reader, uint64_t* bytes_read,
                                             uint64_t* calls) FATPTE_NOEXCEPT;
FATPTE_API void fatpte_reader_close(fatpte_reader* reader) FATPTE_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* FATPTE_FATPTE_H_ */
