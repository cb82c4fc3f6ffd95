// module.hpp: a container as an ExecuTorch Module. An application written against ExecuTorch's
// `executorch::extension::Module` changes one line to run the entry of a fat container chosen for
// its device:
//
//     auto module = fatpte::load_module("model.nfat").value();   // was: Module module("model.pte")
//     auto outputs = module->forward(inputs);                       // unchanged
//
// load_module opens the container (a path, borrowed memory, or an open container such as the C
// reader's), applies the library's load policy (signature when required, selection for the
// device, fallback to the next entry by index: fatpte/dispatch.hpp) and returns the chosen
// entry's program as a Module subclass: `forward`, `execute`, `method_meta`, `method_names` work
// as ExecuTorch's do, and the methods run with the container's named data (its NamedDataMap). A
// method other than the first one loaded comes from the same entry, never from another.
//
// Needs the ExecuTorch SDK (the build's FATPTE_EXECUTORCH, the package's FATPTE_WITH_EXECUTORCH).
// ExecuTorch's own log lines stay quiet unless ModuleOptions::executorch_log asks for them.
#ifndef FATPTE_MODULE_HPP_
#define FATPTE_MODULE_HPP_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include <executorch/extension/module/module.h>

#include "fatpte/container.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/field.hpp"
#include "fatpte/result.hpp"

struct fatpte_container;

namespace fatpte {

struct ModuleOptions {
  Choice choice;                // the device (absent: this machine) and the prefer and exclude words
  LoadOptions load;             // libraries, signature, fallback, limits; `load.method` is loaded first
  bool executorch_log = false;  // pass ExecuTorch's own log lines on to its handler (stderr)
};

namespace detail {
// What a ContainerModule keeps, a base of its own so that it is built before ExecuTorch's Module
// (which reads the program's bytes it holds) and destroyed after it.
struct ModuleState {
  std::shared_ptr<const Container> container;
  std::unique_ptr<Dispatch> dispatch;
  ModuleOptions options;
  std::map<std::string, std::unique_ptr<Loaded>> more;  // methods loaded after the first
  // Fallback after load (issue 38): the events, the entries tried, the calls of the first method.
  std::vector<FallbackEvent> fallbacks;
  std::set<std::uint32_t> tried;
  std::uint64_t calls = 0;
};
}  // namespace detail

// The Module of the entry a container's load chose. Its base is ExecuTorch's own Module over the
// chosen program's bytes (zero-copy), so every query works as ExecuTorch's; `execute` (and so
// `forward`) runs fatpte's loaded method, which has the container's named data.
class ContainerModule final : private detail::ModuleState, public ::executorch::extension::Module {
 public:
  ContainerModule(detail::ModuleState state, std::unique_ptr<::executorch::runtime::DataLoader> program);
  ~ContainerModule() override;
  // The entry that runs, what the load did (selection, every attempt, the signature's key), and
  // that as text, as fatpte-run --explain prints it.
  const Entry& entry() const noexcept { return container->entries()[dispatch->loaded->index()]; }
  const Dispatch& report() const noexcept { return *dispatch; }
  std::string explain() const;
  // Each fallback after load of the first method's calls: with LoadOptions::fallback (the
  // default), a call the entry fails (its execute; with LoadOptions::check_finite, a NaN or an
  // infinity in a floating output) loads the next eligible entry from its own program (its state
  // initialised) and retries the call once; entry() then names it, while the queries of
  // ExecuTorch's Module (method_meta, ...) still read the first entry's program, whose signature
  // every entry shares. LoadOptions::call_deadline_ms is not applied here (fatpte_execute's).
  const std::vector<FallbackEvent>& fallback_events() const noexcept { return fallbacks; }

  ::executorch::runtime::Error load(
      const ::executorch::runtime::Program::Verification verification =
          ::executorch::runtime::Program::Verification::Minimal) override;
  ::executorch::runtime::Result<std::vector<::executorch::runtime::EValue>> execute(
      const std::string& method_name, const std::vector<::executorch::runtime::EValue>& input_values) override;
  using ::executorch::extension::Module::execute;

 private:
  Loaded* method_for(const std::string& name);
  ::executorch::runtime::Result<std::vector<::executorch::runtime::EValue>> fall_back(
      const std::string& reason, const std::string& detail, const std::vector<::executorch::runtime::EValue>& inputs);
};

// The Module of the entry chosen from a container: at a path (mapped), in memory (borrowed: it must
// outlive the Module, unchanged), or already open (shared: the C reader's container, through
// container_of). On failure the Status says why with fatpte's code, offset and field (every entry
// tried, for E0901); `report`, when given, receives what the load did in every case.
Result<std::unique_ptr<ContainerModule>> load_module(const std::string& path, const ModuleOptions& options = {},
                                                     Dispatch* report = nullptr);
Result<std::unique_ptr<ContainerModule>> load_module(const void* data, std::size_t size,
                                                     const ModuleOptions& options = {}, Dispatch* report = nullptr);
Result<std::unique_ptr<ContainerModule>> load_module(std::shared_ptr<const Container> container,
                                                     const ModuleOptions& options = {}, Dispatch* report = nullptr);

// The C++ container behind a C API handle (fatpte.h; a fatpte_reader's included), borrowed: the
// handle must outlive what is made of it. nullptr for NULL.
std::shared_ptr<const Container> container_of(const fatpte_container* handle);

}  // namespace fatpte

#endif  // FATPTE_MODULE_HPP_
