// dispatch.hpp: loading the chosen entry's payload into its backend kernel library (backend.h).
//
// Libraries are looked up by file name, libfatpte_backend_<backend_id>.so (.dylib on macOS), in
// the directories the caller gives and then in FATPTE_BACKEND_PATH (':'-separated), never at a
// path from the container. The eligible entries are tried in rank order; an entry whose library
// is missing, cannot be opened, reports an ABI version outside the entry's manifest backend_abi
// range (specs/nfat-manifest.md 4.2), speaks another ABI version than this loader, names another
// backend id, is not available on this machine, or fails to load its payload is skipped with the
// reason recorded, and the next one is tried. A refused library is never called.
#ifndef FATPTE_DISPATCH_HPP_
#define FATPTE_DISPATCH_HPP_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fatpte/backend.h"
#include "fatpte/fatpte.hpp"
#include "fatpte/select.hpp"

namespace fatpte {

struct Attempt {
  std::uint32_t index = 0;  // entry tried
  std::string library;      // path found, or the file name looked for
  std::string outcome;      // "loaded", or why the entry was skipped
};

// A payload loaded into its backend; unloads on destruction. Must not outlive the Container.
class LoadedBackend {
 public:
  ~LoadedBackend();
  LoadedBackend(const LoadedBackend&) = delete;
  LoadedBackend& operator=(const LoadedBackend&) = delete;
  std::uint32_t index() const noexcept { return index_; }
  // Run once; `output` receives what the backend writes.
  Status run(const std::vector<float>& input, std::vector<float>& output) const;

 private:
  friend struct DispatchAccess;
  LoadedBackend() = default;
  std::uint32_t index_ = 0;
  void* library_ = nullptr;
  const fatpte_backend* table_ = nullptr;
  void* model_ = nullptr;
  std::shared_ptr<void> named_data_;  // the lookup context the backend may keep using
};

struct Dispatch {
  std::unique_ptr<LoadedBackend> backend;
  std::vector<Attempt> attempts;  // in the order tried, the last one "loaded"
};

// Every named-data key of the container and the bytes of its segment (zero-copy, in the
// mapping), read from the manifest after the flatbuffers verifier passed; empty without one.
Result<std::map<std::string, Bytes>> named_data_map(const Container& container);

// The directories searched: `configured` first, then each entry of FATPTE_BACKEND_PATH.
std::vector<std::string> backend_search_path(const std::vector<std::string>& configured);
// The library file name of a backend id on this platform.
std::string backend_library_name(const std::string& backend_id);

// Load the best eligible entry of `selection` that its backend accepts. When none can be loaded:
// NO_SPECIALIZATION_FITS, the message listing every attempt and why it failed.
Result<Dispatch> load_backend(const Container& container, const Selection& selection, const DeviceProfile& device,
                              const std::vector<std::string>& configured_dirs);
// The attempts as lines for an explanation: `dispatch: NAME [ID]: OUTCOME (LIBRARY)`.
std::string explain_dispatch(const Container& container, const std::vector<Attempt>& attempts);

}  // namespace fatpte

#endif  // FATPTE_DISPATCH_HPP_
