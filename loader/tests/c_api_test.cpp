// The C API: opening, queries, zero-copy payload pointers, and statuses for bad arguments.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "builder.hpp"
#include "fatpte/fatpte.h"

namespace {

using fatpte::testing::build_v2;

std::vector<std::uint8_t> sample() {
  return build_v2({{"cpu", "portable", std::vector<std::uint8_t>(100, 3)},
                   {"fast", "x86_avx2", std::vector<std::uint8_t>(40, 4), 128, -2}});
}

TEST(CApi, OpenMemoryAndQueryEntries) {
  auto buf = sample();
  fatpte_container* c = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_open_memory(buf.data(), buf.size(), &c, &err), FATPTE_OK) << err.message;
  uint32_t n = 0, version = 0, align = 0, index = 99;
  ASSERT_EQ(fatpte_entry_count(c, &n), FATPTE_OK);
  ASSERT_EQ(fatpte_version(c, &version), FATPTE_OK);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(version, 2u);
  const char* name = nullptr;
  ASSERT_EQ(fatpte_entry_name(c, 1, &name), FATPTE_OK);
  EXPECT_STREQ(name, "fast");
  ASSERT_EQ(fatpte_entry_backend_id(c, 0, &name), FATPTE_OK);
  EXPECT_STREQ(name, "portable");
  ASSERT_EQ(fatpte_entry_alignment(c, 1, &align), FATPTE_OK);
  EXPECT_EQ(align, 128u);
  int32_t prio = 0;
  ASSERT_EQ(fatpte_entry_priority(c, 1, &prio), FATPTE_OK);
  EXPECT_EQ(prio, -2);
  uint32_t ck = 0;
  int has = 0;
  ASSERT_EQ(fatpte_entry_checksum(c, 0, &ck, &has), FATPTE_OK);
  EXPECT_EQ(has, 1);
  const void* data = nullptr;
  uint64_t size = 0, offset = 0;
  ASSERT_EQ(fatpte_entry_payload(c, 1, &data, &size), FATPTE_OK);
  ASSERT_EQ(fatpte_entry_offset(c, 1, &offset), FATPTE_OK);
  EXPECT_EQ(size, 40u);
  EXPECT_EQ(static_cast<const std::uint8_t*>(data), buf.data() + offset);  // zero-copy
  EXPECT_EQ(offset % 128, 0u);
  ASSERT_EQ(fatpte_find_entry(c, "x86_avx2", &index), FATPTE_OK);
  EXPECT_EQ(index, 1u);
  EXPECT_EQ(fatpte_find_entry(c, "nope", &index), FATPTE_E_ENTRY_NOT_FOUND);
  EXPECT_EQ(fatpte_entry_name(c, 2, &name), FATPTE_E_ENTRY_NOT_FOUND);
  EXPECT_EQ(fatpte_entry_name(c, 0, nullptr), FATPTE_E_INVALID_ARGUMENT);
  EXPECT_EQ(fatpte_validate(c, &err), FATPTE_OK);
  fatpte_close(c);
}

TEST(CApi, OpenReportsTheFirstStructuralError) {
  auto buf = sample();
  buf.resize(buf.size() - 1);
  fatpte_container* c = reinterpret_cast<fatpte_container*>(&buf);  // must be reset to NULL
  fatpte_error err;
  EXPECT_EQ(fatpte_open_memory(buf.data(), buf.size(), &c, &err), FATPTE_E_TRUNCATED_CONTAINER);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(err.offset, 32u);
  EXPECT_STREQ(err.field, "header.container_size");
  EXPECT_EQ(std::string(err.message).rfind("E0104 at 0x20 (header.container_size): ", 0), 0u) << err.message;
}

TEST(CApi, OpenFileValidatesAndMaps) {
  auto buf = sample();
  char path[] = "/tmp/fatpte_c_api_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, buf.data(), buf.size()), static_cast<ssize_t>(buf.size()));
  close(fd);
  fatpte_container* c = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_open_file(path, &c, &err), FATPTE_OK) << err.message;
  const void* data = nullptr;
  uint64_t size = 0;
  ASSERT_EQ(fatpte_entry_payload(c, 0, &data, &size), FATPTE_OK);
  uint64_t offset = 0;
  ASSERT_EQ(fatpte_entry_offset(c, 0, &offset), FATPTE_OK);
  ASSERT_EQ(size, 100u);
  EXPECT_EQ(std::memcmp(data, buf.data() + offset, size), 0);
  EXPECT_EQ(fatpte_validate_file(path, &err), FATPTE_OK);
  fatpte_close(c);
  std::remove(path);
  EXPECT_EQ(fatpte_validate_file(path, &err), FATPTE_E_IO_ERROR);
  EXPECT_EQ(err.offset, FATPTE_NO_OFFSET);
}

TEST(CApi, NullArgumentsAreStatusesNotCrashes) {
  fatpte_error err;
  EXPECT_EQ(fatpte_open_file(nullptr, nullptr, &err), FATPTE_E_INVALID_ARGUMENT);
  EXPECT_EQ(fatpte_open_memory(nullptr, 10, nullptr, nullptr), FATPTE_E_INVALID_ARGUMENT);
  EXPECT_EQ(fatpte_validate(nullptr, &err), FATPTE_E_INVALID_ARGUMENT);
  EXPECT_EQ(fatpte_validate_memory(nullptr, 5, &err), FATPTE_E_INVALID_ARGUMENT);
  EXPECT_EQ(fatpte_validate_memory(nullptr, 0, &err), FATPTE_E_TRUNCATED_HEADER);
  uint32_t n = 0;
  EXPECT_EQ(fatpte_entry_count(nullptr, &n), FATPTE_E_INVALID_ARGUMENT);
  fatpte_close(nullptr);
}

TEST(CApi, StatusMessages) {
  EXPECT_STREQ(fatpte_status_tag(FATPTE_OK), "OK");
  EXPECT_STREQ(fatpte_status_tag(FATPTE_E_PAYLOAD_OUT_OF_BOUNDS), "E0203");
  EXPECT_STREQ(fatpte_status_name(FATPTE_E_BAD_MAGIC), "BAD_MAGIC");
  EXPECT_STREQ(fatpte_status_message(FATPTE_E_BAD_MAGIC), "the file does not start with the magic 'NFAT'");
  EXPECT_STREQ(fatpte_status_message(static_cast<fatpte_status>(4242)), "unknown status code");
}

}  // namespace

namespace {

TEST(CApi, HostJsonAsksForTheSizeFirst) {
  size_t length = 0;
  EXPECT_EQ(fatpte_device_host_json(nullptr, 0, &length), FATPTE_E_INVALID_ARGUMENT);
  ASSERT_GT(length, 0u);
  std::vector<char> buf(length + 1);
  ASSERT_EQ(fatpte_device_host_json(buf.data(), buf.size(), &length), FATPTE_OK);
  EXPECT_EQ(std::strlen(buf.data()), length);
  EXPECT_EQ(std::string(buf.data()).rfind("{\n  \"name\": \"host\",\n", 0), 0u);
  EXPECT_EQ(fatpte_device_host_json(buf.data(), buf.size(), nullptr), FATPTE_E_INVALID_ARGUMENT);
}

}  // namespace

namespace {

const char* kDevice =
    "{\"name\": \"t\", \"os\": \"linux\", \"arch\": \"x86_64\", \"cpu_features\": [], \"accelerators\": [], "
    "\"memory_bytes\": 0, \"backends\": {}}";

TEST(CApi, ExplanationIsBuiltOnRequestAndOutlivesTheContainer) {
  auto buf = sample();
  fatpte_container* c = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_open_memory(buf.data(), buf.size(), &c, &err), FATPTE_OK);
  fatpte_selection* s = nullptr;
  ASSERT_EQ(fatpte_select(c, kDevice, nullptr, 0, nullptr, 0, &s, &err), FATPTE_OK) << err.message;
  fatpte_close(c);
  std::fill(buf.begin(), buf.end(), 0);  // nothing of the container is read any more
  const char* first = fatpte_selection_explain(s);
  EXPECT_EQ(std::string(first).rfind("device 't': linux x86_64\nchosen: cpu [portable]", 0), 0u);
  EXPECT_NE(std::string(first).find("fast [x86_avx2]"), std::string::npos);
  EXPECT_EQ(fatpte_selection_explain(s), first);  // built once
  fatpte_selection_free(s);
  EXPECT_STREQ(fatpte_selection_explain(nullptr), "");
}

TEST(CApi, SelectExplainAndLoadWithoutLibraries) {
  auto buf = sample();  // cpu [portable] priority 0, fast [x86_avx2] priority -2
  fatpte_container* c = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_open_memory(buf.data(), buf.size(), &c, &err), FATPTE_OK);
  fatpte_selection* s = nullptr;
  ASSERT_EQ(fatpte_select(c, kDevice, nullptr, 0, nullptr, 0, &s, &err), FATPTE_OK) << err.message;
  uint32_t chosen = 9;
  ASSERT_EQ(fatpte_selection_chosen(s, &chosen), FATPTE_OK);
  EXPECT_EQ(chosen, 0u);
  EXPECT_EQ(std::string(fatpte_selection_explain(s)).rfind("device 't': linux x86_64\nchosen: cpu [portable]", 0), 0u);
  // No directory and no FATPTE_BACKEND_PATH: nothing can be loaded, and the error says why.
  unsetenv("FATPTE_BACKEND_PATH");
  fatpte_loaded* l = nullptr;
  EXPECT_EQ(fatpte_load(c, s, nullptr, 0, &l, &err), FATPTE_E_NO_SPECIALIZATION_FITS);
  EXPECT_EQ(l, nullptr);
  EXPECT_NE(std::string(err.message).find("libfatpte_backend_portable.so not found"), std::string::npos) << err.message;
  fatpte_selection_free(s);
  const char* exclude[] = {"cpu", "x86_avx2"};
  EXPECT_EQ(fatpte_select(c, kDevice, nullptr, 0, exclude, 2, &s, &err), FATPTE_E_NO_SPECIALIZATION_FITS);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(fatpte_select(c, "{\"name\": 1}", nullptr, 0, nullptr, 0, &s, &err), FATPTE_E_INVALID_ARGUMENT);
  EXPECT_EQ(fatpte_select(c, kDevice, nullptr, 3, nullptr, 0, &s, &err), FATPTE_E_INVALID_ARGUMENT);
  size_t n = 0;
  float out[1];
  EXPECT_EQ(fatpte_run_f32(nullptr, nullptr, 0, out, 1, &n, &err), FATPTE_E_INVALID_ARGUMENT);
  fatpte_unload(nullptr);
  fatpte_selection_free(nullptr);
  fatpte_close(c);
}

}  // namespace

namespace {

TEST(CApi, NamedDataIsSharedZeroCopyAndValidates) {
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> named = {
      {"layer0.bias", std::vector<std::uint8_t>(12, 7)}, {"layer0.weight", std::vector<std::uint8_t>(40, 9)}};
  auto buf = fatpte::testing::build_v2_named(
      {{"cpu", "portable", std::vector<std::uint8_t>(10, 1)}, {"fast", "x86_avx2", std::vector<std::uint8_t>(6, 2)}},
      named);
  fatpte_error err;
  ASSERT_EQ(fatpte_validate_memory(buf.data(), buf.size(), &err), FATPTE_OK) << err.message;
  fatpte_container* c = nullptr;
  ASSERT_EQ(fatpte_open_memory(buf.data(), buf.size(), &c, &err), FATPTE_OK) << err.message;
  uint32_t n = 0;
  ASSERT_EQ(fatpte_named_data_count(c, &n), FATPTE_OK);
  EXPECT_EQ(n, 2u);
  const char* key = nullptr;
  ASSERT_EQ(fatpte_named_data_key(c, 1, &key), FATPTE_OK);
  EXPECT_STREQ(key, "layer0.weight");
  const void* data = nullptr;
  uint64_t size = 0;
  ASSERT_EQ(fatpte_named_data_get(c, "layer0.weight", &data, &size), FATPTE_OK);
  EXPECT_EQ(size, 40u);
  const auto* p = static_cast<const std::uint8_t*>(data);
  EXPECT_GE(p, buf.data());
  EXPECT_LT(p, buf.data() + buf.size());  // zero-copy: inside the container's bytes
  EXPECT_EQ((p - buf.data()) % 64, 0);    // aligned as its segment says
  EXPECT_EQ(p[0], 9);
  EXPECT_EQ(fatpte_named_data_get(c, "nope", &data, &size), FATPTE_E_NAMED_DATA_NOT_FOUND);
  EXPECT_EQ(fatpte_named_data_key(c, 2, &key), FATPTE_E_NAMED_DATA_NOT_FOUND);
  fatpte_close(c);
  // A flipped byte of a segment is the segment's checksum error.
  buf[(p - buf.data()) + 3] ^= 1;
  EXPECT_EQ(fatpte_validate_memory(buf.data(), buf.size(), &err), FATPTE_E_SEGMENT_CHECKSUM_MISMATCH);
}

}  // namespace
