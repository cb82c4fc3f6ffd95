// Verifying a signed container costs work bounded by what it reads (issue 33), counted with
// detail::SignatureWork, never timed: the manifest goes through the loader's rules and work budget
// before any record is built (S2), a bundle is refused at its value limit before it holds more (S5),
// and each table entry's manifest record is found once, not by a scan of the manifest per entry (S6);
// trusted-key files are read as specs/nfat-signature.md section 5.4 says, with one id per key (S4).
//
// The signature is the one of specs/vectors/v2-signed.nfat (entries cpu and gpu, signed with the
// vector's Ed25519 key), given as a detached bundle to containers built here: its envelope verifies
// whatever container it is checked against, so steps 5 to 8 run on what each test builds.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "builder.hpp"
#include "fatpte/container.hpp"
#include "fatpte/signature.h"
#include "fatpte/signature.hpp"
#include "flatbuffers/flatbuffers.h"
#include "nfat_manifest_generated.h"
#include "signature/verify.hpp"

#ifndef FATPTE_SPEC_VECTORS
#error "FATPTE_SPEC_VECTORS must name specs/vectors"
#endif

namespace fatpte {
namespace {

namespace M = nfat::manifest;

const std::string kVectors = FATPTE_SPEC_VECTORS;

std::vector<std::uint8_t> read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::shared_ptr<const TrustedKeys> vector_keys() {
  auto keys = TrustedKeys::load({kVectors + "/trusted-ed25519.pub.pem", kVectors + "/trusted-p256.pub.pem"});
  EXPECT_TRUE(keys.ok()) << keys.error().describe();
  return keys.ok() ? keys.value() : nullptr;
}

// The bundle of v2-signed.nfat, as JSON text.
std::string vector_bundle() {
  const std::vector<std::uint8_t> file = read(kVectors + "/v2-signed.nfat");
  auto c = Container::open_memory(file.data(), file.size());
  EXPECT_TRUE(c.ok());
  const Header& h = c.value()->header();
  return std::string(reinterpret_cast<const char*>(file.data()) + h.signature_offset, h.signature_size);
}

Bytes bytes(const std::string& s) { return Bytes{reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }

TEST(SignatureBundle, IsRefusedAtItsValueLimit) {
  // S5: the bundle is parsed before its signature is checked, so an ignored member anyone can add
  // (30 M zeros made the old reader hold 3.2 GB) must cost nothing: a bundle holds at most 4096
  // values (specs/nfat-signature.md sections 2 and 7), refused as they are counted.
  const auto keys = vector_keys();
  ASSERT_NE(keys, nullptr);
  const std::vector<std::uint8_t> file = read(kVectors + "/v2-signed.nfat");
  auto c = Container::open_memory(file.data(), file.size());
  ASSERT_TRUE(c.ok());
  const std::string bundle = vector_bundle();
  ASSERT_EQ(bundle[0], '{');
  for (const std::size_t zeros : {1000u, 4000u, 5000u, 3000000u}) {
    std::string padded = "{\"x-ignored\": [0";
    padded.reserve(bundle.size() + 2 * zeros + 32);
    for (std::size_t i = 1; i < zeros; ++i) padded += ",0";
    padded += "], " + bundle.substr(1);
    auto r = check_signature(*c.value(), *keys, bytes(padded));
    if (zeros <= 4000) {  // the vector's bundle holds a few dozen values
      ASSERT_TRUE(r.ok()) << r.error().describe();
      EXPECT_TRUE(r.value().first_error.ok()) << r.value().first_error.describe();  // ignored: still verifies
    } else {
      ASSERT_FALSE(r.ok()) << zeros;
      EXPECT_EQ(r.error().code(), Error::SIGNATURE_MALFORMED);
      EXPECT_EQ(r.error().field(), "signature");
      EXPECT_EQ(r.error().offset(), kNoOffset);  // a detached bundle
      EXPECT_NE(r.error().message().find("more than 4096 values"), std::string::npos) << r.error().message();
    }
  }
}

TEST(SignatureWork, EachEntryFindsItsRecordOnce) {
  // S6: one signed entry and N added ones: two O(1) record lookups per entry (steps 7 and the keys
  // each entry lists), however many entries; the old check scanned the manifest for each.
  const auto keys = vector_keys();
  ASSERT_NE(keys, nullptr);
  const std::string bundle = vector_bundle();
  for (const std::size_t added : {100u, 1000u, 8000u}) {
    std::vector<testing::Spec> specs{{"cpu", "xnnpack", std::vector<std::uint8_t>(16, 1)}};
    for (std::size_t i = 0; i < added; ++i) specs.push_back({"e" + std::to_string(i), "portable", {1}, 1});
    const std::vector<std::uint8_t> buf = testing::build_v2_named(specs, {});
    auto c = Container::open_memory(buf.data(), buf.size());
    ASSERT_TRUE(c.ok()) << c.error().describe();
    detail::SignatureWork work;
    auto r = detail::check_signature(*c.value(), *keys, bytes(bundle), &work);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_EQ(r.value().states.size(), added + 1);
    EXPECT_EQ(r.value().states[1], EntryState::kUnsigned);
    EXPECT_EQ(r.value().thinned, std::vector<std::string>{"gpu"});
    EXPECT_LE(work.records_looked_up, 2 * (added + 1)) << added;
    EXPECT_LE(work.record_bytes, 64u * (added + 1)) << added;  // only cpu's record is built: it is signed
  }
}

// A manifest whose entry `cpu` names one key of `key_bytes` bytes from `refs` offsets: small in the
// file, `refs * key_bytes` bytes of canonical record once expanded.
std::vector<std::uint8_t> shared_key_manifest(std::size_t refs, std::size_t key_bytes) {
  ::flatbuffers::FlatBufferBuilder b;
  const auto key = b.CreateString(std::string(key_bytes, 'k'));
  const std::vector<::flatbuffers::Offset<::flatbuffers::String>> listed(refs, key);
  const std::vector<::flatbuffers::Offset<M::Entry>> entries{
      M::CreateEntry(b, b.CreateString("cpu"), 0, 0, b.CreateVector(listed))};
  const std::vector<::flatbuffers::Offset<M::NamedData>> keyed{M::CreateNamedData(b, key, 0)};
  M::FinishManifestBuffer(b, M::CreateManifest(b, 1, b.CreateVector(entries), b.CreateVector(keyed)));
  return std::vector<std::uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

TEST(SignatureWork, TheManifestPassesTheLoaderRulesBeforeAnyRecordIsBuilt) {
  // S2: a manifest flatbuffers::Verifier accepts but the work budget of specs/nfat-manifest.md 2.3
  // refuses (64 KiB naming 64 MiB): E0420 before the signature is even read, no record built.
  const auto keys = vector_keys();
  ASSERT_NE(keys, nullptr);
  const std::string bundle = vector_bundle();
  const std::vector<std::uint8_t> manifest = shared_key_manifest(16000, 4096);
  ::flatbuffers::Verifier verifier(manifest.data(), manifest.size());
  ASSERT_TRUE(M::VerifyManifestBuffer(verifier));  // what the check relied on before
  const std::vector<std::uint8_t> buf = testing::build_v2_manifest(
      {{"cpu", "xnnpack", std::vector<std::uint8_t>(16, 1)}}, {{std::string(4096, 'k'), {1, 2, 3, 4}}}, manifest);
  auto c = Container::open_memory(buf.data(), buf.size());
  ASSERT_TRUE(c.ok()) << c.error().describe();
  detail::SignatureWork work;
  auto r = detail::check_signature(*c.value(), *keys, bytes(bundle), &work);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Error::MANIFEST_OVER_BUDGET) << r.error().describe();
  EXPECT_EQ(work.record_bytes, 0u);
  EXPECT_EQ(work.json_bytes, 0u);  // nothing of the signature parsed before the manifest passed
}

TEST(SignatureWork, AKeyPastTheSegmentTableIsRefusedBeforeTheSignature) {
  // specs/nfat-signature.md section 6: each named-data key is resolved to its segment before step 1.
  ::flatbuffers::FlatBufferBuilder b;
  const auto key = b.CreateString("w");
  const std::vector<::flatbuffers::Offset<::flatbuffers::String>> listed{key};
  const std::vector<::flatbuffers::Offset<M::Entry>> entries{
      M::CreateEntry(b, b.CreateString("cpu"), 0, 0, b.CreateVector(listed))};
  const std::vector<::flatbuffers::Offset<M::NamedData>> keyed{M::CreateNamedData(b, key, 7)};
  M::FinishManifestBuffer(b, M::CreateManifest(b, 1, b.CreateVector(entries), b.CreateVector(keyed)));
  const std::vector<std::uint8_t> manifest(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  const std::vector<std::uint8_t> buf =
      testing::build_v2_manifest({{"cpu", "xnnpack", std::vector<std::uint8_t>(16, 1)}}, {{"w", {1, 2}}}, manifest);
  auto c = Container::open_memory(buf.data(), buf.size());
  ASSERT_TRUE(c.ok()) << c.error().describe();
  const auto keys = vector_keys();
  ASSERT_NE(keys, nullptr);
  auto r = check_signature(*c.value(), *keys, bytes(vector_bundle()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Error::NAMED_DATA_BAD_SEGMENT) << r.error().describe();
  EXPECT_EQ(r.error().field(), "manifest.named_data[0].segment");
  EXPECT_EQ(r.error().offset(), c.value()->header().manifest_offset);
}


// ---- trusted-key files (issue 33 S4; specs/nfat-signature.md sections 5.2 and 5.4) ----

class TrustedKeyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fatpte-keys-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const std::string& f : made_) std::remove(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    made_.push_back(path);
    return path;
  }
  static std::string file(const std::string& name) {
    const std::vector<std::uint8_t> b = read(kVectors + "/" + name);
    return std::string(b.begin(), b.end());
  }
  // The key id, or the error as "E0702 key".
  static std::string id_of(const std::string& path) {
    auto k = TrustedKeys::load({path});
    if (k.ok()) return k.value()->keys()[0].key_id;
    return std::string(error_tag(k.error().code())) + " " + k.error().field();
  }
  std::string dir_;
  std::vector<std::string> made_;
};

// The ids Python gives the vector keys (fatpte/ops/signing/keys.py key_id).
const char* const kP256Id = "ed3f383effa358bd57d740704faa6cc0a0d44feeb6ab5fae5a13f0ebaee6f9ce";
const char* const kEd25519Id = "85b03ae42c4871a3dc7db5689fcdec52c6efc8b9886d62f9d63b7c4fb14aa459";

TEST_F(TrustedKeyFiles, AKeyHasOneIdWhateverItsForm) {
  EXPECT_EQ(id_of(kVectors + "/trusted-p256.pub.pem"), kP256Id);
  EXPECT_EQ(id_of(kVectors + "/trusted-ed25519.pub.pem"), kEd25519Id);
  // The same P-256 key with its point compressed (02/03 || X): re-encoded before it is hashed.
  EXPECT_EQ(id_of(write("compressed.pem", "-----BEGIN PUBLIC KEY-----\n"
                                          "MDkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDIgAD4k0PipgTEiWnO7mXPL+ty2d6kKBrxg9lWkPz7vV95dU=\n"
                                          "-----END PUBLIC KEY-----\n")),
            kP256Id);
  // CRLF lines, lines of any length, whitespace around the block.
  std::string pem = file("trusted-p256.pub.pem");
  std::string crlf = "\r\n  \t";
  for (const char c : pem) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  EXPECT_EQ(id_of(write("crlf.pem", crlf + "\r\n\r\n")), kP256Id);
}

TEST_F(TrustedKeyFiles, TheCApiNamesEachKeyByItsId) {
  // fatpte_trust_key_id: what the differential fuzz target compares with Python's key_id.
  const std::string compressed = kVectors + "/trusted-p256-compressed.pub.pem";
  const std::string ed25519 = kVectors + "/trusted-ed25519.pub.pem";
  const char* paths[] = {compressed.c_str(), ed25519.c_str()};
  fatpte_trust* trust = nullptr;
  fatpte_error err;
  ASSERT_EQ(fatpte_trust_load(paths, 2, &trust, &err), FATPTE_OK) << err.message;
  EXPECT_EQ(fatpte_trust_count(trust), 2u);
  EXPECT_STREQ(fatpte_trust_key_id(trust, 0), kP256Id);
  EXPECT_STREQ(fatpte_trust_key_id(trust, 1), kEd25519Id);
  EXPECT_EQ(fatpte_trust_key_id(trust, 2), nullptr);
  fatpte_trust_free(trust);
  EXPECT_EQ(fatpte_trust_count(nullptr), 0u);
  EXPECT_EQ(fatpte_trust_key_id(nullptr, 0), nullptr);
}

TEST_F(TrustedKeyFiles, OnlyOnePublicKeyBlockAndNothingElse) {
  const std::string key = file("trusted-ed25519.pub.pem");
  // What OpenSSL's PEM reader skipped to find a PUBLIC KEY block: a certificate or a private key
  // before it, text, a second key. Python refuses them all; so does the loader now.
  EXPECT_EQ(id_of(write("cert.pem", "-----BEGIN CERTIFICATE-----\nMIIBhTCCASugAwIBAgIU\n-----END CERTIFICATE-----\n" +
                                        key)),
            "E0702 key");
  EXPECT_EQ(id_of(write("private.pem", "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n" +
                                           key)),
            "E0702 key");
  EXPECT_EQ(id_of(write("text.pem", "the release key:\n" + key)), "E0702 key");
  EXPECT_EQ(id_of(write("two.pem", key + key)), "E0702 key");
  EXPECT_EQ(id_of(write("after.pem", key + "# trusted since 2026\n")), "E0702 key");
  EXPECT_EQ(id_of(write("blank.pem", "-----BEGIN PUBLIC KEY-----\n\n" + key.substr(27))), "E0702 key");
  EXPECT_EQ(id_of(write("padding.pem", "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA=\n-----END PUBLIC KEY-----\n")),
            "E0702 key");
  EXPECT_EQ(id_of(write("latin1.pem", key + "\xe9")), "E0702 key");
  // Text before the key past the size limit (64 KiB; 1 MiB of it made the old reader trust the key).
  EXPECT_EQ(id_of(write("big.pem", std::string(1 << 20, 'x') + "\n" + key)), "E0702 key");
  EXPECT_EQ(id_of(write("limit.pem", std::string(65536 - key.size(), ' ') + key)), kEd25519Id);
  EXPECT_EQ(id_of(write("over.pem", std::string(65537 - key.size(), ' ') + key)), "E0702 key");
}

TEST_F(TrustedKeyFiles, AP256KeyMustNameItsCurve) {
  // Explicit curve parameters (RFC 5480 forbids them in public keys; CVE-2020-0601).
  EXPECT_EQ(id_of(write("explicit.pem",
                        "-----BEGIN PUBLIC KEY-----\n"
                        "MIIBSzCCAQMGByqGSM49AgEwgfcCAQEwLAYHKoZIzj0BAQIhAP////8AAAABAAAA\n"
                        "AAAAAAAAAAAA////////////////MFsEIP////8AAAABAAAAAAAAAAAAAAAA////\n"
                        "///////////8BCBaxjXYqjqT57PrvVV2mIa8ZR0GsMxTsPY7zjw+J9JgSwMVAMSd\n"
                        "NgiG5wSTamZ44ROdJreBn36QBEEEaxfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5\n"
                        "RdiYwpZP40Li/hp/m47n60p8D54WK84zV2sxXs7LtkBoN79R9QIhAP////8AAAAA\n"
                        "//////////+85vqtpxeehPO5ysL8YyVRAgEBA0IABJTOBBg+9AilPHMbOCRVJ9Fe\n"
                        "nYX3BitUFxgZ6Rcaogh0Q0qZ+Qw3cbbwYFx0z2iRUhfPMXI4mFzhNXU/6cu+OkE=\n"
                        "-----END PUBLIC KEY-----\n")),
            "E0702 key");
}

TEST_F(TrustedKeyFiles, OnlyRegularFilesAreReadAndNeverWaitedFor) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  made_.push_back(fifo);
  EXPECT_EQ(id_of(fifo), "E0811 ");  // refused before a byte is read: no writer is waited for
  EXPECT_EQ(id_of("/dev/zero"), "E0811 ");  // never read
  EXPECT_EQ(id_of(dir_), "E0811 ");
  EXPECT_EQ(id_of(dir_ + "/absent.pem"), "E0801 ");
}

}  // namespace
}  // namespace fatpte
