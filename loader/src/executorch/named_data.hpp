// The container's shared named data, served to an ExecuTorch program through ExecuTorch's own
// NamedDataMap interface.
//
// Only the keys the entry's manifest entry lists are served (specs/nfat-manifest.md 3.2).
// get_data() hands out a FreeableBuffer that points into the container's read-only mapping
// (zero-copy; nothing to free). Each segment's CRC32C is checked the first time any of its keys is
// handed out, and a segment that fails is never handed out: the load stops with the checksum error
// (damage()). A key ExecuTorch asks for that the entry does not list is answered NotFound (so
// ExecuTorch looks in the program's own named data next) and noted (asked_missing()), which lets
// the loader name the key when loading fails for want of it.
//
// Tensor layouts (dtype, sizes, dim order), which ExecuTorch checks for the external tensors of
// a program (weights packed from a .ptd), come from one place: recorded_layouts().
#ifndef FATPTE_SRC_EXECUTORCH_NAMED_DATA_HPP_
#define FATPTE_SRC_EXECUTORCH_NAMED_DATA_HPP_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <executorch/runtime/core/named_data_map.h>

#include "fatpte/container.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace et {

struct Layout {
  std::int8_t scalar_type = 0;  // ExecuTorch ScalarType
  std::vector<std::int32_t> sizes;
  std::vector<std::uint8_t> dim_order;
};

// The tensor layout the container records for each of `keys` (manifest revision 2,
// NamedData.layout; specs/nfat-manifest.md 3.3), read here and nowhere else. A key without one is
// raw bytes: get_tensor_layout() answers NotImplemented for it. A layout the runner cannot rely on
// is an error: E0418 (unknown dtype, negative size, not a permutation), E0419 (its bytes differ
// from its segment's size).
Result<std::map<std::string, Layout>> recorded_layouts(
    const Container& container, const std::vector<std::pair<std::string, std::uint32_t>>& keys);

// The named data the entry lists, as (key, segment index) pairs in the manifest's order; empty
// for a version 1 container or an entry without a manifest entry.
Result<std::vector<std::pair<std::string, std::uint32_t>>> entry_named_data(const Container& container,
                                                                           const Entry& entry);

class ContainerDataMap final : public executorch::runtime::NamedDataMap {
 public:
  ContainerDataMap(const Container& container, std::vector<std::pair<std::string, std::uint32_t>> keys,
                   std::map<std::string, Layout> layouts);

  executorch::runtime::Result<const executorch::runtime::TensorLayout> get_tensor_layout(
      std::string_view key) const override;
  executorch::runtime::Result<executorch::runtime::FreeableBuffer> get_data(std::string_view key) const override;
  executorch::runtime::Error load_data_into(std::string_view key, void* buffer, size_t size) const override;
  executorch::runtime::Result<uint32_t> get_num_keys() const override;
  executorch::runtime::Result<const char*> get_key(uint32_t index) const override;

  // The checksum error of the first damaged segment asked for, or OK.
  Status damage() const;
  // Keys asked for (get_data, get_tensor_layout, load_data_into) that the entry does not list.
  std::vector<std::string> asked_missing() const;
  // Keys whose tensor layout was asked for but is not recorded.
  std::vector<std::string> layouts_missing() const;

 private:
  // The bytes of `key`'s segment after its checksum passed; nullptr (and why) otherwise.
  const std::pair<std::string, std::uint32_t>* find(std::string_view key) const;
  executorch::runtime::Error checked(std::uint32_t segment) const;
  void note(std::vector<std::string>& list, std::string_view key) const;

  const Container& container_;
  std::vector<std::pair<std::string, std::uint32_t>> keys_;
  std::map<std::string, Layout> layouts_;
  mutable std::mutex mutex_;
  mutable std::vector<std::uint8_t> verified_;  // per segment: 0 unchecked, 1 good, 2 damaged
  mutable Status damage_;
  mutable std::vector<std::string> missing_;
  mutable std::vector<std::string> layouts_missing_;
};

}  // namespace et
}  // namespace fatpte

#endif  // FATPTE_SRC_EXECUTORCH_NAMED_DATA_HPP_
