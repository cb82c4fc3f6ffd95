// cpu_words.hpp: the x86 cpuid and xgetbv words of the running CPU, which the host probe decodes
// into features (device.hpp, probe::x86_features) and CRC32C reads to choose its instructions;
// on aarch64 Linux the kernel's AT_HWCAP words, which the probe decodes (probe::arm_hwcap_features)
// and SHA-256 reads to choose its instructions.
#ifndef FATPTE_CPU_WORDS_HPP_
#define FATPTE_CPU_WORDS_HPP_

#include <cstdint>

namespace fatpte {
namespace probe {

// The x86 cpuid and xgetbv words the feature decision needs.
struct X86Words {
  std::uint32_t max_leaf = 0;     // cpuid(0).eax
  std::uint32_t leaf1_ecx = 0;    // cpuid(1).ecx
  std::uint32_t leaf7_eax = 0;    // cpuid(7, 0).eax: the highest subleaf of leaf 7
  std::uint32_t leaf7_ebx = 0;    // cpuid(7, 0).ebx
  std::uint32_t leaf7_ecx = 0;    // cpuid(7, 0).ecx
  std::uint32_t leaf7_edx = 0;    // cpuid(7, 0).edx
  std::uint32_t leaf7_1_eax = 0;  // cpuid(7, 1).eax
  std::uint64_t xcr0 = 0;         // xgetbv(0), meaningful only when OSXSAVE is set
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// This CPU's words, read with the cpuid instruction (each one traps to the hypervisor in a
// virtual machine).
X86Words x86_words_cpuid() noexcept;
// The same words with no cpuid instruction where glibc 2.33 or later keeps those it read at
// process start (max_leaf is then 7, and a leaf the CPU lacks reads as zeros); elsewhere
// x86_words_cpuid(). The host probe and CRC32C's instruction check use this one.
X86Words x86_words() noexcept;
#endif

#if defined(__aarch64__) && defined(__linux__)
// getauxval(AT_HWCAP) and getauxval(AT_HWCAP2) (arch/arm64/include/uapi/asm/hwcap.h's bits).
struct ArmWords {
  std::uint64_t hwcap = 0;
  std::uint64_t hwcap2 = 0;
};
ArmWords arm_words() noexcept;
#endif

}  // namespace probe
}  // namespace fatpte

#endif  // FATPTE_CPU_WORDS_HPP_
