// The verdict store's format (src/memory/verdict_store.hpp, specs/verdicts.md): every vector of
// specs/vectors/verdicts/ read as its index says (Python reads them in
// tests/conformance/test_verdicts_vectors.py), a store written and read back unchanged, the cap
// evicting the oldest record, an oversized file refused before it is parsed, and a library's
// identity from its build id.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.hpp"
#include "memory/identity.hpp"
#include "memory/verdict_store.hpp"

#ifndef FATPTE_SPEC_VECTORS
#error "FATPTE_SPEC_VECTORS must name specs/vectors"
#endif

namespace fatpte {
namespace {

const std::string kDir = std::string(FATPTE_SPEC_VECTORS) + "/verdicts";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string temp_folder() {
  char pattern[] = "/tmp/fatpte-verdicts-XXXXXX";
  const char* dir = mkdtemp(pattern);
  return dir != nullptr ? dir : "/tmp";
}

TEST(VerdictStore, EveryVectorReadsAsTheIndexSays) {
  const std::string index_text = slurp(kDir + "/index.json");
  auto index = json::parse(index_text, json::Options());
  ASSERT_TRUE(index.ok());
  std::size_t seen = 0;
  for (const json::Value::Member v : index.value().root().find("vectors").members()) {
    const std::string file(v.key);
    auto store = memory::read_store(kDir + "/" + file);
    if (v.value.find("accepted").boolean()) {
      ASSERT_TRUE(store.ok()) << file << ": " << store.error().describe();
      EXPECT_EQ(std::to_string(store.value().records.size()), v.value.find("records").text()) << file;
    } else {
      ASSERT_FALSE(store.ok()) << file;
      EXPECT_EQ(error_tag(store.error().code()), v.value.find("error").find("code").text()) << file;
      EXPECT_EQ(store.error().field(), v.value.find("error").find("field").text()) << file;
      EXPECT_NE(store.error().message().find("not used"), std::string::npos) << store.error().describe();
    }
    ++seen;
  }
  EXPECT_GE(seen, 30u);
}

memory::VerdictRecord record(std::uint32_t entry, std::uint64_t time) {
  memory::VerdictRecord r;
  r.key = {std::string(64, 'a'), entry, "e\xc3\xa9\"\n", "forward", std::string(64, 'b'), {"A=x", "B=y"}};
  r.verdict = "fail";
  r.reason = "E1401: golden call 0 ...";
  r.time = time;
  return r;
}

TEST(VerdictStore, WrittenAndReadBackUnchanged) {
  const std::string dir = temp_folder();
  memory::VerdictStore store;
  memory::put(store, record(0, 5));
  memory::put(store, record(1, 6));
  const std::string path = dir + "/app.verdicts.json";
  ASSERT_TRUE(memory::write_store(path, store).ok());
  auto back = memory::read_store(path);
  ASSERT_TRUE(back.ok()) << back.error().describe();
  ASSERT_EQ(back.value().records.size(), 2u);
  EXPECT_TRUE(back.value().records[0].key == store.records[0].key);
  EXPECT_EQ(memory::store_text(back.value()), slurp(path));
  EXPECT_TRUE(memory::erase(store, record(0, 0).key));
  EXPECT_EQ(memory::find(store, record(0, 0).key), nullptr);
  EXPECT_NE(memory::find(store, record(1, 0).key), nullptr);
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

TEST(VerdictStore, TheCapEvictsTheOldest) {
  memory::VerdictStore store;
  for (std::uint32_t i = 0; i < memory::kMaxRecords; ++i) memory::put(store, record(i, 1000 - i));
  ASSERT_EQ(store.records.size(), memory::kMaxRecords);
  memory::put(store, record(9999, 2000));
  EXPECT_EQ(store.records.size(), memory::kMaxRecords);
  EXPECT_EQ(memory::find(store, record(memory::kMaxRecords - 1, 0).key), nullptr);  // time 745: the oldest
  EXPECT_NE(memory::find(store, record(0, 0).key), nullptr);
  EXPECT_NE(memory::find(store, record(9999, 0).key), nullptr);
}

TEST(VerdictStore, AnOversizedStoreIsRefusedUnread) {
  const std::string dir = temp_folder();
  const std::string path = dir + "/big.verdicts.json";
  std::ofstream(path) << std::string(memory::kMaxStoreBytes + 1, ' ');
  auto store = memory::read_store(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code(), Error::INVALID_ARGUMENT);
  std::remove(path.c_str());
  rmdir(dir.c_str());
  EXPECT_TRUE(memory::read_store(dir + "/absent.verdicts.json").ok());  // none yet: empty
}

TEST(VerdictStore, ALibraryIsIdentifiedByItsBuildIdOrItsContent) {
  const std::string id = memory::library_identity("/proc/self/exe");
  EXPECT_EQ(id.rfind("build-id:", 0), 0u) << id;  // the test binary, linked with a build id
  const std::string dir = temp_folder();
  const std::string plain = dir + "/plain.so";
  std::ofstream(plain) << "not an ELF file";
  EXPECT_EQ(memory::library_identity(plain), "sha256:" + memory::digest_hex("not an ELF file"));
  EXPECT_EQ(memory::library_identity(dir + "/absent.so").rfind("unreadable:", 0), 0u);
  // A FIFO under a library's name: refused at once (opened O_NONBLOCK, then fstat), never waited on.
  const std::string fifo = dir + "/fifo.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(memory::library_identity(fifo), "unreadable:not a regular file");
  // A file with no build id larger than one read (1 MiB) is hashed piece by piece, whole.
  const std::string big = dir + "/big.so";
  std::string content(3 * (1u << 20) + 17, 'x');
  for (std::size_t i = 0; i < content.size(); i += 4099) content[i] = static_cast<char>(i % 251);
  std::ofstream(big, std::ios::binary) << content;
  EXPECT_EQ(memory::library_identity(big), "sha256:" + memory::digest_hex(content));
  std::string appended = "kernels ";
  memory::append_library_identity(appended, plain);
  EXPECT_EQ(appended, "kernels sha256:" + memory::digest_hex("not an ELF file"));
  std::remove(big.c_str());
  std::remove(fifo.c_str());
  std::remove(plain.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace fatpte
