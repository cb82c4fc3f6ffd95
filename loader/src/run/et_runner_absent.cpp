// The ExecuTorch runner of a libfatpte built without the ExecuTorch SDK (FATPTE_EXECUTORCH=OFF):
// ExecuTorch entries are skipped with that reason, so a container that also holds other
// payloads still loads them, and one that does not fails with every reason listed.
#include "run/et_runner.hpp"

namespace fatpte {
namespace et {

bool available() noexcept { return false; }

void set_log_forwarding(bool) {}

void load_operator_libraries(const LoadOptions&, const std::vector<std::string>&, std::vector<std::string>&) {}

Result<bool> listed_backends_ready(const Container&, const Entry&, const LoadOptions&, const std::vector<std::string>&,
                                   Attempt&) {
  return true;
}

ProgramMethod* program_method(Loaded&) { return nullptr; }

Bytes program_bytes(const Loaded&) { return Bytes{}; }

bool backend_registered(const std::string&) { return false; }

std::set<std::string> registry_backends(const LoadOptions&, const std::vector<std::string>&) { return {}; }

Status load_entry(const Container& c, const Entry& e, const LoadOptions&, const std::vector<std::string>&,
                  Attempt& attempt, std::unique_ptr<Loaded>&) {
  FATPTE_RETURN_IF_ERROR(check_payload_integrity(c.bytes(), c.header(), e));
  attempt.outcome =
      "an ExecuTorch program, and this libfatpte was built without the ExecuTorch runner (FATPTE_EXECUTORCH=OFF)";
  return Status();
}

}  // namespace et
}  // namespace fatpte
