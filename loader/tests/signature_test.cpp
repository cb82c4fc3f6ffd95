// Verifying a signed container costs work bounded by what it reads (issue 33): a bundle is refused
// at its value limit before it holds more (S5).
//
// The signature is the one of specs/vectors/v2-signed.nfat (entries cpu and gpu, signed with the
// vector's Ed25519 key), given as a detached bundle to containers built here: its envelope verifies
// whatever container it is checked against, so steps 5 to 8 run on what each test builds.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "builder.hpp"
#include "fatpte/container.hpp"
#include "fatpte/signature.hpp"

#ifndef FATPTE_SPEC_VECTORS
#error "FATPTE_SPEC_VECTORS must name specs/vectors"
#endif

namespace fatpte {
namespace {

const std::string kVectors = FATPTE_SPEC_VECTORS;

std::vector<std::uint8_t> read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::shared_ptr<const TrustedKeys> vector_keys() {
  auto keys = TrustedKeys::load({kVectors + "/trusted-ed25519.pub.pem", kVectors + "/trusted-p256.pub.pem"});
  EXPECT_TRUE(keys.ok()) << keys.error().describe();
  return keys.ok() ? keys.value() : nullptr;
}

// The bundle of v2-signed.nfat, as JSON text.
std::string vector_bundle() {
  const std::vector<std::uint8_t> file = read(kVectors + "/v2-signed.nfat");
  auto c = Container::open_memory(file.data(), file.size());
  EXPECT_TRUE(c.ok());
  const Header& h = c.value()->header();
  return std::string(reinterpret_cast<const char*>(file.data()) + h.signature_offset, h.signature_size);
}

Bytes bytes(const std::string& s) { return Bytes{reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }

TEST(SignatureBundle, IsRefusedAtItsValueLimit) {
  // S5: the bundle is parsed before its signature is checked, so an ignored member anyone can add
  // (30 M zeros made the old reader hold 3.2 GB) must cost nothing: a bundle holds at most 4096
  // values (specs/nfat-signature.md sections 2 and 7), refused as they are counted.
  const auto keys = vector_keys();
  ASSERT_NE(keys, nullptr);
  const std::vector<std::uint8_t> file = read(kVectors + "/v2-signed.nfat");
  auto c = Container::open_memory(file.data(), file.size());
  ASSERT_TRUE(c.ok());
  const std::string bundle = vector_bundle();
  ASSERT_EQ(bundle[0], '{');
  for (const std::size_t zeros : {1000u, 4000u, 5000u, 3000000u}) {
    std::string padded = "{\"x-ignored\": [0";
    padded.reserve(bundle.size() + 2 * zeros + 32);
    for (std::size_t i = 1; i < zeros; ++i) padded += ",0";
    padded += "], " + bundle.substr(1);
    auto r = check_signature(*c.value(), *keys, bytes(padded));
    if (zeros <= 4000) {  // the vector's bundle holds a few dozen values
      ASSERT_TRUE(r.ok()) << r.error().describe();
      EXPECT_TRUE(r.value().first_error.ok()) << r.value().first_error.describe();  // ignored: still verifies
    } else {
      ASSERT_FALSE(r.ok()) << zeros;
      EXPECT_EQ(r.error().code(), Error::SIGNATURE_MALFORMED);
      EXPECT_EQ(r.error().field(), "signature");
      EXPECT_EQ(r.error().offset(), kNoOffset);  // a detached bundle
      EXPECT_NE(r.error().message().find("more than 4096 values"), std::string::npos) << r.error().message();
    }
  }
}

}  // namespace
}  // namespace fatpte
