// The loader's one JSON parser (src/common/json.hpp): each option does what its readers need
// (profiles, signature bundles, calls.json), numbers keep their text, duplicate keys are refused
// wherever they are, memory is linear in the text (counted in bytes held) and a bundle's values
// are counted as they are read.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.hpp"

namespace fatpte {
namespace {

using json::Kind;
using json::Value;

json::Document parsed(const std::string& text, const json::Options& o = json::Options()) {
  auto d = json::parse(text, o);
  EXPECT_TRUE(d.ok()) << text << ": " << d.error().describe();
  return d.ok() ? std::move(d).value() : json::Document();
}

// The error's "offset: message", or "OK".
std::string error(const std::string& text, const json::Options& o = json::Options()) {
  auto d = json::parse(text, o);
  if (d.ok()) return "OK";
  EXPECT_EQ(d.error().code(), Error::INVALID_ARGUMENT);
  EXPECT_EQ(d.error().field(), "");
  return std::to_string(d.error().offset()) + ": " + d.error().message();
}

TEST(Json, ValuesKeepTheirKindTextAndOffset) {
  const json::Document d = parsed(R"( {"a": [1, -2.5e3, "x\u00e9\n", true, null], "b": {}} )");
  const Value root = d.root();
  ASSERT_TRUE(root.is(Kind::kObject));
  EXPECT_EQ(root.offset(), 1u);
  EXPECT_EQ(root.size(), 2u);
  const Value a = root.find("a");
  ASSERT_TRUE(a.is(Kind::kArray));
  EXPECT_EQ(a.offset(), 7u);
  std::vector<std::string> texts;
  std::vector<Kind> kinds;
  for (const Value v : a.items()) {
    texts.emplace_back(v.text());
    kinds.push_back(v.kind());
  }
  EXPECT_EQ(texts, (std::vector<std::string>{"1", "-2.5e3", "x\xc3\xa9\n", "", ""}));
  EXPECT_EQ(kinds, (std::vector<Kind>{Kind::kNumber, Kind::kNumber, Kind::kString, Kind::kBool, Kind::kNull}));
  EXPECT_TRUE(root.find("b").is(Kind::kObject));
  EXPECT_EQ(root.find("b").size(), 0u);
  EXPECT_FALSE(root.find("c"));
  EXPECT_FALSE(a.find("a"));  // not an object: no member
  std::vector<std::string> keys;
  for (const Value::Member m : root.members()) keys.emplace_back(m.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b"}));
}

TEST(Json, IntegersStayExactAt64Bits) {
  const json::Document d = parsed("[18446744073709551615, -9223372036854775808, 18446744073709551616, -0]");
  std::vector<Value> v(d.root().items().begin(), d.root().items().end());
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(json::to_uint64(v[0], "x").value(), 18446744073709551615u);
  EXPECT_EQ(json::to_int64(v[1], "x").value(), INT64_MIN);
  EXPECT_FALSE(json::to_int64(v[0], "x").ok());
  EXPECT_FALSE(json::to_uint64(v[2], "x").ok());  // beyond 64 bits: refused, never rounded
  bool negative = false;
  std::uint64_t m = 1;
  EXPECT_TRUE(json::integer(v[3], negative, m));
  EXPECT_TRUE(negative);
  EXPECT_EQ(m, 0u);
}

TEST(Json, DuplicateKeysAreRefusedAtTheSecondWhereverTheyAre) {
  EXPECT_EQ(error(R"({"a": 1, "b": 2, "a": 3})"), "17: the key \"a\" appears twice");
  // The same key written two ways is the same key.
  EXPECT_EQ(error(R"({"a": 1, "\u0061": 2})"), "9: the key \"a\" appears twice");
  // The first key seen twice in document order, as Python's object_pairs_hook finds it.
  EXPECT_EQ(error(R"({"b": 1, "a": 1, "a": 2, "b": 2})"), "17: the key \"a\" appears twice");
  EXPECT_EQ(error(R"([{"x": {"y": 1, "y": 2}}])"), "16: the key \"y\" appears twice");
  EXPECT_EQ(error(R"({"a": 1, "b": 2})"), "OK");
}

TEST(Json, SyntaxErrorsNameTheirByte) {
  EXPECT_EQ(error("[1, 2"), "5: expected ',' or ']'");
  EXPECT_EQ(error("[01]"), "2: a number with a leading zero");
  EXPECT_EQ(error("[1.]"), "3: a number without digits after '.'");
  EXPECT_EQ(error("[-]"), "2: a number without digits");
  EXPECT_EQ(error("\"a\nb\""), "2: a control character inside a string");
  EXPECT_EQ(error("\"\\x\""), "3: an unknown escape in a string");
  EXPECT_EQ(error("{\"a\" 1}"), "5: expected ':'");
  EXPECT_EQ(error("{1: 1}"), "1: expected a string key");
  EXPECT_EQ(error("[] []"), "3: unexpected text after the JSON value");
  EXPECT_EQ(error(""), "0: unexpected end");
  EXPECT_EQ(error("tru"), "0: unexpected character");
}

TEST(Json, OptionsSayWhatANumberMayBe) {
  EXPECT_EQ(error("[NaN]"), "1: unexpected character");
  json::Options nan;
  nan.nan_infinity = true;
  const json::Document d = parsed("[NaN, Infinity, -Infinity]", nan);
  std::vector<std::string> texts;
  for (const Value v : d.root().items()) texts.emplace_back(v.text());
  EXPECT_EQ(texts, (std::vector<std::string>{"NaN", "Infinity", "-Infinity"}));

  json::Options ints;
  ints.fractions = false;
  ints.int64 = true;
  EXPECT_EQ(error("[1.5]", ints), "2: a fraction or an exponent: numbers here are integers");
  EXPECT_EQ(error("[1e3]", ints), "2: a fraction or an exponent: numbers here are integers");
  EXPECT_EQ(error("[9223372036854775807, -9223372036854775808]", ints), "OK");
  EXPECT_EQ(error("[9223372036854775808]", ints), "1: an integer outside -2^63 .. 2^63-1");
  EXPECT_EQ(error("[-9223372036854775809]", ints), "1: an integer outside -2^63 .. 2^63-1");
  EXPECT_EQ(error("[" + std::string(400, '9') + "]", ints), "1: an integer outside -2^63 .. 2^63-1");

  json::Options digits;
  digits.max_integer_digits = 4300;
  EXPECT_EQ(error("[" + std::string(4300, '9') + "]", digits), "OK");
  EXPECT_EQ(error("[" + std::string(4301, '9') + "]", digits), "1: an integer of more than 4300 digits");
  EXPECT_EQ(error("[" + std::string(4301, '9') + ".5]", digits), "OK");  // a float: read, no field takes it
}

TEST(Json, DepthCountsScalarsOrOnlyContainers) {
  json::Options values;
  values.max_depth = 3;
  EXPECT_EQ(error("[[1]]", values), "OK");
  EXPECT_EQ(error("[[[1]]]", values), "3: nested too deeply");  // the 1 is the fourth level
  json::Options containers = values;
  containers.depth_counts_scalars = false;
  EXPECT_EQ(error("[[[1]]]", containers), "OK");
  EXPECT_EQ(error("[[[[1]]]]", containers), "3: nested too deeply");
  // The default bound holds whatever the input: 100,000 brackets are refused, not recursed into.
  EXPECT_EQ(error(std::string(100000, '[')), "64: nested too deeply");
}

TEST(Json, LoneSurrogatesAreRefusedOrKeptAsPythonKeepsThem) {
  // At the backslash of the lone escape, as Python's calls.json reader names it (issue 42).
  EXPECT_EQ(error(R"(["\ud800"])"), "2: a lone surrogate in a \\u escape");
  EXPECT_EQ(error(R"(["\udc00"])"), "2: a lone surrogate in a \\u escape");
  EXPECT_EQ(error(R"(["\ud800\u0041"])"), "2: a lone surrogate in a \\u escape");
  EXPECT_EQ(error(R"(["ab", "c\udc00"])"), "9: a lone surrogate in a \\u escape");
  json::Options kept;
  kept.lone_surrogates = true;
  const json::Document d = parsed(R"(["\ud800", "\ud800\u0041", "\ud83d\ude00", "\udc00"])", kept);
  std::vector<std::string> texts;
  for (const Value v : d.root().items()) texts.emplace_back(v.text());
  EXPECT_EQ(texts, (std::vector<std::string>{"\xed\xa0\x80", "\xed\xa0\x80" "A", "\xf0\x9f\x98\x80", "\xed\xb0\x80"}));
  EXPECT_EQ(error(R"(["\ud800\u00zz"])", kept), "12: a \\u escape needs four hex digits");
}

TEST(Json, Utf8AndSizeAreCheckedBeforeParsing) {
  json::Options o;
  o.utf8 = true;
  o.max_bytes = 16;
  EXPECT_EQ(error("[\"\xc3\xa9\"]", o), "OK");
  EXPECT_EQ(error("[\"a\xc3\"]", o), "3: not valid UTF-8");
  EXPECT_EQ(error("[\"\xed\xa0\x80\"]", o), "2: not valid UTF-8");  // an encoded surrogate
  auto big = json::parse("[" + std::string(15, ' ') + "]", o);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().offset(), kNoOffset);
  EXPECT_EQ(big.error().message(), "the document is 17 bytes, above the limit of 16");
}

TEST(Json, MemoryIsLinearInTheText) {
  // 16 bytes a value and one copy of its text: a million zeros, 2 MB of text, hold about 16 MB
  // (the tree of values before this parser held ~100 bytes a value).
  for (const std::size_t n : {1000u, 100000u, 1000000u}) {
    std::string text = "[0";
    for (std::size_t i = 1; i < n; ++i) text += ",0";
    text += "]";
    const json::Document d = parsed(text);
    EXPECT_GE(d.memory(), n * sizeof(json::Document::Node));
    EXPECT_LE(d.memory(), 2 * (n + 1) * (sizeof(json::Document::Node) + 1)) << n;  // capacity at most doubles
  }
}

TEST(Json, ValuesAreCountedAsTheyAreReadAndRefusedPastTheLimit) {
  // A signature bundle holds at most 4096 values (keys are not values): the parser stops at the
  // 4097th, wherever the document goes on, so what an attacker appends costs nothing more.
  json::Options o;
  o.max_values = 4;
  EXPECT_EQ(error(R"({"a": 1, "b": [2]})", o), "OK");       // object, 1, array, 2
  EXPECT_EQ(error(R"({"a": 1, "b": [2, 3]})", o), "18: the document holds more than 4 values");
  EXPECT_EQ(error(R"({"a": 1, "b": [2, 3, )", o), "18: the document holds more than 4 values");  // before the syntax
  o.max_values = 4096;
  std::string zeros = "{\"x\": [0";
  for (std::size_t i = 1; i < 3000000; ++i) zeros += ",0";
  zeros += "]}";
  EXPECT_EQ(error(zeros, o), "8195: the document holds more than 4096 values");  // the 4095th zero
}

TEST(Json, TheLoaderInputsNameTheirSource) {
  auto d = json::parse(std::string("[1,]"), std::string("calls.json"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().offset(), 3u);
  EXPECT_EQ(d.error().message(), "calls.json is not valid JSON at byte 3: unexpected character");
  EXPECT_TRUE(json::parse(std::string("[NaN, -Infinity]"), std::string("calls.json")).ok());
}

}  // namespace
}  // namespace fatpte
