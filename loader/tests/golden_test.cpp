// How an output is compared with its golden tensor (container/golden.hpp, specs/nfat-manifest.md
// 11.1): the bound atol + rtol * max|want|, NaNs and infinities, dtype and shape, every dtype's
// elements (float16 and bfloat16 by their bits). fatpte/ops/check.py compares the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "container/golden.hpp"

namespace {

template <typename T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<std::uint8_t> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

fatpte::GoldenOutputSpec spec(const std::vector<std::uint8_t>& want, std::int8_t type, std::uint64_t element,
                              std::vector<std::int64_t> sizes, double atol, double rtol) {
  fatpte::GoldenOutputSpec s;
  s.want.dtype = "x";
  s.want.scalar_type = type;
  s.want.element_size = element;
  s.want.sizes = std::move(sizes);
  s.want.bytes = fatpte::Bytes{want.data(), want.size()};
  s.atol = atol;
  s.rtol = rtol;
  return s;
}

TEST(Golden, TheBoundScalesWithTheLargestGoldenValue) {
  const auto want = bytes_of<float>({1.0f, -4.0f, 0.5f});
  const auto got = bytes_of<float>({1.0f, -4.03f, 0.5f});
  const auto s = spec(want, 6, 4, {1, 3}, 0.0, 0.01);  // bound 0.04
  const auto r = fatpte::compare_golden(s, 6, {1, 3}, got.data(), got.size());
  EXPECT_TRUE(r.problem.empty());
  EXPECT_EQ(r.max_want, 4.0);
  EXPECT_NEAR(r.max_abs, 0.03, 1e-6);
  EXPECT_DOUBLE_EQ(r.bound, 0.04);
  EXPECT_TRUE(r.passed);
  EXPECT_NEAR(r.max_rel(), 0.0075, 1e-6);
  const auto tight = spec(want, 6, 4, {1, 3}, 0.0, 0.005);
  EXPECT_FALSE(fatpte::compare_golden(tight, 6, {1, 3}, got.data(), got.size()).passed);
}

TEST(Golden, NansAndInfinitiesAreEqualOnlyToThemselves) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::nan("");
  const auto want = bytes_of<double>({nan, inf, 2.0});
  const auto same = bytes_of<double>({nan, inf, 2.0});
  auto r = fatpte::compare_golden(spec(want, 7, 8, {3}, 0, 0), 7, {3}, same.data(), same.size());
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.max_want, 2.0);  // over the finite elements
  for (const auto& other : {bytes_of<double>({1.0, inf, 2.0}), bytes_of<double>({nan, -inf, 2.0}),
                            bytes_of<double>({nan, inf, nan})}) {
    r = fatpte::compare_golden(spec(want, 7, 8, {3}, 1e9, 1e9), 7, {3}, other.data(), other.size());
    EXPECT_TRUE(std::isinf(r.max_abs));
    EXPECT_FALSE(r.passed);
  }
}

// Issue 42, G3: atol = rtol = 1.7e308 is a valid tolerance (finite, at least 0), but the bound
// atol + rtol * max|want| overflowed to infinity, under which a NaN's infinite difference passed.
// The same cases as tests/manifest/test_golden_bound.py and tests/loader/test_golden_overflow.py.
TEST(Golden, NoToleranceLetsANanOrAnInfinityPass) {
  const double huge = 1.7e308;
  const double largest = std::numeric_limits<double>::max();
  const double inf = std::numeric_limits<double>::infinity();
  const auto want = bytes_of<float>({1.0f, 11.0f});
  for (const auto& got : {bytes_of<float>({std::nanf(""), 11.0f}), bytes_of<float>({static_cast<float>(inf), 11.0f}),
                          bytes_of<float>({static_cast<float>(-inf), 11.0f})}) {
    const auto r = fatpte::compare_golden(spec(want, 6, 4, {2}, huge, huge), 6, {2}, got.data(), got.size());
    EXPECT_EQ(r.bound, largest);  // saturated, not infinity
    EXPECT_TRUE(std::isinf(r.max_abs));
    EXPECT_FALSE(r.passed);
  }
  // The largest finite tolerance with finite outputs: any finite difference passes...
  const auto far = bytes_of<double>({-1e300, 11.0});
  const auto near = bytes_of<double>({1.0, 11.0});
  auto r = fatpte::compare_golden(spec(near, 7, 8, {2}, largest, largest), 7, {2}, far.data(), far.size());
  EXPECT_EQ(r.bound, largest);
  EXPECT_TRUE(r.passed);
  // ...but not one that overflows: 1.7e308 - -1.7e308 is past every double.
  const auto low = bytes_of<double>({-huge}), high = bytes_of<double>({huge});
  r = fatpte::compare_golden(spec(low, 7, 8, {1}, largest, largest), 7, {1}, high.data(), high.size());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(fatpte::golden_bound(1.0, 2.0, 3.0), 7.0);
  EXPECT_EQ(fatpte::golden_bound(huge, huge, 0.0), huge);
  EXPECT_EQ(fatpte::golden_bound(huge, huge, 1.0), largest);
  EXPECT_FALSE(fatpte::within(std::nan(""), largest));
  EXPECT_FALSE(fatpte::within(inf, inf));
  EXPECT_TRUE(fatpte::within(largest, largest));
}

TEST(Golden, AnotherDtypeOrShapeIsNotComparable) {
  const auto want = bytes_of<float>({1.0f, 2.0f});
  const auto s = spec(want, 6, 4, {2}, 1, 1);
  EXPECT_FALSE(fatpte::compare_golden(s, 7, {2}, want.data(), want.size()).problem.empty());
  EXPECT_FALSE(fatpte::compare_golden(s, 6, {1, 2}, want.data(), want.size()).problem.empty());
  EXPECT_FALSE(fatpte::compare_golden(s, 6, {2}, want.data(), 4).problem.empty());
}

TEST(Golden, HalfPrecisionAndIntegersCompareAsNumbers) {
  // float16 0x3c00 = 1, 0x3c01 = 1 + 2^-10; bfloat16 0x3f80 = 1, 0x3f81 = 1 + 2^-7.
  const auto h1 = bytes_of<std::uint16_t>({0x3c00}), h2 = bytes_of<std::uint16_t>({0x3c01});
  auto r = fatpte::compare_golden(spec(h1, 5, 2, {1}, 0, 0), 5, {1}, h2.data(), h2.size());
  EXPECT_DOUBLE_EQ(r.max_abs, std::ldexp(1.0, -10));
  const auto b1 = bytes_of<std::uint16_t>({0x3f80}), b2 = bytes_of<std::uint16_t>({0x3f81});
  r = fatpte::compare_golden(spec(b1, 15, 2, {1}, 0, 0), 15, {1}, b2.data(), b2.size());
  EXPECT_DOUBLE_EQ(r.max_abs, std::ldexp(1.0, -7));
  const auto i1 = bytes_of<std::int64_t>({-5, 7}), i2 = bytes_of<std::int64_t>({-5, 7});
  EXPECT_TRUE(fatpte::compare_golden(spec(i1, 4, 8, {2}, 0, 0), 4, {2}, i2.data(), i2.size()).passed);
  const auto i3 = bytes_of<std::int64_t>({-5, 8});
  EXPECT_FALSE(fatpte::compare_golden(spec(i1, 4, 8, {2}, 0, 0), 4, {2}, i3.data(), i3.size()).passed);
  const std::vector<std::uint8_t> none;
  EXPECT_TRUE(fatpte::compare_golden(spec(none, 6, 4, {0, 3}, 0, 0), 6, {0, 3}, none.data(), 0).passed);
}

}  // namespace
