// Typed tensors: the calls.json reader (shapes, dtypes, ranges, the field named in each error),
// the JSON and text writers, and the float16/bfloat16 conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "fatpte/tensor.hpp"
#include "value/adapter.hpp"

namespace {

using fatpte::DType;
using fatpte::Tensor;

std::vector<fatpte::Call> parse_ok(const std::string& text) {
  auto r = fatpte::calls_from_json(text, "calls.json");
  EXPECT_TRUE(r.ok()) << r.error().describe();
  return r.ok() ? r.value() : std::vector<fatpte::Call>{};
}

std::string error_of(const std::string& text) {
  auto r = fatpte::calls_from_json(text, "calls.json");
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.error().field() + " | " + r.error().message();
}

template <typename T>
T element(const Tensor& t, std::size_t i) {
  T v;
  std::memcpy(&v, t.data.data() + i * sizeof(T), sizeof(T));
  return v;
}

TEST(Tensor, ReadsTheFixtureCallFormatWithEveryDtype) {
  auto calls = parse_ok(R"([
    {"inputs": [{"dtype": "float32", "shape": [2, 3], "values": [0.5, 1, -2, 3.25, 4e1, -0.0]},
                {"dtype": "int64", "shape": [1], "values": [-9007199254740993]}],
     "outputs": [{"dtype": "float32", "shape": [], "values": [7]}]},
    {"inputs": [{"dtype": "bool", "shape": [3], "values": [true, false, 1]},
                {"dtype": "uint8", "shape": [2], "values": [0, 255]},
                {"dtype": "int8", "shape": [2], "values": [-128, 127]},
                {"dtype": "int32", "shape": [1], "values": [-2147483648]},
                {"dtype": "float16", "shape": [2], "values": [1.5, 65504]},
                {"dtype": "bfloat16", "shape": [1], "values": [-3.0]},
                {"dtype": "float64", "shape": [], "values": [NaN]},
                {"dtype": "uint64", "shape": [1], "values": [18446744073709551615]}]}
  ])");
  ASSERT_EQ(calls.size(), 2u);
  ASSERT_EQ(calls[0].inputs.size(), 2u);
  const Tensor& x = calls[0].inputs[0];
  EXPECT_EQ(x.dtype, DType::kFloat32);
  EXPECT_EQ(x.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(x.data.size(), 24u);
  EXPECT_EQ(element<float>(x, 4), 40.0f);
  EXPECT_TRUE(std::signbit(element<float>(x, 5)));
  EXPECT_EQ(element<std::int64_t>(calls[0].inputs[1], 0), -9007199254740993LL);  // exact beyond 2^53
  const auto& in = calls[1].inputs;
  EXPECT_EQ(in[0].data, (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_EQ(in[1].data, (std::vector<std::uint8_t>{0, 255}));
  EXPECT_EQ(element<std::int8_t>(in[2], 0), -128);
  EXPECT_EQ(element<std::int32_t>(in[3], 0), INT32_MIN);
  EXPECT_EQ(element<std::uint16_t>(in[4], 0), 0x3E00);  // 1.5 in binary16
  EXPECT_EQ(element<std::uint16_t>(in[4], 1), 0x7BFF);  // 65504, the largest finite half
  EXPECT_EQ(element<std::uint16_t>(in[5], 0), 0xC040);  // -3.0 in bfloat16
  EXPECT_TRUE(std::isnan(element<double>(in[6], 0)));
  EXPECT_TRUE(in[6].shape.empty());
  EXPECT_EQ(element<std::uint64_t>(in[7], 0), 18446744073709551615ULL);
}

TEST(Tensor, ErrorsNameTheField) {
  EXPECT_EQ(error_of(R"({"inputs": []})"),
            "calls | calls must be a JSON list with one {\"inputs\": [...]} object per call (calls.json)");
  EXPECT_EQ(error_of(R"([{"input": []}])"), "calls[0].inputs | calls[0].inputs must be a list of tensors");
  EXPECT_EQ(error_of(R"([{"inputs": [{"dtype": "float32", "shape": [2, 2], "values": [1, 2, 3]}]}])"),
            "calls[0].inputs[0].values | calls[0].inputs[0].values holds 3 elements, but shape [2, 2] has 4");
  EXPECT_EQ(error_of(R"([{"inputs": [{"dtype": "uint8", "shape": [1], "values": [256]}]}])"),
            "calls[0].inputs[0].values[0] | calls[0].inputs[0].values[0] is 256, outside 0..255");
  EXPECT_EQ(error_of(R"([{"inputs": [{"dtype": "int64", "shape": [1], "values": [1.5]}]}])"),
            "calls[0].inputs[0].values[0] | calls[0].inputs[0].values[0] must be an integer, not 1.5");
  EXPECT_EQ(error_of(R"([{"inputs": [{"dtype": "bool", "shape": [1], "values": [2]}]}])"),
            "calls[0].inputs[0].values[0] | calls[0].inputs[0].values[0] must be true or false");
  EXPECT_EQ(error_of(R"([{"inputs": [{"dtype": "float32", "shape": [-1], "values": []}]}])"),
            "calls[0].inputs[0].shape[0] | calls[0].inputs[0].shape[0] must be a size from 0 to 2^31 - 1");
  // A size is an i32 of the manifest's TensorLayout, as Python's reader takes it (issue 42).
  EXPECT_EQ(error_of(R"([{"inputs": [{"dtype": "float32", "shape": [3000000000, 0], "values": []}]}])"),
            "calls[0].inputs[0].shape[0] | calls[0].inputs[0].shape[0] must be a size from 0 to 2^31 - 1");
  EXPECT_TRUE(fatpte::calls_from_json(R"([{"inputs": [{"dtype": "float32", "shape": [2147483647, 0], "values": []}]}])",
                                      "calls.json")
                  .ok());
  const std::string bad_dtype = error_of(R"([{"inputs": [{"dtype": "complex64", "shape": [], "values": [1]}]}])");
  EXPECT_EQ(bad_dtype.rfind("calls[0].inputs[0].dtype | calls[0].inputs[0].dtype is 'complex64', not one of uint8, ", 0),
            0u)
      << bad_dtype;
  // JSON syntax: the byte offset of the problem, and duplicate keys.
  auto r = fatpte::calls_from_json("[{\"inputs\": [}]", "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().offset(), 13u);
  EXPECT_EQ(r.error().message(), "c.json is not valid JSON at byte 13: unexpected character");
  EXPECT_NE(error_of(R"([{"inputs": [], "inputs": []}])").find("the key \"inputs\" appears twice"), std::string::npos);
  std::string deep(100, '[');
  EXPECT_NE(error_of(deep).find("nested too deeply"), std::string::npos);
}

TEST(Tensor, WritesJsonThatReadsBack) {
  Tensor t;
  t.dtype = DType::kFloat32;
  t.shape = {3};
  const float v[3] = {0.1f, -std::numeric_limits<float>::infinity(), std::nanf("")};
  t.data.resize(sizeof v);
  std::memcpy(t.data.data(), v, sizeof v);
  EXPECT_EQ(fatpte::tensor_json(t), R"({"dtype": "float32", "shape": [3], "values": [0.100000001, -Infinity, NaN]})");
  auto back = parse_ok("[{\"inputs\": [" + fatpte::tensor_json(t) + "]}]");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(element<float>(back[0].inputs[0], 0), 0.1f);  // 9 digits read back the same float32
  Tensor b;
  b.dtype = DType::kBool;
  b.data = {1, 0};
  b.shape = {2};
  EXPECT_EQ(fatpte::tensor_json(b), R"({"dtype": "bool", "shape": [2], "values": [true, false]})");
  EXPECT_EQ(fatpte::tensor_text(b), "bool [2] true false");
  Tensor i;
  i.dtype = DType::kInt64;
  i.shape = {};
  i.data.resize(8);
  const std::int64_t big = INT64_MIN;
  std::memcpy(i.data.data(), &big, 8);
  EXPECT_EQ(fatpte::tensor_json(i), R"({"dtype": "int64", "shape": [], "values": [-9223372036854775808]})");
  Tensor none;
  none.none = true;
  EXPECT_EQ(fatpte::tensor_json(none), "null");
}

TEST(Tensor, HalfAndBfloat16RoundToNearestEven) {
  EXPECT_EQ(fatpte::float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(fatpte::float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(fatpte::float_to_half(65520.0f), 0x7C00);        // rounds up to infinity
  EXPECT_EQ(fatpte::float_to_half(5.9604645e-8f), 0x0001);   // the smallest subnormal
  EXPECT_EQ(fatpte::float_to_half(2.9802322e-8f), 0x0000);   // half of it: a tie, to even (zero)
  EXPECT_EQ(fatpte::float_to_half(1.0f + 1.0f / 2048), 0x3C00);  // a tie between 1 and 1+2^-10: even
  EXPECT_EQ(fatpte::float_to_half(1.0f + 3.0f / 2048), 0x3C02);  // a tie: to the even neighbour above
  EXPECT_TRUE(std::isnan(fatpte::half_to_float(fatpte::float_to_half(std::nanf("")))));
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {  // every finite non-negative half reads back exactly
    ASSERT_EQ(fatpte::float_to_half(fatpte::half_to_float(static_cast<std::uint16_t>(h))), h);
  }
  EXPECT_EQ(fatpte::float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(fatpte::bfloat16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(fatpte::float_to_bfloat16(1.00390625f), 0x3F80);  // 1 + 2^-8: a tie, to even
  EXPECT_EQ(fatpte::float_to_bfloat16(1.01171875f), 0x3F82);  // 1 + 3*2^-8: a tie, to even above
}

}  // namespace

// Signature adapters (value/adapter.hpp, specs/nfat-manifest.md 5.3): float32 to float16 or
// bfloat16 and back, elementwise, round to nearest even, out-of-range values to infinity; the pairs
// and their refusal in the words of fatpte/value/dtypes.py's adapter_problem.
namespace adapter_test {

std::vector<std::uint8_t> floats(const std::vector<float>& v) {
  std::vector<std::uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<std::uint16_t> halves(DType to, const std::vector<float>& v) {
  const std::vector<std::uint8_t> in = floats(v);
  std::vector<std::uint16_t> out(v.size());
  fatpte::convert_elements(DType::kFloat32, in.data(), to, reinterpret_cast<std::uint8_t*>(out.data()), v.size());
  return out;
}

TEST(Adapter, ConvertsFloat32ToHalfRoundingToNearestEvenAndPastTheRangeToInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  // 65504 is float16's largest; 65519.99 rounds down to it, 65520 (halfway to 65536) to infinity.
  EXPECT_EQ(halves(DType::kFloat16, {1.0f, -2.0f, 65504.0f, 65519.99f, 65520.0f, -1e9f, inf, 0.0f}),
            (std::vector<std::uint16_t>{0x3C00, 0xC000, 0x7BFF, 0x7BFF, 0x7C00, 0xFC00, 0x7C00, 0x0000}));
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: the even one, 1; 1 + 3 * 2^-11 goes up.
  EXPECT_EQ(halves(DType::kFloat16, {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f}),
            (std::vector<std::uint16_t>{0x3C00, 0x3C02}));
  // bfloat16: 1 + 2^-8 is halfway between 1 and 1 + 2^-7: 1; 1 + 3 * 2^-8 goes up to 1 + 2^-6.
  EXPECT_EQ(halves(DType::kBFloat16, {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -inf}),
            (std::vector<std::uint16_t>{0x3F80, 0x3F82, 0xFF80}));
  const std::uint16_t nan = halves(DType::kFloat16, {std::nanf("")})[0];
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(Adapter, ConvertsBackExactlyAndLeavesOtherPairsAlone) {
  Tensor t;
  t.dtype = DType::kFloat32;
  t.shape = {1, 3};
  t.data = floats({0.1f, -3.5f, 1e-7f});
  const Tensor half = fatpte::converted(t, DType::kFloat16);
  EXPECT_EQ(half.dtype, DType::kFloat16);
  EXPECT_EQ(half.shape, t.shape);
  ASSERT_EQ(half.data.size(), 6u);
  const Tensor back = fatpte::converted(half, DType::kFloat32);
  ASSERT_EQ(back.data.size(), 12u);
  float got[3];
  std::memcpy(got, back.data.data(), sizeof got);
  for (int i = 0; i < 3; ++i) {
    std::uint16_t h;
    std::memcpy(&h, half.data.data() + 2 * i, 2);
    EXPECT_EQ(got[i], fatpte::half_to_float(h));  // widening is exact
  }
  EXPECT_EQ(got[1], -3.5f);
  EXPECT_TRUE(fatpte::adapts(DType::kFloat32, DType::kBFloat16));
  EXPECT_FALSE(fatpte::adapts(DType::kFloat16, DType::kBFloat16));
  EXPECT_FALSE(fatpte::adapts(DType::kFloat32, DType::kInt64));
  Tensor ints;
  ints.dtype = DType::kInt64;
  ints.data.assign(8, 1);
  EXPECT_EQ(fatpte::converted(ints, DType::kFloat16).dtype, DType::kInt64);
}

TEST(Adapter, ThePairsAreFloat16OrBfloat16BehindFloat32) {
  EXPECT_EQ(fatpte::adapter_problem("float32", "float16"), "");
  EXPECT_EQ(fatpte::adapter_problem("float32", "bfloat16"), "");
  EXPECT_EQ(fatpte::adapter_problem("float16", "float16"),
            "program_dtype 'float16' cannot stand behind dtype 'float16'; an adapter converts only float16 behind "
            "float32, bfloat16 behind float32");
  EXPECT_NE(fatpte::adapter_problem("float32", "int64"), "");
  EXPECT_NE(fatpte::adapter_problem("float32", ""), "");
}

}  // namespace adapter_test
