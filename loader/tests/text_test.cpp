// detail::json_quote must print what Python's json.dumps prints (ensure_ascii), so the JSON of
// fatpte-run and fatpte is byte-identical; printable and terminal_safe what fatpte.errors' do.
#include <gtest/gtest.h>

#include <string>

#include "common/text.hpp"

namespace {

TEST(JsonQuote, MatchesPythonJsonDumps) {
  // json.dumps("a\"\\\n\r\t\b\f\x01\x1f\x7f~") == '"a\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f~"'
  EXPECT_EQ(fatpte::detail::json_quote("a\"\\\n\r\t\b\f\x01\x1f\x7f~"),
            "\"a\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f~\"");
  EXPECT_EQ(fatpte::detail::json_quote(""), "\"\"");
  EXPECT_EQ(fatpte::detail::json_quote("x86_64"), "\"x86_64\"");
}

// Expected values from fatpte.errors.printable and terminal_safe on the same text (UTF-8 here);
// a byte that is not UTF-8 is escaped on its own, which Python's str never holds.
TEST(Printable, MatchesPythonEscapes) {
  EXPECT_EQ(fatpte::detail::printable(""), "");
  EXPECT_EQ(fatpte::detail::printable("plain text"), "plain text");
  EXPECT_EQ(fatpte::detail::printable("a\nb\\c\x7f"), "a\\x0ab\\x5cc\\x7f");
  EXPECT_EQ(fatpte::detail::printable("tab\there"), "tab\\x09here");
  // U+00E9 kept; U+200E, U+202E and the C1 control U+009B escaped; U+65E5 kept.
  EXPECT_EQ(fatpte::detail::printable("\xc3\xa9\xe2\x80\x8e\xe2\x80\xae\xe6\x97\xa5\xc2\x9b!"),
            "\xc3\xa9\\u200e\\u202e\xe6\x97\xa5\\x9b!");
  EXPECT_EQ(fatpte::detail::printable("\xff\xc3("), "\\xff\\xc3(");
  EXPECT_EQ(fatpte::detail::printable(std::string("a\0b", 3)), "a\\x00b");
}

TEST(TerminalSafe, KeepsNewlinesAndBackslashes) {
  EXPECT_EQ(fatpte::detail::terminal_safe("a\nb\\c\x7f"), "a\nb\\c\\x7f");
  EXPECT_EQ(fatpte::detail::terminal_safe("line\x1b[2J\n"), "line\\x1b[2J\n");
}

}  // namespace
