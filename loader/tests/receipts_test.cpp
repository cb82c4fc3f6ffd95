// Receipts' writer (src/run/receipt.hpp, specs/receipts.md): a fallback receipt for a fixed event
// is the line specs/vectors/receipts/fallback.jsonl holds, byte for byte (Python holds that line to
// specs/receipt.schema.json in tests/conformance/test_receipt_vectors.py); without details it
// holds no detail text.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "builder.hpp"
#include "run/receipt.hpp"

#ifndef FATPTE_SPEC_VECTORS
#error "FATPTE_SPEC_VECTORS must name specs/vectors"
#endif

namespace fatpte {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Receipts, AFallbackReceiptIsTheVectorsLine) {
  const std::string path = std::string(FATPTE_SPEC_VECTORS) + "/receipts/fallback.jsonl";
  const std::string want = slurp(path);
  ASSERT_FALSE(want.empty()) << path;
  // The digest in the vector is this container's: its header and tables.
  const auto bytes = testing::build_v2({{"xnnpack", "xnnpack", {1, 2, 3, 4}}, {"portable", "portable", {5, 6}}});
  auto c = Container::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(c.ok()) << c.error().describe();
  LoadOptions options;
  options.receipt_name = "model.nfat";
  FallbackEvent e;
  e.call = 3;
  e.from_entry = 0;
  e.to_entry = 1;
  e.reason = "execute_error";
  e.detail = "E0702: CALL_DELEGATE execute failed";
  EXPECT_EQ(detail::fallback_receipt(*c.value(), options, e, 1795000000) + "\n", want);
  options.receipt_details = true;
  EXPECT_NE(detail::fallback_receipt(*c.value(), options, e, 1795000000).find("CALL_DELEGATE"), std::string::npos);
}

}  // namespace
}  // namespace fatpte
