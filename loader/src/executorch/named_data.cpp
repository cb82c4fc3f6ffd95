// The container's named data as an ExecuTorch NamedDataMap (executorch/named_data.hpp).
#include "executorch/named_data.hpp"

#include <algorithm>
#include <set>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "container/manifest_view.hpp"
#include "manifest/rules.hpp"

namespace fatpte {
namespace et {

namespace M = nfat::manifest;
using EtError = executorch::runtime::Error;
using executorch::runtime::FreeableBuffer;
using executorch::runtime::Span;
using executorch::runtime::TensorLayout;

Result<std::map<std::string, Layout>> recorded_layouts(
    const Container& container, const std::vector<std::pair<std::string, std::uint32_t>>& keys) {
  std::map<std::string, Layout> out;
  std::set<std::string> wanted;
  for (const auto& k : keys) wanted.insert(k.first);
  auto manifest = manifest_view(container);
  if (!manifest.ok()) return manifest.error();
  const M::Manifest* root = manifest.value().root();
  if (root == nullptr || root->named_data() == nullptr) return out;
  for (const M::NamedData* nd : *root->named_data()) {
    const M::TensorLayout* lay = nd->layout();
    if (lay == nullptr) continue;  // raw bytes: a delegate's blob
    const std::string key = nd->key()->str();
    if (wanted.count(key) == 0) continue;  // another entry's
    const LayoutDtype* dtype = layout_dtype(lay->dtype()->c_str());
    // The value rules (E0418, E0419) are validate's; the runner checks what it relies on before it
    // answers ExecuTorch: a known dtype, sizes >= 0, a permutation, and the segment's exact size
    // (ExecuTorch reads the tensor's bytes from the buffer get_data returns).
    const std::string field = "manifest.named_data." + key + ".layout";
    FATPTE_CHECK(dtype != nullptr, Error::MANIFEST_VALUE_INVALID, container.header().manifest_offset, field,
                 "named-data key '%s': dtype '%s' is not a dtype of specs/nfat-manifest.md 3.3", key.c_str(),
                 lay->dtype()->c_str());
    Layout l;
    l.scalar_type = dtype->scalar_type;
    std::uint64_t nbytes = dtype->bytes;
    if (lay->sizes() != nullptr) {
      for (const std::int32_t d : *lay->sizes()) {
        FATPTE_CHECK(d >= 0, Error::MANIFEST_VALUE_INVALID, container.header().manifest_offset, field,
                     "named-data key '%s': a size is %d", key.c_str(), d);
        l.sizes.push_back(d);
        nbytes = d == 0 || nbytes <= UINT64_MAX / static_cast<std::uint64_t>(d) ? nbytes * static_cast<std::uint64_t>(d)
                                                                                  : UINT64_MAX;
      }
    }
    if (lay->dim_order() != nullptr && lay->dim_order()->size() != 0) {
      l.dim_order.assign(lay->dim_order()->begin(), lay->dim_order()->end());
    } else {
      for (std::size_t d = 0; d < l.sizes.size(); ++d) l.dim_order.push_back(static_cast<std::uint8_t>(d));
    }
    std::vector<bool> seen(l.sizes.size(), false);
    bool permutation = l.dim_order.size() == l.sizes.size();
    for (std::uint8_t d : l.dim_order) {
      permutation = permutation && d < seen.size() && !seen[d];
      if (permutation) seen[d] = true;
    }
    FATPTE_CHECK(permutation, Error::MANIFEST_VALUE_INVALID, container.header().manifest_offset, field,
                 "named-data key '%s': dim_order is not a permutation of its %zu dimensions", key.c_str(),
                 l.sizes.size());
    if (nd->segment() < container.segments().size()) {
      const std::uint64_t have = container.segments()[nd->segment()].size;
      FATPTE_CHECK(nbytes == have, Error::NAMED_DATA_LAYOUT_MISMATCH, container.header().manifest_offset, field,
                   "named-data key '%s': its layout describes %" PRIu64 " bytes, its segment %u holds %" PRIu64,
                   key.c_str(), nbytes, nd->segment(), have);
    }
    out.emplace(key, std::move(l));
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::uint32_t>>> entry_named_data(const Container& container,
                                                                           const Entry& entry) {
  std::vector<std::pair<std::string, std::uint32_t>> out;
  auto manifest = manifest_view(container);
  if (!manifest.ok()) return manifest.error();
  const M::Entry* me = manifest.value().entry(entry.index);
  if (me == nullptr || me->named_data() == nullptr) return out;
  const auto* named = manifest.value().root()->named_data();
  for (const ::flatbuffers::String* key : *me->named_data()) {
    const M::NamedData* found = nullptr;
    if (named != nullptr) {
      // Keys are sorted bytewise and unique (E0415 otherwise): a binary search finds one.
      std::size_t lo = 0, hi = named->size();
      while (lo < hi && found == nullptr) {
        const std::size_t mid = lo + (hi - lo) / 2;
        const M::NamedData* nd = named->Get(static_cast<::flatbuffers::uoffset_t>(mid));
        const int cmp = std::strcmp(nd->key()->c_str(), key->c_str());
        if (cmp == 0) found = nd;
        else if (cmp < 0) lo = mid + 1;
        else hi = mid;
      }
    }
    FATPTE_CHECK(found != nullptr, Error::NAMED_DATA_KEY_MISSING, container.header().manifest_offset,
                 "manifest.entries." + entry.name + ".named_data",
                 "entry '%s' needs the named-data key '%s', which the manifest does not define", entry.name.c_str(),
                 key->c_str());
    FATPTE_CHECK(found->segment() < container.segments().size(), Error::NAMED_DATA_BAD_SEGMENT,
                 container.header().manifest_offset, "manifest.named_data",
                 "the named-data key '%s' points at segment %u, past the segment table (%zu segments)", key->c_str(),
                 found->segment(), container.segments().size());
    out.emplace_back(key->str(), found->segment());
  }
  return out;
}

ContainerDataMap::ContainerDataMap(const Container& container, std::vector<std::pair<std::string, std::uint32_t>> keys,
                                   std::map<std::string, Layout> layouts)
    : container_(container),
      keys_(std::move(keys)),
      layouts_(std::move(layouts)),
      verified_(container.segments().size(), 0) {}

const std::pair<std::string, std::uint32_t>* ContainerDataMap::find(std::string_view key) const {
  for (const auto& k : keys_) {
    if (k.first == key) return &k;
  }
  return nullptr;
}

void ContainerDataMap::note(std::vector<std::string>& list, std::string_view key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(list.begin(), list.end(), key) == list.end()) list.emplace_back(key);
}

EtError ContainerDataMap::checked(std::uint32_t segment) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (verified_[segment] == 0) {
    Status s = check_segment_integrity(container_.bytes(), container_.header(), container_.segments()[segment]);
    verified_[segment] = s.ok() ? 1 : 2;
    if (!s.ok() && damage_.ok()) damage_ = std::move(s);
  }
  return verified_[segment] == 1 ? EtError::Ok : EtError::InvalidExternalData;
}

executorch::runtime::Result<const TensorLayout> ContainerDataMap::get_tensor_layout(std::string_view key) const {
  if (find(key) == nullptr) {
    note(missing_, key);
    return EtError::NotFound;
  }
  auto it = layouts_.find(std::string(key));
  if (it == layouts_.end()) {
    note(layouts_missing_, key);
    return EtError::NotImplemented;
  }
  const Layout& l = it->second;
  return TensorLayout::create(Span<const int32_t>(l.sizes.data(), l.sizes.size()),
                              Span<const uint8_t>(l.dim_order.data(), l.dim_order.size()),
                              static_cast<executorch::aten::ScalarType>(l.scalar_type));
}

executorch::runtime::Result<FreeableBuffer> ContainerDataMap::get_data(std::string_view key) const {
  const auto* k = find(key);
  if (k == nullptr) {
    note(missing_, key);
    return EtError::NotFound;
  }
  const EtError e = checked(k->second);
  if (e != EtError::Ok) return e;
  const Segment& s = container_.segments()[k->second];
  // Zero-copy: the bytes stay in the read-only mapping, which outlives every loaded method.
  return FreeableBuffer(container_.bytes().data + s.offset, static_cast<size_t>(s.size), nullptr);
}

EtError ContainerDataMap::load_data_into(std::string_view key, void* buffer, size_t size) const {
  const auto* k = find(key);
  if (k == nullptr) {
    note(missing_, key);
    return EtError::NotFound;
  }
  const Segment& s = container_.segments()[k->second];
  if (buffer == nullptr || size > s.size) return EtError::InvalidArgument;
  const EtError e = checked(k->second);
  if (e != EtError::Ok) return e;
  std::memcpy(buffer, container_.bytes().data + s.offset, size);
  return EtError::Ok;
}

executorch::runtime::Result<uint32_t> ContainerDataMap::get_num_keys() const {
  return static_cast<uint32_t>(keys_.size());
}

executorch::runtime::Result<const char*> ContainerDataMap::get_key(uint32_t index) const {
  if (index >= keys_.size()) return EtError::InvalidArgument;
  return keys_[index].first.c_str();
}

Status ContainerDataMap::damage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return damage_;
}

std::vector<std::string> ContainerDataMap::asked_missing() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return missing_;
}

std::vector<std::string> ContainerDataMap::layouts_missing() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return layouts_missing_;
}

}  // namespace et
}  // namespace fatpte
