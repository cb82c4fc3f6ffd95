// libFuzzer target for trusted-key files (issue 33, S4) under AddressSanitizer and
// UndefinedBehaviorSanitizer: the input is written to a file and read by fatpte::TrustedKeys::load,
// as `fatpte-run --trusted-key` and `fatpte-verify --trusted-key` read it (a regular file of at most
// 64 KiB holding one PUBLIC KEY block, specs/nfat-signature.md section 5.4); a key it accepts then
// checks the signature of specs/vectors/v2-signed.nfat (libcrypto's verify on whatever key the
// file held). Seeded with the vector key files and the structure-aware generator's
// (tests/strategies.hostile_key_files: PEM variants of real keys). Any sanitizer report, crash or
// leak is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/signature.hpp"

#ifndef FATPTE_ROOT
#error "FATPTE_ROOT must name the repository"
#endif

namespace {

struct Fixed {
  std::string path;
  std::vector<std::uint8_t> signed_file;

  Fixed() {
    char folder[] = "/tmp/fatpte-fuzz-keys.XXXXXX";
    if (mkdtemp(folder) == nullptr) std::abort();
    path = std::string(folder) + "/key.pem";
    std::ifstream in(std::string(FATPTE_ROOT) + "/specs/vectors/v2-signed.nfat", std::ios::binary);
    signed_file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (signed_file.empty()) std::abort();
  }
};

const Fixed& fixed() {
  static const Fixed& f = *new Fixed();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Fixed& f = fixed();
  {
    std::ofstream out(f.path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto keys = fatpte::TrustedKeys::load({f.path});
  if (!keys.ok()) return 0;
  auto c = fatpte::Container::open_memory(f.signed_file.data(), f.signed_file.size());
  if (c.ok()) (void)fatpte::check_signature(*c.value(), *keys.value(), fatpte::Bytes{nullptr, 0});
  return 0;
}
