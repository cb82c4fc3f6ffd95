// An entry's signature adapter as its manifest states it (manifest/adapter.hpp).
#include "manifest/adapter.hpp"

#include <string>

namespace fatpte {
namespace {

namespace M = nfat::manifest;

std::vector<std::optional<EdgeSlot>> slots(const ::flatbuffers::Vector<::flatbuffers::Offset<M::TensorSpec>>* specs) {
  std::vector<std::optional<EdgeSlot>> out;
  if (specs == nullptr) return out;
  for (const M::TensorSpec* t : *specs) {
    EdgeSlot slot;
    if (t->program_dtype() != nullptr && dtype_from_name(t->dtype()->str(), &slot.call) &&
        dtype_from_name(t->program_dtype()->str(), &slot.program)) {
      out.push_back(slot);
    } else {
      out.push_back(std::nullopt);
    }
  }
  return out;
}

bool any(const std::vector<std::optional<EdgeSlot>>& v) {
  for (const auto& s : v) {
    if (s) return true;
  }
  return false;
}

void describe(const std::vector<std::optional<EdgeSlot>>& v, const char* part, std::string& out) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i]) continue;
    if (!out.empty()) out += ", ";
    out += std::string(part) + "[" + std::to_string(i) + "] " + dtype_name(v[i]->call) + " <- " +
           dtype_name(v[i]->program);
  }
}

}  // namespace

bool EdgeAdapter::empty() const noexcept { return !any(inputs) && !any(outputs); }

std::string EdgeAdapter::text() const {
  std::string out;
  describe(inputs, "inputs", out);
  describe(outputs, "outputs", out);
  return out;
}

EdgeAdapter edge_adapter(const M::Entry* me, const std::string& method) {
  EdgeAdapter out;
  if (me == nullptr || me->signature() == nullptr || me->signature()->methods() == nullptr) return out;
  for (const M::Method* m : *me->signature()->methods()) {
    if (m->name()->str() != method) continue;
    out.inputs = slots(m->inputs());
    out.outputs = slots(m->outputs());
    if (out.empty()) return EdgeAdapter{};
    return out;
  }
  return out;
}

}  // namespace fatpte
