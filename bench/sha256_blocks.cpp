// sha256_blocks PATH N: hashes N 64-byte blocks with one of libfatpte's SHA-256 paths (portable,
// armv8-sha2, avx2-bmi2, sha-ni) and prints the digest; exits 2 when this CPU lacks the path.
// bench/op_verdicts.py counts its instructions under qemu-aarch64 at two values of N: the
// difference over the blocks is the path's instructions per block, free of the start's cost.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/sha256.hpp"

using fatpte::detail::Sha256Path;

int main(int argc, char** argv) {
  static const struct {
    const char* name;
    Sha256Path path;
  } kPaths[] = {{"portable", Sha256Path::kPortable}, {"armv8-sha2", Sha256Path::kArmv8Sha2},
                {"avx2-bmi2", Sha256Path::kAvx2Bmi2}, {"sha-ni", Sha256Path::kShaNi}};
  if (argc != 3) {
    std::fprintf(stderr, "usage: sha256_blocks portable|armv8-sha2|avx2-bmi2|sha-ni N\n");
    return 2;
  }
  const auto* chosen = static_cast<const Sha256Path*>(nullptr);
  for (const auto& p : kPaths) {
    if (std::strcmp(argv[1], p.name) == 0) chosen = &p.path;
  }
  if (chosen == nullptr || !fatpte::detail::sha256_path_available(*chosen)) {
    std::fprintf(stderr, "sha256_blocks: no path '%s' on this CPU\n", argv[1]);
    return 2;
  }
  // One buffer of 64 blocks, hashed again and again: filling N blocks would cost more than hashing them.
  const std::size_t blocks = std::strtoull(argv[2], nullptr, 10);
  std::vector<std::uint8_t> data(64 * 64);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 31 + (i >> 8));
  fatpte::detail::Sha256 s(*chosen);
  for (std::size_t left = blocks; left != 0;) {
    const std::size_t take = left < 64 ? left : 64;
    s.update(data.data(), 64 * take);
    left -= take;
  }
  std::printf("%s\n", fatpte::detail::to_hex(s.finish()).c_str());
  return 0;
}
