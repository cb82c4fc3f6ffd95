// SeenTable (src/common/seen_table.hpp): what it remembers, and that keys a file aims at one slot of the
// unkeyed mix cost it no more than any others once the process secret mixes them.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/seen_table.hpp"

namespace {

using fatpte::detail::SeenTable;

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kM1 = 0xbf58476d1ce4e5b9ULL;
constexpr std::uint64_t kM2 = 0x94d049bb133111ebULL;

std::uint64_t inverse(std::uint64_t odd) {  // modulo 2^64, by Newton's iteration
  std::uint64_t x = odd;
  for (int i = 0; i < 6; ++i) x *= 2 - odd * x;
  return x;
}

std::uint64_t unshift(std::uint64_t y, int s) {  // the x with x ^ (x >> s) == y
  std::uint64_t x = y;
  for (int k = s; k < 64; k += s) x ^= y >> k;
  return x;
}

// The key whose unkeyed mix (secret 0) is `mixed`: splitmix64's finalizer run backwards.
std::uint64_t key_mixing_to(std::uint64_t mixed) {
  std::uint64_t z = unshift(mixed, 31) * inverse(kM2);
  z = unshift(z, 27) * inverse(kM1);
  return unshift(z, 30) - kGolden;
}

// Keys whose unkeyed mixes all end in 13 zero bits: slot 0 of every table of up to 8192 slots.
std::vector<std::uint64_t> aimed_keys(std::size_t n) {
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 1; keys.size() < n; ++i) keys.push_back(key_mixing_to(i << 13));
  return keys;
}

TEST(SeenTable, FindsWhatWasPutAcrossGrowth) {
  SeenTable<int> t;
  for (int i = 0; i < 1000; ++i) t.put(static_cast<std::uint64_t>(i) * 4 + 2, i);
  EXPECT_EQ(t.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    const int* v = t.find(static_cast<std::uint64_t>(i) * 4 + 2);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(*v, i);
  }
  EXPECT_EQ(t.find(1), nullptr);
  EXPECT_EQ(SeenTable<int>().find(0), nullptr);
}

TEST(SeenTable, AimedKeysClusterWithoutTheSecret) {
  // The check that the keys are aimed: unkeyed, every insertion walks the cluster before it.
  const std::vector<std::uint64_t> keys = aimed_keys(4096);
  SeenTable<int> unkeyed(0);
  for (std::uint64_t k : keys) unkeyed.put(k, 1);
  EXPECT_GT(unkeyed.probes(), std::uint64_t{4096} * 4096 / 4);
}

TEST(SeenTable, AimedKeysCostNoMoreThanOthersWithTheSecret) {
  const std::vector<std::uint64_t> keys = aimed_keys(4096);
  SeenTable<int> t;
  for (std::uint64_t k : keys) t.put(k, 1);
  for (std::uint64_t k : keys) ASSERT_NE(t.find(k), nullptr);
  // 4096 puts, 4095 moves while growing and 4096 finds at most half full: a few probes each.
  EXPECT_LT(t.probes(), std::uint64_t{8} * 3 * 4096);
}

}  // namespace
