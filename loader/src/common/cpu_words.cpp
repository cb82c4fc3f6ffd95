// The x86 cpuid and xgetbv words (fatpte/cpu_words.hpp), read once from glibc's record where it
// keeps one: the host probe (device/probe.cpp) and CRC32C's instruction check (crc32c.cpp) both
// ask. On aarch64 Linux the AT_HWCAP words, which the probe and SHA-256 (sha256.cpp) ask.
#include "fatpte/cpu_words.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
// glibc 2.33 and later keep the cpuid words ld.so read at process start and hand them out.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)) && \
    __has_include(<sys/platform/x86.h>)
#if defined(__clang__) && defined(__cplusplus)
// Its inline helpers return C's _Bool, a type GCC's C++ takes and clang's does not (the fuzz
// targets are built with clang).
#define _Bool bool
#include <sys/platform/x86.h>
#undef _Bool
#else
#include <sys/platform/x86.h>
#endif
#define FATPTE_GLIBC_CPUID 1
#endif
#endif

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace fatpte {
namespace probe {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
namespace {
std::uint64_t xcr0(std::uint32_t leaf1_ecx) {
  if (((leaf1_ecx >> 27) & 1u) == 0) return 0;
  // xgetbv is only legal when OSXSAVE is set; encoded as bytes for assemblers without it.
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
  return (std::uint64_t{hi} << 32) | lo;
}
}  // namespace

X86Words x86_words_cpuid() noexcept {
  X86Words w;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return w;
  w.max_leaf = a;
  if (w.max_leaf >= 1) {
    __cpuid(1, a, b, c, d);
    w.leaf1_ecx = c;
  }
  if (w.max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    w.leaf7_eax = a;
    w.leaf7_ebx = b;
    w.leaf7_ecx = c;
    w.leaf7_edx = d;
    if (w.leaf7_eax >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      w.leaf7_1_eax = a;
    }
  }
  w.xcr0 = xcr0(w.leaf1_ecx);
  return w;
}

X86Words x86_words() noexcept {
#ifdef FATPTE_GLIBC_CPUID
  // No cpuid instruction: in a virtual machine each one traps to the hypervisor (8 us apiece on
  // the benchmark machine, where five of them were 1% of a fatpte-run run). glibc's words are
  // the raw registers (its tunables change only the "active" bits) and zeros for a leaf the CPU
  // lacks, so max_leaf 7 lets x86_features() read whatever is there.
  const auto regs = [](unsigned index) { return __x86_get_cpuid_feature_leaf(index)->cpuid_array; };
  X86Words w;
  w.max_leaf = 7;
  w.leaf1_ecx = regs(CPUID_INDEX_1)[cpuid_register_index_ecx];
  const unsigned* l7 = regs(CPUID_INDEX_7);
  w.leaf7_eax = l7[cpuid_register_index_eax];
  w.leaf7_ebx = l7[cpuid_register_index_ebx];
  w.leaf7_ecx = l7[cpuid_register_index_ecx];
  w.leaf7_edx = l7[cpuid_register_index_edx];
  w.leaf7_1_eax = regs(CPUID_INDEX_7_ECX_1)[cpuid_register_index_eax];
  w.xcr0 = xcr0(w.leaf1_ecx);
  return w;
#else
  return x86_words_cpuid();
#endif
}
#endif

#if defined(__aarch64__) && defined(__linux__)
ArmWords arm_words() noexcept {
  ArmWords w;
  w.hwcap = getauxval(AT_HWCAP);
  w.hwcap2 = getauxval(AT_HWCAP2);
  return w;
}
#endif

}  // namespace probe
}  // namespace fatpte
