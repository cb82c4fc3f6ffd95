// The canonical-bytes writer (value/canonical.hpp, specs/nfat-signature.md section 4's
// primitives), its exact bytes pinned as fatpte/manifest/canonical.py writes them.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "value/canonical.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;
using fatpte::detail::CanonicalWriter;

TEST(CanonicalWriter, IntegersAreLittleEndian) {
  CanonicalWriter w;
  w.u8(0xAB);
  w.u32(0x01020304);
  w.i32(-2);
  w.u64(0x0102030405060708);
  EXPECT_EQ(w.bytes(), (Bytes{0xAB, 0x04, 0x03, 0x02, 0x01, 0xFE, 0xFF, 0xFF, 0xFF, 0x08, 0x07, 0x06, 0x05, 0x04,
                              0x03, 0x02, 0x01}));
}

TEST(CanonicalWriter, AF64IsTheU64OfItsBits) {
  CanonicalWriter w;
  w.f64(1.0);  // 0x3FF0000000000000
  EXPECT_EQ(w.bytes(), (Bytes{0, 0, 0, 0, 0, 0, 0xF0, 0x3F}));
}

TEST(CanonicalWriter, StrAndBytesAreAU32LengthThenTheBytes) {
  CanonicalWriter w;
  w.str("ab");
  w.str("");
  const std::uint8_t raw[] = {0x00, 0xFF};
  w.bytes(raw, sizeof raw);
  EXPECT_EQ(w.bytes(), (Bytes{2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0, 2, 0, 0, 0, 0x00, 0xFF}));
}

TEST(CanonicalWriter, OptIsAFlagBeforeTheValue) {
  CanonicalWriter w;
  EXPECT_FALSE(w.opt(false));
  if (w.opt(true)) w.u8(7);
  EXPECT_EQ(w.bytes(), (Bytes{0, 1, 7}));
}

TEST(CanonicalWriter, ListIsACountBeforeTheItemsAndAbsentIsEmpty) {
  CanonicalWriter w;
  const std::vector<std::int32_t> sizes = {1, -1};
  w.list(&sizes, [](CanonicalWriter& out, std::int32_t s) { out.i32(s); });
  w.list(static_cast<const std::vector<std::int32_t>*>(nullptr), [](CanonicalWriter& out, std::int32_t s) {
    out.i32(s);
  });
  EXPECT_EQ(w.bytes(), (Bytes{2, 0, 0, 0, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}));
  EXPECT_EQ(w.take().size(), 16u);
}

}  // namespace
