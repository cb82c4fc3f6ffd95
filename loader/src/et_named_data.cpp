// The container's named data as an ExecuTorch NamedDataMap (et_named_data.hpp).
#include "et_named_data.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "manifest_view.hpp"

namespace fatpte {
namespace et {

namespace M = nfat::manifest;
using EtError = executorch::runtime::Error;
using executorch::runtime::FreeableBuffer;
using executorch::runtime::Span;
using executorch::runtime::TensorLayout;

Result<std::map<std::string, Layout>> recorded_layouts(const Container& container) {
  auto manifest = verified_manifest(container);
  if (!manifest.ok()) return manifest.error();
  return std::map<std::string, Layout>();
}

Result<std::vector<std::pair<std::string, std::uint32_t>>> entry_named_data(const Container& container,
                                                                           const Entry& entry) {
  std::vector<std::pair<std::string, std::uint32_t>> out;
  auto manifest = verified_manifest(container);
  if (!manifest.ok()) return manifest.error();
  const M::Entry* me = manifest_entry(manifest.value(), entry.name);
  if (me == nullptr || me->named_data() == nullptr) return out;
  const auto* named = manifest.value()->named_data();
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
