// hide_sha2.so, preloaded into an aarch64 program under qemu-aarch64 (-E LD_PRELOAD=...): the
// program's getauxval(AT_HWCAP) answers without HWCAP_SHA2, as a Cortex-A72 without the crypto
// extension (the Raspberry Pi 4's) does. No qemu 7.2 CPU model lacks SHA2; libfatpte chooses its
// SHA-256 path from this word (common/cpu_words.cpp), so a start then takes the portable path and
// bench/op_verdicts.py counts a receipt's cost on such a CPU instead of estimating it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/auxv.h>

#define HWCAP_SHA2_BIT (1UL << 6)  // arch/arm64/include/uapi/asm/hwcap.h

unsigned long getauxval(unsigned long type) {
  static unsigned long (*real)(unsigned long);
  if (real == 0) real = (unsigned long (*)(unsigned long))dlsym(RTLD_NEXT, "getauxval");
  const unsigned long value = real(type);
  return type == AT_HWCAP ? value & ~HWCAP_SHA2_BIT : value;
}
