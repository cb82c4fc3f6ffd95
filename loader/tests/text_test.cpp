// detail::json_quote must print what Python's json.dumps prints (ensure_ascii), so the JSON of
// fatpte-run and fatpte is byte-identical.
#include <gtest/gtest.h>

#include <string>

#include "../src/text.hpp"

namespace {

TEST(JsonQuote, MatchesPythonJsonDumps) {
  // json.dumps("a\"\\\n\r\t\b\f\x01\x1f\x7f~") == '"a\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f~"'
  EXPECT_EQ(fatpte::detail::json_quote("a\"\\\n\r\t\b\f\x01\x1f\x7f~"),
            "\"a\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f~\"");
  EXPECT_EQ(fatpte::detail::json_quote(""), "\"\"");
  EXPECT_EQ(fatpte::detail::json_quote("x86_64"), "\"x86_64\"");
}

}  // namespace
