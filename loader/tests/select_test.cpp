// Selection without a manifest (ranking by priority, preference, table order; exclusion), the
// profile reader's shape rules, and SHA-256 against the FIPS 180-4 examples.
#include <dirent.h>
#include <gtest/gtest.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "builder.hpp"
#include "common/sha256.hpp"
#include "fatpte/profile.hpp"
#include "fatpte/select.hpp"

namespace fatpte {
namespace {

std::string hex(const std::array<std::uint8_t, 32>& d) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (std::uint8_t b : d) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

TEST(Sha256, Fips180Examples) {
  const std::string abc = "abc";
  EXPECT_EQ(hex(detail::sha256(reinterpret_cast<const std::uint8_t*>(abc.data()), abc.size())),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(hex(detail::sha256(reinterpret_cast<const std::uint8_t*>(two.data()), two.size())),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(detail::sha256(nullptr, 0)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, MillionAsAndEveryLengthAroundTheBlocks) {
  const std::string million(1000000, 'a');  // FIPS 180-4's long example
  EXPECT_EQ(hex(detail::sha256(reinterpret_cast<const std::uint8_t*>(million.data()), million.size())),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Digests of the first n bytes of i*7 for every n to 200 (each padding case, one and two
  // tail blocks), their hex joined and hashed again; the value is Python's hashlib's.
  std::uint8_t data[200];
  for (int i = 0; i < 200; ++i) data[i] = static_cast<std::uint8_t>(i * 7);
  std::string joined;
  for (std::size_t n = 0; n <= 200; ++n) joined += hex(detail::sha256(data, n));
  EXPECT_EQ(hex(detail::sha256(reinterpret_cast<const std::uint8_t*>(joined.data()), joined.size())),
            "020088e9c26b95faf20594b4a5301fc5493cad4e2e0e002a0233825ae81dbd5f");
}

TEST(Sha256, PiecesGiveTheDigestOfTheirJoin) {
  std::uint8_t data[200];
  for (int i = 0; i < 200; ++i) data[i] = static_cast<std::uint8_t>(i * 13 + 5);
  for (std::size_t first = 0; first <= 200; ++first) {
    for (std::size_t second = first; second <= 200; second += 9) {
      detail::Sha256 s;
      s.update(data, first);
      s.update(data + first, second - first);
      s.update(data + second, 0);
      s.update(data + second, 200 - second);
      ASSERT_EQ(hex(s.finish()), hex(detail::sha256(data, 200))) << first << " " << second;
    }
  }
}

// Each path this CPU has (SHA-NI and AVX2 on this machine's x86-64; ARMv8's SHA2 instructions on
// aarch64, under qemu-aarch64 too; the portable one everywhere) gives the portable path's digest
// of every length to 300 and of many blocks at once.
TEST(Sha256, EveryPathTheCpuHasAgreesWithThePortableOne) {
  std::vector<std::uint8_t> data(70000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 31 + (i >> 8));
  const auto digest = [&](detail::Sha256Path path, std::size_t n) {
    detail::Sha256 s(path);
    s.update(data.data(), n);
    return hex(s.finish());
  };
  int paths = 0;
  for (const auto path : {detail::Sha256Path::kAvx2Bmi2, detail::Sha256Path::kShaNi,
                          detail::Sha256Path::kArmv8Sha2}) {
    if (!detail::sha256_path_available(path)) continue;
    ++paths;
    for (std::size_t n = 0; n <= 300; ++n) {
      ASSERT_EQ(digest(path, n), digest(detail::Sha256Path::kPortable, n)) << static_cast<int>(path) << " " << n;
    }
    EXPECT_EQ(digest(path, data.size()), digest(detail::Sha256Path::kPortable, data.size()));
    detail::Sha256 abc(path);
    abc.update("abc", 3);
    EXPECT_EQ(hex(abc.finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  }
#if defined(__x86_64__)
  // This workplace's machines have both (an x86-64 without either runs only the portable path).
  if (std::getenv("FATPTE_SHA256_PATHS_OPTIONAL") == nullptr) {
    EXPECT_EQ(paths, 2) << "set FATPTE_SHA256_PATHS_OPTIONAL on an x86-64 without SHA-NI or AVX2";
  }
#endif
#if defined(__aarch64__) && defined(__linux__) && !defined(__clang__)
  // A GCC build has the SHA2 path (sha256.cpp says why a clang one has not). Every CPU model of
  // qemu 7.2 has SHA2 (AT_HWCAP 0x8fb and up), as do the cores the containers target (Cortex-A53
  // on); a device without it sets FATPTE_SHA256_PATHS_OPTIONAL.
  if (std::getenv("FATPTE_SHA256_PATHS_OPTIONAL") == nullptr) {
    EXPECT_EQ(paths, 1) << "set FATPTE_SHA256_PATHS_OPTIONAL on an aarch64 without SHA2";
  }
#endif
}

// aarch64 takes the SHA2 instructions exactly when AT_HWCAP has HWCAP_SHA2 (bit 6), whatever else
// the word says: qemu 7.2's cortex-a53 word (0x8fb), the same without SHA2, `max`'s, none.
TEST(Sha256, ArmChoosesTheSha2InstructionsByHwcapSha2) {
  EXPECT_EQ(detail::sha256_arm_path(0x8fb), detail::Sha256Path::kArmv8Sha2);
  EXPECT_EQ(detail::sha256_arm_path(0x8fb & ~std::uint64_t{0x40}), detail::Sha256Path::kPortable);
  EXPECT_EQ(detail::sha256_arm_path(0xecfffffb), detail::Sha256Path::kArmv8Sha2);
  EXPECT_EQ(detail::sha256_arm_path(0xecfffffb & ~std::uint64_t{0x40}), detail::Sha256Path::kPortable);
  EXPECT_EQ(detail::sha256_arm_path(0x40), detail::Sha256Path::kArmv8Sha2);
  EXPECT_EQ(detail::sha256_arm_path(0), detail::Sha256Path::kPortable);
}

// Sha256() takes the first path this CPU has of SHA-NI, ARMv8 SHA2, AVX2+BMI2; on aarch64 the one
// its own AT_HWCAP word chooses.
TEST(Sha256, TheDefaultPathIsTheFastestTheCpuHas) {
  const detail::Sha256Path fastest = detail::sha256_fastest_path();
  EXPECT_TRUE(detail::sha256_path_available(fastest));
  const detail::Sha256Path order[] = {detail::Sha256Path::kShaNi, detail::Sha256Path::kArmv8Sha2,
                                      detail::Sha256Path::kAvx2Bmi2, detail::Sha256Path::kPortable};
  for (const detail::Sha256Path path : order) {
    if (path == fastest) break;
    EXPECT_FALSE(detail::sha256_path_available(path)) << static_cast<int>(path) << " is faster and available";
  }
#if defined(__aarch64__) && defined(__linux__)
  EXPECT_EQ(fastest, detail::sha256_arm_path(getauxval(AT_HWCAP)));
#endif
}

const char* kProfile = R"({
  "name": "test", "os": "linux", "arch": "x86_64", "cpu_features": ["avx2", "fma"],
  "accelerators": [{"kind": "cuda", "name": "GPU", "version": "8.6", "memory_bytes": 1024}],
  "memory_bytes": 4096, "backends": {"cuda": 3}
})";

TEST(ProfileJson, ReadsAValidProfile) {
  auto p = profile_from_json(kProfile);
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(p.value().name, "test");
  EXPECT_EQ(p.value().cpu_features.count("fma"), 1u);
  ASSERT_EQ(p.value().accelerators.size(), 1u);
  EXPECT_EQ(p.value().accelerators[0].version, "8.6");
  EXPECT_EQ(p.value().backends.at("cuda"), 3u);
  EXPECT_EQ(canonical_json(p.value()).rfind("{\n  \"name\": \"test\",\n", 0), 0u);
}

TEST(ProfileJson, RejectsWhatPythonRejectsNamingTheField) {
  std::string s = kProfile;
  auto expect_bad = [](const std::string& text, const std::string& field) {
    auto p = profile_from_json(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.error().code(), Error::INVALID_ARGUMENT);
    EXPECT_EQ(p.error().field(), field) << p.error().describe();
  };
  expect_bad(std::string(kProfile).replace(s.find("\"fma\""), 5, "\"avx2\""), "cpu_features[1]");
  // Python's json reads -1 as a number, and the range check names the field.
  expect_bad(std::string(kProfile).replace(s.find("4096"), 4, "-1"), "memory_bytes");
  expect_bad(std::string(kProfile).replace(s.find("\"linux\""), 7, "\"beos\""), "os");
  // An unknown key is named before a missing one, as device.py's _check_keys does.
  expect_bad(std::string(kProfile).replace(s.find("\"backends\""), 10, "\"backend\""), "backend");
  expect_bad("[]", "$");
  expect_bad("{\"name\": \"x\"", "$");
}

TEST(ProfileJson, ExecutorchBackendsAreOptionalSortedAndPrintedLast) {
  auto none = profile_from_json(kProfile);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().executorch_backends.has_value());  // absent: not known
  EXPECT_EQ(canonical_json(none.value()).find("executorch_backends"), std::string::npos);
  std::string text = kProfile;
  text.replace(text.rfind('}'), 1, R"(, "executorch_backends": ["XnnpackBackend", "NativeBackend"]})");
  auto two = profile_from_json(text);
  ASSERT_TRUE(two.ok()) << two.error().describe();
  ASSERT_TRUE(two.value().executorch_backends.has_value());
  EXPECT_EQ(two.value().executorch_backends->count("NativeBackend"), 1u);
  const std::string json = canonical_json(two.value());
  EXPECT_NE(json.find("  \"backends\": {\n    \"cuda\": 3\n  },\n  \"executorch_backends\": [\n    \"NativeBackend\",\n"
                      "    \"XnnpackBackend\"\n  ]\n}\n"),
            std::string::npos)
      << json;
  std::string empty = kProfile;
  empty.replace(empty.rfind('}'), 1, R"(, "executorch_backends": []})");
  auto zero = profile_from_json(empty);
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero.value().executorch_backends.has_value() && zero.value().executorch_backends->empty());
  EXPECT_NE(canonical_json(zero.value()).find("  \"executorch_backends\": []\n}"), std::string::npos);
  std::string twice = kProfile;
  twice.replace(twice.rfind('}'), 1, R"(, "executorch_backends": ["A", "A"]})");
  auto bad = profile_from_json(twice);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field(), "executorch_backends[1]");
}

// specs/device-profile.md 2 and 7: `sources` optional, kept in the file's order, printed last
// (after executorch_backends), the bytes Python's json.dumps prints; the tests/device ones agree.
TEST(ProfileJson, SourcesAreOptionalKeptInOrderAndPrintedLast) {
  auto none = profile_from_json(kProfile);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().sources.has_value());
  EXPECT_EQ(canonical_json(none.value()).find("sources"), std::string::npos);
  std::string text = kProfile;
  text.replace(text.rfind('}'), 1,
               R"(, "sources": ["Zeta manual", "Alpha \"TRM\", 100798"], "executorch_backends": []})");
  auto cited = profile_from_json(text);
  ASSERT_TRUE(cited.ok()) << cited.error().describe();
  ASSERT_TRUE(cited.value().sources.has_value());
  EXPECT_EQ(*cited.value().sources, (std::vector<std::string>{"Zeta manual", "Alpha \"TRM\", 100798"}));
  const std::string json = canonical_json(cited.value());
  EXPECT_NE(json.find("  },\n  \"executorch_backends\": [],\n  \"sources\": [\n    \"Zeta manual\",\n"
                      "    \"Alpha \\\"TRM\\\", 100798\"\n  ]\n}\n"),
            std::string::npos)
      << json;
  for (const char* bad : {R"([])", R"(["a", "a"])", R"(["a\t"])", R"("a")", R"(["a", 1])"}) {
    std::string t = kProfile;
    t.replace(t.rfind('}'), 1, std::string(", \"sources\": ") + bad + "}");
    auto refused = profile_from_json(t);
    ASSERT_FALSE(refused.ok()) << t;
    EXPECT_EQ(refused.error().field().rfind("sources", 0), 0u) << refused.error().describe();
  }
}

// Every named profile, read by the loader and printed again, is its file byte for byte: the C++
// printer writes `sources` (and every other key) as the files, in Python's canonical form, have it.
TEST(ProfileJson, EveryNamedProfilePrintsAsItsFile) {
  const std::string dir = devices_dir();
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir;
  std::vector<std::string> names;
  while (const dirent* ent = readdir(d)) {
    const std::string f = ent->d_name;
    if (f.size() > 5 && f.compare(f.size() - 5, 5, ".json") == 0) names.push_back(f.substr(0, f.size() - 5));
  }
  closedir(d);
  ASSERT_GE(names.size(), 21u);
  std::size_t cited = 0;
  for (const std::string& name : names) {
    auto p = load_profile(name);
    ASSERT_TRUE(p.ok()) << name << ": " << p.error().describe();
    std::ifstream in(dir + "/" + name + ".json", std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(canonical_json(p.value()), file) << name;
    cited += p.value().sources.has_value() ? 1 : 0;
  }
  EXPECT_GE(cited, 12u);  // the fleet's cores and the x86-64 levels cite their manuals
}

std::unique_ptr<Container> open(const std::vector<std::uint8_t>& buf) {
  auto r = Container::open_memory(buf.data(), buf.size());
  EXPECT_TRUE(r.ok()) << r.error().describe();
  return std::move(r).value();
}

TEST(Select, RanksByPriorityThenPreferenceThenTableOrder) {
  auto buf = testing::build_v2({{"a", "portable", {1}}, {"b", "x86_avx2", {2}, 64, 1}, {"c", "x86_avx2", {3}, 64, 1}});
  auto c = open(buf);
  DeviceProfile d = profile_from_json(kProfile).value();
  auto s = select(*c, d, {}, {});
  ASSERT_TRUE(s.ok()) << s.error().describe();
  EXPECT_EQ(s.value().chosen, 1u);  // priority 1 beats 0; b before c in the table
  EXPECT_EQ(s.value().verdicts[0].rank, 3u);
  s = select(*c, d, {"c"}, {});
  EXPECT_EQ(s.value().chosen, 2u);
  s = select(*c, d, {"a"}, {});
  EXPECT_EQ(s.value().chosen, 1u);  // preference never outranks priority
  s = select(*c, d, {}, {"x86_avx2"});
  EXPECT_EQ(s.value().chosen, 0u);
  EXPECT_FALSE(s.value().verdicts[1].eligible);
  EXPECT_EQ(s.value().verdicts[1].failures[0].requirement, "exclude");
  EXPECT_NE(explain(*c, s.value()).find("-  b [x86_avx2]: rejected: excluded by the caller (exclude=x86_avx2)"),
            std::string::npos);
}

TEST(Select, NothingEligibleListsEveryEntry) {
  auto buf = testing::build_v2({{"a", "portable", {1}}, {"b", "x86_avx2", {2}}});
  auto c = open(buf);
  auto s = select(*c, profile_from_json(kProfile).value(), {}, {"a", "b"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), Error::NO_SPECIALIZATION_FITS);
  EXPECT_NE(s.error().message().find("-  a [portable]: rejected"), std::string::npos);
  EXPECT_NE(s.error().message().find("-  b [x86_avx2]: rejected"), std::string::npos);
}

TEST(Select, AssessKeepsEveryVerdictWhenNothingFits) {
  auto buf = testing::build_v2({{"a", "portable", {1}}, {"b", "x86_avx2", {2}}});
  auto c = open(buf);
  const DeviceProfile d = profile_from_json(kProfile).value();
  auto none = assess(*c, d, {}, {"a", "b"});
  ASSERT_TRUE(none.ok()) << none.error().describe();
  EXPECT_FALSE(none.value().fits);
  ASSERT_EQ(none.value().verdicts.size(), 2u);
  EXPECT_FALSE(none.value().verdicts[0].eligible);
  EXPECT_NE(selection_json(*c, none.value()).find("\"chosen\": null,"), std::string::npos);
  auto some = assess(*c, d, {}, {"a"});
  ASSERT_TRUE(some.ok());
  EXPECT_TRUE(some.value().fits);
  EXPECT_EQ(some.value().chosen, 1u);
  EXPECT_NE(selection_json(*c, some.value()).find("\"chosen\": \"b\","), std::string::npos);
}

}  // namespace
}  // namespace fatpte
