/* signature.h: the C API for signed containers (specs/nfat-signature.md), beside fatpte.h.
 *
 * A loader verifies before it selects and hashes only what it loads:
 *
 *   fatpte_trust* trust;                        fatpte_trust_load(paths, n, &trust, &err);
 *   fatpte_signature_report* report;            fatpte_verify_signature(c, trust, NULL, 0, &report, &err);
 *     -> steps 1 to 8: the bundle, the signature, the statement, every entry's table fields and
 *        manifest record, every named-data key; no payload or segment byte is read. Per entry:
 *        fatpte_signature_entry_state.
 *   ... fatpte_select(...) ...
 *   fatpte_signature_verify_entry(c, report, chosen, &err);
 *     -> steps 9 and 10 for the chosen entry and the keys it lists, before its bytes reach a
 *        backend.
 *
 * Functions return a fatpte_status and never let an exception escape. A library built without
 * OpenSSL (-DFATPTE_SIGNATURES=OFF) returns FATPTE_E_SIGNATURE_UNSUPPORTED from each of them.
 */
#ifndef FATPTE_SIGNATURE_H_
#define FATPTE_SIGNATURE_H_

#include "fatpte/fatpte.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fatpte_trust fatpte_trust;
typedef struct fatpte_signature_report fatpte_signature_report;

/* What an entry is, as far as the signature says. */
typedef enum fatpte_entry_signature {
  FATPTE_ENTRY_UNSIGNED = 0, /* not in the signed statement (E1307) */
  FATPTE_ENTRY_SIGNED = 1,   /* its table fields and manifest record match; bytes not hashed yet */
  FATPTE_ENTRY_VERIFIED = 2, /* and its payload and named data hash as signed */
  FATPTE_ENTRY_TAMPERED = 3  /* a field, its record or its bytes differ from the statement */
} fatpte_entry_signature;

/* 1 when this library verifies signatures (built with OpenSSL), else 0. */
FATPTE_API int fatpte_signatures_supported(void) FATPTE_NOEXCEPT;

/* The trusted public keys: `count` PEM files (ECDSA P-256 or Ed25519 SubjectPublicKeyInfo). */
FATPTE_API fatpte_status fatpte_trust_load(const char* const* pem_paths, size_t count, fatpte_trust** out,
                                           fatpte_error* error) FATPTE_NOEXCEPT;
FATPTE_API void fatpte_trust_free(fatpte_trust* trust) FATPTE_NOEXCEPT;
/* How many keys `trust` holds (0 for NULL), and the id of key `index` in the order the files were
 * given: the SHA-256 of its DER public key in lowercase hex (specs/nfat-signature.md section 5.2;
 * a compressed point has the id of the same key uncompressed), what bundles name as their hint;
 * NULL past the last. Valid while `trust` lives. */
FATPTE_API size_t fatpte_trust_count(const fatpte_trust* trust) FATPTE_NOEXCEPT;
FATPTE_API const char* fatpte_trust_key_id(const fatpte_trust* trust, size_t index) FATPTE_NOEXCEPT;

/* Steps 1 to 8 of the verification. `detached`, when not NULL, is a detached signature of
 * `detached_size` bytes (0 bytes: an empty file, refused as E1302 like any bundle that is not one);
 * when NULL (`detached_size` 0), the embedded one is used. Returns the first error: steps 1 to 6 leave *out
 * NULL (no signature, an untrusted or invalid one, a malformed bundle, a signature of another
 * container); steps 7 and 8 (an entry or key added or changed) still fill *out, with every entry's
 * state. The report must be freed and must not outlive the container. */
FATPTE_API fatpte_status fatpte_verify_signature(const fatpte_container* container, const fatpte_trust* trust,
                                                 const void* detached, size_t detached_size,
                                                 fatpte_signature_report** out, fatpte_error* error) FATPTE_NOEXCEPT;
/* Steps 9 and 10 for entry `index`: the SHA-256 of its payload and of the named data it lists.
 * Its state becomes FATPTE_ENTRY_VERIFIED, or FATPTE_ENTRY_TAMPERED with the error. */
FATPTE_API fatpte_status fatpte_signature_verify_entry(const fatpte_container* container,
                                                       fatpte_signature_report* report, uint32_t index,
                                                       fatpte_error* error) FATPTE_NOEXCEPT;
/* Steps 9 and 10 for every signed entry and key, as `fatpte verify` runs them. */
FATPTE_API fatpte_status fatpte_signature_verify_all(const fatpte_container* container,
                                                     fatpte_signature_report* report,
                                                     fatpte_error* error) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_signature_entry_state(const fatpte_signature_report* report, uint32_t index,
                                                      fatpte_entry_signature* out) FATPTE_NOEXCEPT;
/* The id (SHA-256 of the DER public key, hex) of the trusted key that verified the signature. */
FATPTE_API const char* fatpte_signature_key_id(const fatpte_signature_report* report) FATPTE_NOEXCEPT;
/* Signed entries the container no longer holds (thinned), in statement order. */
FATPTE_API fatpte_status fatpte_signature_thinned_count(const fatpte_signature_report* report,
                                                        uint32_t* out) FATPTE_NOEXCEPT;
FATPTE_API fatpte_status fatpte_signature_thinned_name(const fatpte_signature_report* report, uint32_t index,
                                                       const char** out) FATPTE_NOEXCEPT;
/* Whether entry `index` (table order) is a signed entry whose golden calls the signature does not
 * vouch for (1; specs/nfat-signature.md section 6.1: a statement before revision 3 and no golden
 * digest in the signed provenance), or not (0). A signed self-test does not run such calls. */
FATPTE_API fatpte_status fatpte_signature_golden_unsigned(const fatpte_signature_report* report, uint32_t index,
                                                          int* out) FATPTE_NOEXCEPT;
FATPTE_API void fatpte_signature_report_free(fatpte_signature_report* report) FATPTE_NOEXCEPT;

/* Signed loading (fatpte_load_for, fatpte_load_with): the container's signature must verify with
 * one of these keys before any entry is tried, and each entry's payload and the named data it
 * lists must hash as signed before a byte of them is read for loading. The options keep what
 * they need: `trust` may be freed afterwards. NULL: no signature required. */
FATPTE_API fatpte_status fatpte_load_options_require_signature(fatpte_load_options* options,
                                                               const fatpte_trust* trust) FATPTE_NOEXCEPT;
/* With a signature required: refuse a container from which the entry the load's device would get
 * among the signed entries was thinned away (1; step 11 of specs/nfat-signature.md section 6, the
 * downgrade check), or not (0, the default). */
FATPTE_API fatpte_status fatpte_load_options_refuse_downgrade(fatpte_load_options* options,
                                                              int refuse) FATPTE_NOEXCEPT;
/* Step 11 on its own, after fatpte_verify_signature: E1308 when the entry `device` would get among
 * the signed entries (NULL: this machine) is one the container no longer holds. */
FATPTE_API fatpte_status fatpte_signature_check_downgrade(const fatpte_container* container,
                                                          const fatpte_signature_report* report,
                                                          const fatpte_device* device,
                                                          fatpte_error* error) FATPTE_NOEXCEPT;
/* A detached signature bundle (`size` bytes, copied) to verify instead of the container's own. */
FATPTE_API fatpte_status fatpte_load_options_set_signature(fatpte_load_options* options, const void* bundle,
                                                           size_t size) FATPTE_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* FATPTE_SIGNATURE_H_ */
