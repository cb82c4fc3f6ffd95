// fatpte_reader: a container read through a read_at callback reads the planned bytes only
// (specs/remote.md), gives what fatpte_open_memory gives, and checks what it fetches.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "builder.hpp"
#include "capi/c_handles.hpp"
#include "capi/range_set.hpp"
#include "fatpte/fatpte.h"
#include "fatpte/signature.h"

namespace {

using fatpte::testing::Spec;

// A file in memory that counts what is read from it.
struct Source {
  std::vector<std::uint8_t> data;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> reads;  // (offset, size)
  fatpte_status fail_with = FATPTE_OK;
  std::uint64_t fail_at = UINT64_MAX;  // a read starting here fails (FATPTE_E_IO_ERROR)
  std::uint64_t bytes() const {
    std::uint64_t n = 0;
    for (const auto& r : reads) n += r.second;
    return n;
  }
};

fatpte_status read_at(void* user, std::uint64_t offset, void* buffer, std::size_t size) {
  auto* s = static_cast<Source*>(user);
  s->reads.emplace_back(offset, size);
  if (s->fail_with != FATPTE_OK) return s->fail_with;
  if (offset == s->fail_at) return FATPTE_E_IO_ERROR;
  if (offset > s->data.size() || size > s->data.size() - offset) return FATPTE_E_IO_ERROR;
  std::memcpy(buffer, s->data.data() + offset, size);
  return FATPTE_OK;
}

std::vector<std::uint8_t> bytes_of(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 7 + (i >> 9));
  return v;
}

std::uint64_t u64_at(const std::vector<std::uint8_t>& d, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | d[at + static_cast<std::size_t>(i)];
  return v;
}

// build_v2_named puts the manifest last, after the payloads (a layout fatpte's writers never
// use): the reader then fetches it by a read of its own.
std::pair<std::uint64_t, std::uint64_t> manifest_range(const std::vector<std::uint8_t>& d) {
  return {u64_at(d, 40), u64_at(d, 48)};
}

Source named_container() {
  Source s;
  s.data = fatpte::testing::build_v2_named(
      {Spec{"cpu", "portable", bytes_of(100000, 1)}, Spec{"fast", "xnnpack", bytes_of(300000, 2), 64, 5}},
      {{"w.a", bytes_of(50000, 3)}, {"w.b", bytes_of(70000, 4)}});
  return s;
}

TEST(Reader, OpensAndSelectsFromThePrefixAlone) {
  Source s = named_container();
  ASSERT_GT(s.data.size(), 4u * FATPTE_PREFIX_SIZE);
  fatpte_reader* r = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_reader_open(read_at, &s, s.data.size(), &r, &err), FATPTE_OK) << err.message;
  const auto manifest = manifest_range(s.data);
  ASSERT_GT(manifest.first, static_cast<std::uint64_t>(4 * FATPTE_PREFIX_SIZE));
  ASSERT_EQ(s.reads.size(), 2u);
  EXPECT_EQ(s.reads[0], (std::pair<std::uint64_t, std::uint64_t>(0, FATPTE_PREFIX_SIZE)));
  EXPECT_EQ(s.reads[1], manifest);
  const std::uint64_t opened = FATPTE_PREFIX_SIZE + manifest.second;
  const fatpte_container* c = fatpte_reader_container(r);
  fatpte_selection* sel = nullptr;
  ASSERT_EQ(fatpte_select(c, nullptr, nullptr, 0, nullptr, 0, &sel, &err), FATPTE_OK) << err.message;
  std::uint32_t chosen = 99;
  ASSERT_EQ(fatpte_selection_chosen(sel, &chosen), FATPTE_OK);
  EXPECT_EQ(chosen, 1u);  // priority 5
  fatpte_selection_free(sel);
  std::uint32_t keys = 0;
  ASSERT_EQ(fatpte_named_data_count(c, &keys), FATPTE_OK);
  EXPECT_EQ(keys, 2u);
  EXPECT_EQ(s.bytes(), opened);  // selecting read nothing more

  // The slice: the payload and both segments, each read once, nothing else.
  ASSERT_EQ(fatpte_reader_fetch_entry(r, chosen, &err), FATPTE_OK) << err.message;
  std::uint64_t offset = 0, size = 0;
  fatpte_entry_offset(c, chosen, &offset);
  fatpte_entry_size(c, chosen, &size);
  const void* a = nullptr;
  const void* b = nullptr;
  std::uint64_t a_size = 0, b_size = 0;
  ASSERT_EQ(fatpte_named_data_get(c, "w.a", &a, &a_size), FATPTE_OK);
  ASSERT_EQ(fatpte_named_data_get(c, "w.b", &b, &b_size), FATPTE_OK);
  EXPECT_EQ(s.bytes(), opened + size + a_size + b_size);
  EXPECT_EQ(s.reads.size(), 5u);
  const void* payload = nullptr;
  ASSERT_EQ(fatpte_entry_payload(c, chosen, &payload, &size), FATPTE_OK);
  EXPECT_EQ(std::memcmp(payload, s.data.data() + offset, size), 0);
  EXPECT_EQ(std::memcmp(b, bytes_of(70000, 4).data(), b_size), 0);
  std::uint64_t counted = 0, calls = 0;
  ASSERT_EQ(fatpte_reader_stats(r, &counted, &calls), FATPTE_OK);
  EXPECT_EQ(counted, s.bytes());
  EXPECT_EQ(calls, s.reads.size());
  // Fetching again reads nothing.
  ASSERT_EQ(fatpte_reader_fetch_entry(r, chosen, &err), FATPTE_OK);
  EXPECT_EQ(s.reads.size(), 5u);
  fatpte_reader_close(r);
}

TEST(Reader, ADamagedPayloadIsRefusedByItsChecksum) {
  Source s = named_container();
  fatpte_reader* r = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_reader_open(read_at, &s, s.data.size(), &r, &err), FATPTE_OK);
  std::uint64_t offset = 0;
  fatpte_entry_offset(fatpte_reader_container(r), 1, &offset);
  const std::uint8_t before = s.data[offset + 1000];
  s.data[offset + 1000] = static_cast<std::uint8_t>(before ^ 0x40);  // damaged in transit
  EXPECT_EQ(fatpte_reader_fetch_entry(r, 1, &err), FATPTE_E_PAYLOAD_CHECKSUM_MISMATCH);
  EXPECT_STREQ(err.field, "entries[1].checksum");
  EXPECT_NE(std::string(err.message).find("arrived with CRC32C"), std::string::npos) << err.message;
  fatpte_reader_close(r);
}

// A damaged named-data segment: its code, field and words (made only when the error is reported).
TEST(Reader, ADamagedSegmentIsRefusedByItsChecksum) {
  Source s = named_container();
  fatpte_reader* r = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_reader_open(read_at, &s, s.data.size(), &r, &err), FATPTE_OK);
  const void* b = nullptr;
  const void* payload = nullptr;
  std::uint64_t b_size = 0, offset = 0, size = 0;
  const fatpte_container* c = fatpte_reader_container(r);
  ASSERT_EQ(fatpte_named_data_get(c, "w.b", &b, &b_size), FATPTE_OK);  // pointers, not reads
  ASSERT_EQ(fatpte_entry_payload(c, 1, &payload, &size), FATPTE_OK);
  ASSERT_EQ(fatpte_entry_offset(c, 1, &offset), FATPTE_OK);
  const std::size_t at = static_cast<std::size_t>(static_cast<const std::uint8_t*>(b) -
                                                  (static_cast<const std::uint8_t*>(payload) - offset)) + 10;
  const std::uint8_t before = s.data[at];
  s.data[at] = static_cast<std::uint8_t>(before ^ 0x01);  // damaged in transit
  EXPECT_EQ(fatpte_reader_fetch_entry(r, 1, &err), FATPTE_E_SEGMENT_CHECKSUM_MISMATCH);
  EXPECT_STREQ(err.field, "segments[1].checksum");
  EXPECT_NE(std::string(err.message).find("the named data 'w.b' (segments[1]) arrived with CRC32C"),
            std::string::npos) << err.message;
  fatpte_reader_close(r);
}

TEST(Reader, TheCallersErrorIsReportedWithTheRange) {
  Source s = named_container();
  s.fail_with = FATPTE_E_REMOTE_TIMEOUT;
  fatpte_reader* r = nullptr;
  fatpte_error err;
  EXPECT_EQ(fatpte_reader_open(read_at, &s, s.data.size(), &r, &err), FATPTE_E_REMOTE_TIMEOUT);
  EXPECT_EQ(r, nullptr);
  EXPECT_NE(std::string(err.message).find("read_at(0, 65536) failed"), std::string::npos) << err.message;
}

// Tables that overflow the prefix and a manifest far from them: the one layout that costs a third
// read (Python's tests/remote/test_remote_http.py shows fatpte's own layout costing one more).
TEST(Reader, TablesPastThePrefixAndAManifestElsewhereCostTwoMoreReads) {
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> named;
  for (int i = 0; i < 4000; ++i) {
    char key[64];
    std::snprintf(key, sizeof key, "weights.layer%05d.some-long-tensor-name", i);
    named.emplace_back(key, bytes_of(8, static_cast<std::uint8_t>(i)));
  }
  Source s;
  s.data = fatpte::testing::build_v2_named({Spec{"cpu", "portable", bytes_of(1000, 1)}}, named);
  fatpte_reader* r = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_reader_open(read_at, &s, s.data.size(), &r, &err), FATPTE_OK) << err.message;
  ASSERT_EQ(s.reads.size(), 3u);
  EXPECT_EQ(s.reads[1].first, static_cast<std::uint64_t>(FATPTE_PREFIX_SIZE));
  EXPECT_EQ(s.reads[2], manifest_range(s.data));
  std::uint32_t keys = 0;
  ASSERT_EQ(fatpte_named_data_count(fatpte_reader_container(r), &keys), FATPTE_OK);
  EXPECT_EQ(keys, 4000u);
  fatpte_reader_close(r);
}

// Every conformance vector opens through the reader with the status fatpte_open_memory gives,
// reading only what the plan fetched (a byte never fetched is unreadable: reading one would crash).
TEST(Reader, EveryVectorOpensAsFromMemory) {
  DIR* dir = opendir(FATPTE_SPEC_VECTORS);
  ASSERT_NE(dir, nullptr);
  int seen = 0;
  while (dirent* d = readdir(dir)) {
    const std::string name = d->d_name;
    if (name.size() < 5 || name.substr(name.size() - 5) != ".nfat") continue;
    std::ifstream f(std::string(FATPTE_SPEC_VECTORS) + "/" + name, std::ios::binary);
    Source s;
    s.data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    fatpte_container* c = nullptr;
    fatpte_error expected;
    const fatpte_status want = fatpte_open_memory(s.data.data(), s.data.size(), &c, &expected);
    fatpte_close(c);
    fatpte_reader* r = nullptr;
    fatpte_error got;
    EXPECT_EQ(fatpte_reader_open(read_at, &s, s.data.size(), &r, &got), want) << name;
    if (want != FATPTE_OK) {
      EXPECT_EQ(got.offset, expected.offset) << name;
      EXPECT_STREQ(got.message, expected.message) << name;
    }
    EXPECT_LE(s.reads.size(), 2u) << name;
    fatpte_reader_close(r);
    ++seen;
  }
  closedir(dir);
  EXPECT_GT(seen, 20);
}

Source vector(const std::string& name) {
  std::ifstream f(std::string(FATPTE_SPEC_VECTORS) + "/" + name, std::ios::binary);
  Source s;
  s.data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return s;
}

// A signature is read only when asked for (select needs none of it), checked against its CRC32C,
// and then verifies through the reader's container as it does from memory.
TEST(Reader, TheSignatureIsFetchedOnRequestAndVerifiesAsFromMemory) {
  const std::string keys[] = {std::string(FATPTE_SPEC_VECTORS) + "/trusted-ed25519.pub.pem",
                              std::string(FATPTE_SPEC_VECTORS) + "/trusted-p256.pub.pem"};
  const char* paths[] = {keys[0].c_str(), keys[1].c_str()};
  fatpte_error err;
  fatpte_trust* trust = nullptr;
  ASSERT_EQ(fatpte_trust_load(paths, 2, &trust, &err), FATPTE_OK) << err.message;
  Source s = vector("v2-signed.nfat");
  fatpte_reader* r = nullptr;
  ASSERT_EQ(fatpte_reader_open(read_at, &s, s.data.size(), &r, &err), FATPTE_OK) << err.message;
  const std::size_t opened = s.reads.size();
  ASSERT_EQ(fatpte_reader_fetch_signature(r, &err), FATPTE_OK) << err.message;
  EXPECT_EQ(s.reads.size(), opened);  // the vector is shorter than the prefix: it came whole
  fatpte_signature_report* report = nullptr;
  fatpte_container* mem = nullptr;
  ASSERT_EQ(fatpte_open_memory(s.data.data(), s.data.size(), &mem, &err), FATPTE_OK);
  fatpte_signature_report* expected = nullptr;
  const fatpte_status want = fatpte_verify_signature(mem, trust, nullptr, 0, &expected, &err);
  EXPECT_EQ(fatpte_verify_signature(fatpte_reader_container(r), trust, nullptr, 0, &report, &err), want);
  fatpte_signature_report_free(report);
  fatpte_signature_report_free(expected);
  fatpte_close(mem);
  fatpte_reader_close(r);

  Source flipped = vector("v2-signature-byte-flipped.nfat");
  ASSERT_EQ(fatpte_reader_open(read_at, &flipped, flipped.data.size(), &r, &err), FATPTE_OK) << err.message;
  EXPECT_EQ(fatpte_reader_fetch_signature(r, &err), FATPTE_E_SIGNATURE_CHECKSUM_MISMATCH);
  EXPECT_STREQ(err.field, "header.signature_checksum");
  fatpte_reader_close(r);

  Source plain = named_container();
  ASSERT_EQ(fatpte_reader_open(read_at, &plain, plain.data.size(), &r, &err), FATPTE_OK) << err.message;
  const std::size_t before = plain.reads.size();
  EXPECT_EQ(fatpte_reader_fetch_signature(r, &err), FATPTE_OK);  // none placed: nothing read
  EXPECT_EQ(plain.reads.size(), before);
  fatpte_reader_close(r);
  fatpte_trust_free(trust);
}

// Issue 42 R6: the documented flow (open, select, fetch the chosen entry, load) when the load
// falls back into an entry that was never fetched. The load reads nothing of it: the entry is
// skipped with "not fetched" in the report, also when only its named data are missing (a fetch
// that failed part way), and tried once it is fetched. Before, the process died (SIGSEGV).
std::vector<std::pair<std::uint32_t, std::string>> load_attempts(const fatpte_container* c, const char* dir,
                                                                 fatpte_status* status) {
  fatpte_load_options* options = nullptr;
  EXPECT_EQ(fatpte_load_options_new(&options), FATPTE_OK);
  EXPECT_EQ(fatpte_load_options_set_defaults(options, 0, 0), FATPTE_OK);  // only `dir`, when given
  if (dir != nullptr) {
    EXPECT_EQ(fatpte_load_options_add_search_dir(options, dir), FATPTE_OK);
  }
  fatpte_loaded* loaded = nullptr;
  fatpte_load_report* report = nullptr;
  fatpte_error err;
  *status = fatpte_load_for(c, nullptr, nullptr, 0, nullptr, 0, options, &loaded, &report, &err);
  std::vector<std::pair<std::uint32_t, std::string>> out;
  std::size_t count = 0;
  EXPECT_EQ(fatpte_load_report_attempt_count(report, &count), FATPTE_OK);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t index = 0;
    const char* outcome = nullptr;
    EXPECT_EQ(fatpte_load_report_attempt(report, i, &index, &outcome), FATPTE_OK);
    out.emplace_back(index, outcome);
  }
  fatpte_load_report_free(report);
  fatpte_unload(loaded);
  fatpte_load_options_free(options);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

TEST(Reader, ALoadNeverReadsAnEntryThatWasNotFetched) {
  Source s = named_container();
  fatpte_reader* r = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_reader_open(read_at, &s, s.data.size(), &r, &err), FATPTE_OK) << err.message;
  const fatpte_container* c = fatpte_reader_container(r);
  fatpte_status status = FATPTE_OK;
  auto tried = load_attempts(c, nullptr, &status);
  EXPECT_EQ(status, FATPTE_E_NO_SPECIALIZATION_FITS);
  ASSERT_EQ(tried.size(), 2u);
  // The chosen entry (priority 5) states no payload kind and lies past the prefix: which runtime
  // it needs is in bytes never fetched. The other starts inside the prefix, so its library is
  // asked first, and that is what it lacks.
  EXPECT_EQ(tried[0].first, 1u);
  EXPECT_TRUE(starts_with(tried[0].second, "not fetched: its payload (300000 bytes at ")) << tried[0].second;
  EXPECT_TRUE(starts_with(tried[1].second, "library libfatpte_backend_portable")) << tried[1].second;

  // Fetched, the chosen entry is tried: its library is what it lacks here.
  ASSERT_EQ(fatpte_reader_fetch_entry(r, 1, &err), FATPTE_OK) << err.message;
  tried = load_attempts(c, nullptr, &status);
  ASSERT_EQ(tried.size(), 2u);
  EXPECT_TRUE(starts_with(tried[0].second, "library libfatpte_backend_xnnpack")) << tried[0].second;
  fatpte_reader_close(r);

  // Two dense_ref entries, the example backend found: a fetch of the chosen one that failed after
  // its payload, at its first named-data segment. Its named data were not all fetched, and the
  // load says which once its library is found; the other was not fetched at all.
  Source partial;
  partial.data = fatpte::testing::build_v2_named(
      {Spec{"cpu", "dense_ref", bytes_of(100000, 1)}, Spec{"fast", "dense_ref", bytes_of(300000, 2), 64, 5}},
      {{"w.a", bytes_of(50000, 3)}, {"w.b", bytes_of(70000, 4)}});
  ASSERT_EQ(fatpte_reader_open(read_at, &partial, partial.data.size(), &r, &err), FATPTE_OK) << err.message;
  c = fatpte_reader_container(r);
  const void* a = nullptr;
  std::uint64_t a_size = 0;
  ASSERT_EQ(fatpte_named_data_get(c, "w.a", &a, &a_size), FATPTE_OK);  // a pointer, not a read
  const void* payload = nullptr;
  std::uint64_t offset = 0, size = 0;
  ASSERT_EQ(fatpte_entry_payload(c, 1, &payload, &size), FATPTE_OK);
  ASSERT_EQ(fatpte_entry_offset(c, 1, &offset), FATPTE_OK);
  const std::uint8_t* base = static_cast<const std::uint8_t*>(payload) - offset;  // byte 0 of the file
  partial.fail_at = static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(a) - base);
  ASSERT_EQ(fatpte_reader_fetch_entry(r, 1, &err), FATPTE_E_IO_ERROR);
  tried = load_attempts(c, FATPTE_BACKEND_DIR, &status);
  EXPECT_EQ(status, FATPTE_E_NO_SPECIALIZATION_FITS);
  ASSERT_EQ(tried.size(), 2u);
  EXPECT_TRUE(starts_with(tried[0].second, "not fetched: its named data 'w.a' (segments[0])")) << tried[0].second;
  EXPECT_TRUE(starts_with(tried[1].second, "not fetched: its payload (100000 bytes at ")) << tried[1].second;
  // Validation reads every byte: refused, not crashed, on a container fetched in part.
  EXPECT_EQ(fatpte_validate(c, &err), FATPTE_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("read only in part"), std::string::npos) << err.message;
  fatpte_reader_close(r);
}

// Issue 42 R5: the reader's record of what it fetched did n^2 / 2 comparisons for n ranges (an
// entry listing 160,000 keys took 9 to 29 s to fetch). Its work per range is now bounded: at
// 1000, 4000 and 16000 keys, each in a segment of its own, the steps grow as the keys do.
TEST(Reader, FetchingAnEntryCostsWorkLinearInItsRanges) {
  std::vector<double> per_key;
  for (int n : {1000, 4000, 16000}) {
    std::vector<std::pair<std::string, std::vector<std::uint8_t>>> named;
    for (int i = 0; i < n; ++i) {
      char key[32];
      std::snprintf(key, sizeof key, "w%06d", i);
      named.emplace_back(key, bytes_of(8, static_cast<std::uint8_t>(i)));
    }
    Source s;
    s.data = fatpte::testing::build_v2_named({Spec{"cpu", "portable", bytes_of(1000, 1)}}, named);
    fatpte_reader* r = nullptr;
    fatpte_error err;
    ASSERT_EQ(fatpte_reader_open(read_at, &s, s.data.size(), &r, &err), FATPTE_OK) << err.message;
    const std::uint64_t opened = fatpte::capi::reader_steps(r);
    ASSERT_EQ(fatpte_reader_fetch_entry(r, 0, &err), FATPTE_OK) << err.message;
    ASSERT_EQ(fatpte_reader_fetch_entry(r, 0, &err), FATPTE_OK) << err.message;  // again: nothing read
    per_key.push_back(static_cast<double>(fatpte::capi::reader_steps(r) - opened) / n);
    fatpte_reader_close(r);
  }
  // Two lookups (the batch's pages, the read) and an insertion per range, two lookups per range
  // fetched again: at most 5 per key (fewer where the prefix holds some). A list searched from
  // the start makes it n / 2 per key.
  for (double steps : per_key) EXPECT_LE(steps, 5.5);
  EXPECT_LE(per_key[2], per_key[0] * 1.5);
}

// The record itself: ranges in any order, touching or overlapping, merged; each range costs a
// bounded number of steps, also when the file orders them to make a list search longest.
TEST(RangeSet, MergesAndCountsBoundedWork) {
  fatpte::detail::RangeSet set;
  EXPECT_TRUE(set.contains(5, 5));
  EXPECT_FALSE(set.contains(0, 1));
  set.add(10, 20);
  set.add(30, 40);
  EXPECT_TRUE(set.contains(12, 20));
  EXPECT_FALSE(set.contains(15, 31));
  EXPECT_FALSE(set.contains(20, 21));
  set.add(20, 30);  // touches both: one interval
  EXPECT_EQ(set.size(), 1u);
  EXPECT_TRUE(set.contains(10, 40));
  set.add(0, 100);
  EXPECT_EQ(set.size(), 1u);
  EXPECT_TRUE(set.contains(0, 100));
  EXPECT_FALSE(set.contains(0, 101));

  for (std::uint64_t n : {1000u, 16000u}) {
    fatpte::detail::RangeSet gaps;
    for (std::uint64_t i = n; i-- > 0;) {  // last first, with gaps: nothing merges
      EXPECT_FALSE(gaps.contains(i * 64, i * 64 + 8));
      gaps.add(i * 64, i * 64 + 8);
    }
    EXPECT_EQ(gaps.size(), n);
    gaps.add(0, n * 64);  // swallows every one
    EXPECT_EQ(gaps.size(), 1u);
    EXPECT_LE(gaps.steps(), 3 * n + 1);
  }
}

}  // namespace
