// OpenSSL's libcrypto opened at run time (src/signature/libcrypto.hpp). Built twice: in fatpte_tests with
// the soname CMake found, and as libcrypto_absent_test with a soname no system has
// (FATPTE_TEST_LIBCRYPTO_ABSENT), where loading a trusted key must fail with E1303 naming it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "fatpte/signature.hpp"
#include "signature/libcrypto.hpp"

#ifndef FATPTE_SPEC_VECTORS
#error "FATPTE_SPEC_VECTORS must name specs/vectors"
#endif

namespace {

const std::string kKey = std::string(FATPTE_SPEC_VECTORS) + "/trusted-ed25519.pub.pem";

#ifndef FATPTE_TEST_LIBCRYPTO_ABSENT

TEST(LibCrypto, BindsEveryFunctionOfTheLibraryItWasBuiltFor) {
  std::string why;
  const fatpte::detail::LibCrypto* f = fatpte::detail::libcrypto(&why);
  ASSERT_NE(f, nullptr) << why;
  EXPECT_TRUE(why.empty());
  // SHA-256("abc") through the bound functions (FIPS 180-2, appendix B.1).
  unsigned char d[32];
  unsigned int n = 0;
  ASSERT_EQ(f->digest("abc", 3, d, &n, f->sha256(), nullptr), 1);
  ASSERT_EQ(n, 32u);
  static const unsigned char kAbc[4] = {0xba, 0x78, 0x16, 0xbf};
  EXPECT_EQ(std::memcmp(d, kAbc, 4), 0);
  EXPECT_EQ(fatpte::detail::libcrypto(nullptr), f);  // opened once
}

TEST(LibCrypto, TrustedKeysLoadThroughIt) {
  auto keys = fatpte::TrustedKeys::load({kKey});
  ASSERT_TRUE(keys.ok()) << keys.error().describe();
  ASSERT_EQ(keys.value()->keys().size(), 1u);
  EXPECT_EQ(keys.value()->keys()[0].key_id.size(), 64u);  // hex SHA-256 of the DER key
}

#else

TEST(LibCryptoAbsent, LoadingAKeyFailsNamingTheLibrary) {
  std::string why;
  EXPECT_EQ(fatpte::detail::libcrypto(&why), nullptr);
  EXPECT_NE(why.find(fatpte::detail::libcrypto_name()), std::string::npos) << why;
  auto keys = fatpte::TrustedKeys::load({kKey});
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.error().code(), fatpte::Error::SIGNATURE_UNSUPPORTED);
  EXPECT_NE(keys.error().message().find(fatpte::detail::libcrypto_name()), std::string::npos)
      << keys.error().describe();
  EXPECT_NE(keys.error().message().find("OpenSSL"), std::string::npos) << keys.error().describe();
}

#endif

}  // namespace
