// A minimal v2 container writer for the unit tests, built on the generated layout constants; the
// parity with Python's fatpte.pack is checked by tests/loader/test_cpp_parity.py, not here.
#ifndef FATPTE_TESTS_BUILDER_HPP_
#define FATPTE_TESTS_BUILDER_HPP_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fatpte {
namespace testing {

struct Spec {
  std::string name;
  std::string backend_id;
  std::vector<std::uint8_t> payload;
  std::uint32_t alignment = 64;
  std::int32_t priority = 0;
};

void put_u32le(std::vector<std::uint8_t>& buf, std::size_t at, std::uint32_t v);
void put_u64le(std::vector<std::uint8_t>& buf, std::size_t at, std::uint64_t v);
// A valid v2 container holding `specs` in order, payloads aligned, checksums set.
std::vector<std::uint8_t> build_v2(const std::vector<Spec>& specs);
// A valid v1 container (ExecuTorch's layout) holding (backend id, payload) pairs back to back.
std::vector<std::uint8_t> build_v1(const std::vector<Spec>& specs);
// A valid v2 container with a manifest naming every entry and `named` (key, bytes) pairs, each
// stored in its own segment; every entry lists every key. Keys must be sorted bytewise.
std::vector<std::uint8_t> build_v2_named(const std::vector<Spec>& specs,
                                         const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& named);
// The same with a TensorLayout (manifest revision 2) for the keys of `layouts`.
struct Layout {
  std::string dtype;
  std::vector<std::int32_t> sizes;
  std::vector<std::uint8_t> dim_order;  // empty: contiguous
};
std::vector<std::uint8_t> build_v2_named(const std::vector<Spec>& specs,
                                         const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& named,
                                         const std::map<std::string, Layout>& layouts);
// The same around a manifest the test wrote (its CRC32C set, nothing else of it checked); segment i
// holds named[i]'s bytes.
std::vector<std::uint8_t> build_v2_manifest(const std::vector<Spec>& specs,
                                            const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& named,
                                            const std::vector<std::uint8_t>& manifest);
// Recompute header_checksum after a test edited the header or a table record.
void reseal(std::vector<std::uint8_t>& buf);
// Offset of field `field_offset` of entry `index` in a container built by build_v2.
std::size_t entry_field(std::uint32_t index, std::uint32_t field_offset);

}  // namespace testing
}  // namespace fatpte

#endif  // FATPTE_TESTS_BUILDER_HPP_
