// The structural and content checks on hand-built containers: each test asserts the original
// value first, changes one thing, and expects the exact code, offset and field.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "builder.hpp"
#include "fatpte/fatpte.hpp"

namespace fatpte {
namespace {

namespace F = format;
using testing::build_v1;
using testing::build_v2;
using testing::entry_field;
using testing::put_u32le;
using testing::put_u64le;
using testing::reseal;
using testing::Spec;

std::vector<std::uint8_t> payload(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(seed + i * 7);
  return p;
}

std::vector<std::uint8_t> two_entries() {
  return build_v2({{"cpu", "portable", payload(100, 1)}, {"fast", "x86_avx2", payload(40, 9), 128, 5}});
}

Status check(const std::vector<std::uint8_t>& buf) { return validate_buffer(Bytes{buf.data(), buf.size()}); }

void expect(const Status& s, Error code, std::uint64_t offset, const std::string& field) {
  EXPECT_EQ(s.code(), code) << s.describe();
  EXPECT_EQ(s.offset(), offset) << s.describe();
  EXPECT_EQ(s.field(), field) << s.describe();
}

std::uint32_t u32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return static_cast<std::uint32_t>(b[at]) | static_cast<std::uint32_t>(b[at + 1]) << 8 |
         static_cast<std::uint32_t>(b[at + 2]) << 16 | static_cast<std::uint32_t>(b[at + 3]) << 24;
}

TEST(Structure, ValidContainerReadsBack) {
  auto buf = two_entries();
  auto st = read_structure(Bytes{buf.data(), buf.size()});
  ASSERT_TRUE(st.ok()) << st.error().describe();
  const auto& e = st.value().entries;
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].name, "cpu");
  EXPECT_EQ(e[1].backend_id, "x86_avx2");
  EXPECT_EQ(e[1].offset % 128, 0u);
  EXPECT_EQ(e[1].priority, 5);
  EXPECT_TRUE(check(buf).ok());
}

TEST(Structure, TruncationAtEveryLengthIsAnErrorNeverACrash) {
  auto buf = two_entries();
  for (std::size_t n = 0; n < buf.size(); ++n) {
    std::vector<std::uint8_t> cut(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    Status s = check(cut);
    ASSERT_FALSE(s.ok()) << n;
    if (n < 4) expect(s, Error::TRUNCATED_HEADER, n, "header.magic");
    else if (n < 8) expect(s, Error::TRUNCATED_HEADER, n, "header.version");
    else if (n < 64) expect(s, Error::TRUNCATED_HEADER, n, "header.container_size");
    else expect(s, Error::TRUNCATED_CONTAINER, F::kV2Header_container_size_offset, "header.container_size");
  }
}

TEST(Structure, BadMagic) {
  auto buf = two_entries();
  ASSERT_EQ(buf[0], 'N');
  buf[0] = 'X';
  expect(check(buf), Error::BAD_MAGIC, 0, "header.magic");
}

TEST(Structure, UnsupportedVersion) {
  auto buf = two_entries();
  ASSERT_EQ(u32(buf, 4), 2u);
  put_u32le(buf, 4, 3);
  expect(check(buf), Error::UNSUPPORTED_VERSION, 4, "header.version");
}

TEST(Structure, TrailingBytesReportedAtTheStatedEnd) {
  auto buf = two_entries();
  const std::size_t n = buf.size();
  buf.push_back(0);
  expect(check(buf), Error::TRAILING_BYTES, n, "header.container_size");
}

TEST(Structure, RecordSizesAndLimits) {
  struct Case {
    std::uint32_t at;
    std::uint32_t value;
    Error code;
    const char* field;
  };
  const Case cases[] = {
      {F::kV2Header_header_size_offset, 60, Error::BAD_HEADER_SIZE, "header.header_size"},
      {F::kV2Header_header_size_offset, 4104, Error::BAD_HEADER_SIZE, "header.header_size"},
      {F::kV2Header_entry_size_offset, 108, Error::BAD_ENTRY_SIZE, "header.entry_size"},
      {F::kV2Header_segment_entry_size_offset, 0, Error::BAD_SEGMENT_ENTRY_SIZE, "header.segment_entry_size"},
      {F::kV2Header_flags_offset, 1, Error::UNKNOWN_HEADER_FLAGS, "header.flags"},
      {F::kV2Header_entry_count_offset, 0, Error::NO_ENTRIES, "header.entry_count"},
      {F::kV2Header_entry_count_offset, 65537, Error::TOO_MANY_ENTRIES, "header.entry_count"},
      {F::kV2Header_entry_count_offset, 0xFFFFFFFFu, Error::TOO_MANY_ENTRIES, "header.entry_count"},
      {F::kV2Header_segment_count_offset, (1u << 20) + 1, Error::TOO_MANY_SEGMENTS, "header.segment_count"},
      {F::kV2Header_entry_count_offset, 100, Error::TABLE_OUT_OF_BOUNDS, "header.entry_count"},
  };
  for (const Case& c : cases) {
    auto buf = two_entries();
    put_u32le(buf, c.at, c.value);
    expect(check(buf), c.code, c.at, c.field);
  }
}

TEST(Structure, HeaderChecksumCoversTheTable) {
  auto buf = two_entries();
  const std::size_t at = entry_field(1, F::kV2Entry_priority_offset);
  ASSERT_EQ(buf[at], 5);
  buf[at] = 6;
  expect(check(buf), Error::HEADER_CHECKSUM_MISMATCH, F::kHeaderChecksumOffset, "header.header_checksum");
}

TEST(Structure, EntryRulesInCanonicalOrder) {
  auto buf = two_entries();
  // Entry 1: bad alignment and a reserved field; reserved comes first within an entry.
  put_u32le(buf, entry_field(1, F::kV2Entry_alignment_offset), 3);
  put_u32le(buf, entry_field(1, F::kV2Entry_reserved_offset), 1);
  reseal(buf);
  expect(check(buf), Error::RESERVED_NOT_ZERO, entry_field(1, F::kV2Entry_reserved_offset), "entries[1].reserved");
  put_u32le(buf, entry_field(1, F::kV2Entry_reserved_offset), 0);
  reseal(buf);
  expect(check(buf), Error::BAD_ALIGNMENT, entry_field(1, F::kV2Entry_alignment_offset), "entries[1].alignment");
  // An error of entry 0 comes before any error of entry 1.
  buf[entry_field(0, F::kV2Entry_name_offset)] = '!';
  reseal(buf);
  expect(check(buf), Error::BAD_NAME, entry_field(0, F::kV2Entry_name_offset), "entries[0].name");
}

TEST(Structure, PayloadOutOfBoundsIsOverflowSafe) {
  auto buf = two_entries();
  put_u64le(buf, entry_field(0, F::kV2Entry_offset_offset), ~std::uint64_t{0} - 63);
  put_u64le(buf, entry_field(0, F::kV2Entry_size_offset), 128);
  reseal(buf);
  expect(check(buf), Error::PAYLOAD_OUT_OF_BOUNDS, entry_field(0, F::kV2Entry_size_offset), "entries[0].size");
}

TEST(Structure, MisalignedPayload) {
  auto buf = two_entries();
  const std::size_t at = entry_field(1, F::kV2Entry_alignment_offset);
  ASSERT_EQ(u32(buf, at), 128u);
  put_u32le(buf, at, 4096);
  reseal(buf);
  expect(check(buf), Error::MISALIGNED_PAYLOAD, entry_field(1, F::kV2Entry_offset_offset), "entries[1].offset");
}

TEST(Structure, DuplicateNameReportsTheLaterEntry) {
  auto buf = build_v2({{"a", "x", payload(8, 1)}, {"b", "x", payload(8, 2)}, {"a", "y", payload(8, 3)}});
  expect(check(buf), Error::DUPLICATE_NAME, entry_field(2, 0), "entries[2].name");
}

TEST(Structure, DuplicateNameReportsTheFirstRepeatInTableOrder) {
  // Names a, b, b, a: entry 2 repeats entry 1 before entry 3 repeats entry 0, as Python's pass
  // walks the table; a name sorting first does not make its repeat the one reported.
  auto buf = build_v2({{"a", "x", payload(8, 1)}, {"b", "x", payload(8, 2)}, {"b", "y", payload(8, 3)},
                       {"a", "y", payload(8, 4)}});
  const Status s = check(buf);
  expect(s, Error::DUPLICATE_NAME, entry_field(2, 0), "entries[2].name");
  EXPECT_NE(s.message().find("entry 2 is named 'b', like entry 1"), std::string::npos) << s.describe();
}

TEST(Structure, OverlappingPayloadsButIdenticalRegionsMayBeShared) {
  auto buf = two_entries();
  const std::uint64_t off0 = [&] {
    std::uint64_t v = 0;
    std::memcpy(&v, &buf[entry_field(0, F::kV2Entry_offset_offset)], 8);
    return v;
  }();
  // Entry 1 points exactly at entry 0's region: lawful sharing (checksum then differs, later).
  auto shared = buf;
  put_u64le(shared, entry_field(1, F::kV2Entry_offset_offset), off0);
  put_u64le(shared, entry_field(1, F::kV2Entry_size_offset), 100);
  put_u32le(shared, entry_field(1, F::kV2Entry_alignment_offset), 64);
  reseal(shared);
  Status s = check(shared);
  EXPECT_NE(s.code(), Error::REGIONS_OVERLAP) << s.describe();
  // Entry 1 starts inside entry 0's payload: an overlap.
  put_u64le(buf, entry_field(1, F::kV2Entry_offset_offset), off0 + 64);
  put_u32le(buf, entry_field(1, F::kV2Entry_alignment_offset), 64);
  reseal(buf);
  expect(check(buf), Error::REGIONS_OVERLAP, entry_field(1, F::kV2Entry_offset_offset), "entries[1].offset");
}

TEST(Integrity, FlippedPayloadByteIsAChecksumError) {
  auto buf = two_entries();
  std::uint64_t off1 = 0;
  std::memcpy(&off1, &buf[entry_field(1, F::kV2Entry_offset_offset)], 8);
  buf[off1 + 3] ^= 0x10;
  expect(check(buf), Error::PAYLOAD_CHECKSUM_MISMATCH, entry_field(1, F::kV2Entry_checksum_offset),
         "entries[1].checksum");
}

TEST(Integrity, NonZeroPaddingIsReportedAtTheByte) {
  auto buf = two_entries();
  const std::size_t table_end = F::kV2HeaderSize + 2 * F::kV2EntrySize;
  ASSERT_EQ(buf[table_end + 1], 0);
  buf[table_end + 1] = 7;
  expect(check(buf), Error::PADDING_NOT_ZERO, table_end + 1, "");
}

TEST(Integrity, AbsentManifestMustBeZero) {
  auto buf = two_entries();
  put_u32le(buf, F::kV2Header_manifest_checksum_offset, 9);
  reseal(buf);
  expect(check(buf), Error::ABSENT_MANIFEST_NOT_ZERO, F::kV2Header_manifest_checksum_offset,
         "header.manifest_checksum");
}

TEST(Version1, ReadsExecuTorchLayout) {
  auto buf = build_v1({{"", "xnnpack", payload(10, 1)}, {"", "vulkan", payload(3, 2)}});
  auto st = read_structure(Bytes{buf.data(), buf.size()});
  ASSERT_TRUE(st.ok()) << st.error().describe();
  EXPECT_EQ(st.value().header.version, 1u);
  EXPECT_EQ(st.value().entries[1].name, "vulkan");
  EXPECT_EQ(st.value().entries[1].offset, F::kV1HeaderSize + 2 * F::kV1EntrySize + 10);
  EXPECT_TRUE(check(buf).ok());
}

TEST(Version1, NonAsciiIdAndOutOfBoundsPayload) {
  auto buf = build_v1({{"", "xnnpack", payload(10, 1)}});
  buf[F::kV1HeaderSize] = 0xC3;
  expect(check(buf), Error::V1_BAD_ID, F::kV1HeaderSize, "entries[0].backend_id");
  buf = build_v1({{"", "xnnpack", payload(10, 1)}});
  put_u64le(buf, F::kV1HeaderSize + F::kV1Entry_size_offset, 11);
  expect(check(buf), Error::PAYLOAD_OUT_OF_BOUNDS, F::kV1HeaderSize + F::kV1Entry_size_offset, "entries[0].size");
}

}  // namespace
}  // namespace fatpte
