/* Linked into the tools and tests of the sanitizer build (FATPTE_SANITIZE) only: the options
 * AddressSanitizer starts with.
 *
 * intercept_tls_get_addr=0: with glibc 2.36, the dynamic TLS blocks of libraries opened at run
 * time (libcrypto, opened to verify a signature, beside ExecuTorch's) are recorded wrongly by
 * GCC 12's sanitizer runtime, and LeakSanitizer's tracer crashes reading one at exit ("Tracer
 * caught signal 11 ... DTLS 7 at 0x29c-0x10000139e"), so a leak check never runs. Without the
 * interception it runs; a block referenced only from dynamic TLS is then not scanned, and none
 * is reported (measured: a signed self-test run of fatpte-run under both settings). */
const char* __asan_default_options(void);
const char* __asan_default_options(void) { return "intercept_tls_get_addr=0"; }
