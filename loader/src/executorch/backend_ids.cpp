// The ExecuTorch backend ids fatpte knows by name (executorch/backend_ids.hpp).
#include "executorch/backend_ids.hpp"

#include <algorithm>

#include "container/manifest_view.hpp"
#include "executorch/program.hpp"
#include "fatpte/container.hpp"

namespace fatpte {
namespace et {

std::string delegate_backend_id(const std::string& backend_id) {
  // fatpte/ops/program_entry.py BACKEND_WORDS: the backends executorch 1.5.1 ships.
  static const char* const kWords[][2] = {
      {"xnnpack", "XnnpackBackend"},   {"native", "NativeBackend"},     {"coreml", "CoreMLBackend"},
      {"coreai", "CoreAIBackend"},     {"mps", "MPSBackend"},           {"metal", "MetalBackend"},
      {"vulkan", "VulkanBackend"},     {"qnn", "QnnBackend"},           {"openvino", "OpenvinoBackend"},
      {"cuda", "CudaBackend"},         {"neuropilot", "NeuropilotBackend"}, {"enn", "EnnBackend"},
      {"ethosu", "EthosUBackend"},     {"tosa", "TOSABackend"},         {"vgf", "VgfBackend"},
      {"neutron", "NeutronBackend"},   {"mlx", "MLXBackend"},
  };
  for (const auto& w : kWords) {
    if (backend_id == w[0]) return w[1];
  }
  return backend_id;
}

std::vector<std::string> fat_entry_backends(Bytes nfat) {
  std::vector<std::string> out;
  const auto add = [&out](const std::string& id) {
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  };
  auto opened = Container::open_memory(nfat.data, static_cast<std::size_t>(nfat.size));
  if (!opened.ok()) return out;
  const Container& c = *opened.value();
  auto manifest = manifest_view(c);
  if (!manifest.ok()) return out;
  for (const Entry& e : c.entries()) {
    const Bytes payload = c.payload(e.index).value();
    if (payload_is_program(c, e)) {
      auto program = read_program(payload, e.offset, "entries[" + std::to_string(e.index) + "].payload");
      if (!program.ok()) continue;
      for (const MethodInfo& m : program.value().methods) {
        for (const std::string& id : m.backend_ids) add(id);
      }
      continue;
    }
    const nfat::manifest::Entry* me = manifest.value().entry(e.index);
    if (me != nullptr && me->executorch_backends() != nullptr && me->executorch_backends()->size() == 1) {
      add(me->executorch_backends()->Get(0)->str());
    } else {
      add(delegate_backend_id(e.backend_id));
    }
  }
  return out;
}

}  // namespace et
}  // namespace fatpte
