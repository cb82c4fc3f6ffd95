// The manifest verifier's work is bounded by the buffer (specs/nfat-manifest.md 2.3), counted, not
// timed: a manifest naming one key from N offsets walks a constant number of distinct objects
// whatever N, counts every reference in its expanded size, and is refused (E0420) once that passes
// 16 bytes per byte plus 1 MiB; an element offset of 0 in a vector of strings is refused (2.1.2)
// by rule, where flatbuffers::Verifier only refuses it when what the slot then reads as a string
// happens to be malformed.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "builder.hpp"
#include "container/manifest_view.hpp"
#include "fatpte/fatpte.hpp"
#include "flatbuffers/flatbuffers.h"
#include "manifest/verify.hpp"
#include "nfat_manifest_generated.h"

namespace fatpte {
namespace {

namespace M = nfat::manifest;

// Entry `cpu` names one key of `key_bytes` bytes from `refs` offsets (one string), as the attack did.
std::vector<std::uint8_t> shared_key(std::size_t refs, std::size_t key_bytes) {
  ::flatbuffers::FlatBufferBuilder b;
  const auto key = b.CreateString(std::string(key_bytes, 'k'));
  const std::vector<::flatbuffers::Offset<::flatbuffers::String>> keys(refs, key);
  const ::flatbuffers::Offset<M::Entry> entry = M::CreateEntry(b, b.CreateString("cpu"), 0, 0, b.CreateVector(keys));
  const ::flatbuffers::Offset<M::NamedData> named = M::CreateNamedData(b, key, 0);
  const std::vector<::flatbuffers::Offset<M::Entry>> entries{entry};
  const std::vector<::flatbuffers::Offset<M::NamedData>> keyed{named};
  const auto root = M::CreateManifest(b, 1, b.CreateVector(entries), b.CreateVector(keyed));
  M::FinishManifestBuffer(b, root);
  return std::vector<std::uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

TEST(ManifestVerify, SharedReferencesCostOneWalkAndCountEveryReference) {
  std::uint64_t decoded_at_first = 0;
  for (const std::size_t refs : {1000u, 4000u, 16000u}) {
    const auto buf = shared_key(refs, 48);  // 56 bytes per reference for 4 in the buffer: in budget
    detail::ManifestWork work;
    const Status s = detail::verify_manifest(buf.data(), buf.size(), 0, &work);
    ASSERT_TRUE(s.ok()) << s.describe();
    if (decoded_at_first == 0) decoded_at_first = work.objects_decoded;
    EXPECT_EQ(work.objects_decoded, decoded_at_first) << refs;  // the key is decoded once, however named
    EXPECT_GE(work.expanded, refs * (4 + 4 + 48));              // ... and counted at every reference
    EXPECT_LE(work.expanded, detail::manifest_work_budget(buf.size()));
  }
}

TEST(ManifestVerify, OverTheBudgetIsRefusedAtTheReference) {
  for (const std::size_t refs : {1000u, 4000u, 16000u}) {
    const auto buf = shared_key(refs, 4096);  // 4 KiB per reference: far past 16 bytes per byte
    detail::ManifestWork work;
    const Status s = detail::verify_manifest(buf.data(), buf.size(), 100, &work);
    ASSERT_EQ(s.code(), Error::MANIFEST_OVER_BUDGET) << s.describe();
    EXPECT_EQ(s.field().rfind("manifest.entries[0].named_data[", 0), 0u) << s.field();
    EXPECT_LE(work.expanded, detail::manifest_work_budget(buf.size()) + 4 + 4096);  // stopped at once
    EXPECT_LE(work.objects_decoded, 8u);
  }
}

TEST(ManifestVerify, AnElementOffsetOfZeroIsRefused) {
  auto buf = shared_key(3, 8);
  ASSERT_TRUE(detail::verify_manifest(buf.data(), buf.size(), 0).ok());
  // The first u32 equal to the offset of element 1 of the named_data vector: find the vector by
  // its count (3) followed by three offsets that all reach the same string.
  for (std::size_t at = 0; at + 16 <= buf.size(); at += 4) {
    const auto u32 = [&](std::size_t p) {
      return static_cast<std::uint32_t>(buf[p]) | (static_cast<std::uint32_t>(buf[p + 1]) << 8) |
             (static_cast<std::uint32_t>(buf[p + 2]) << 16) | (static_cast<std::uint32_t>(buf[p + 3]) << 24);
    };
    if (u32(at) == 3 && at + 4 + u32(at + 4) == at + 8 + u32(at + 8) && u32(at + 4) != 0) {
      buf[at + 8] = buf[at + 9] = buf[at + 10] = buf[at + 11] = 0;
      const Status s = detail::verify_manifest(buf.data(), buf.size(), 0);
      EXPECT_EQ(s.code(), Error::MANIFEST_CORRUPT);
      EXPECT_EQ(s.field(), "manifest.entries[0].named_data[1]");
      EXPECT_EQ(s.offset(), at + 8);
      return;
    }
  }
  FAIL() << "no named_data vector found";
}

TEST(ManifestMemo, ValidateAndTheManifestViewAgreeWhicheverRunsFirst) {
  // A validate() that passed stands for the manifest's checks (they are part of it); one that
  // failed must not: the view then runs them itself and reports the damage.
  const std::vector<std::uint8_t> good = testing::build_v2_named(
      {{"cpu", "cpu", std::vector<std::uint8_t>(32, 1)}}, {{"w", std::vector<std::uint8_t>(16, 2)}});
  auto opened = Container::open_memory(good.data(), good.size());
  ASSERT_TRUE(opened.ok());
  EXPECT_TRUE(opened.value()->validate().ok());
  auto manifest = manifest_view(*opened.value());
  ASSERT_TRUE(manifest.ok());
  ASSERT_NE(manifest.value().root(), nullptr);
  EXPECT_EQ(manifest.value().root()->entries()->size(), 1u);
  // The index gives each table entry its record.
  ASSERT_NE(manifest.value().entry(0), nullptr);
  EXPECT_EQ(manifest.value().entry(0)->name()->str(), "cpu");
  EXPECT_EQ(manifest.value().entry(1), nullptr);

  std::vector<std::uint8_t> bad = good;
  const Header& h = opened.value()->header();
  bad[h.manifest_offset + h.manifest_size - 1] ^= 0xFF;  // the manifest's CRC32C no longer matches
  auto damaged = Container::open_memory(bad.data(), bad.size());
  ASSERT_TRUE(damaged.ok());  // the structural pass reads no manifest byte
  EXPECT_EQ(damaged.value()->validate().code(), Error::MANIFEST_CHECKSUM_MISMATCH);
  auto refused = manifest_view(*damaged.value());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), Error::MANIFEST_CHECKSUM_MISMATCH);
}

}  // namespace
}  // namespace fatpte
