// What the C API's files share: the C++ objects behind its handles, and the one conversion of a
// Status into a fatpte_status and a fatpte_error (defined in capi/c_api.cpp).
#ifndef FATPTE_SRC_CAPI_C_HANDLES_HPP_
#define FATPTE_SRC_CAPI_C_HANDLES_HPP_

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fatpte/container.hpp"
#include "fatpte/device.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/fatpte.h"
#include "fatpte/select.hpp"
#include "fatpte/self_test.hpp"
#include "fatpte/signature.h"
#include "fatpte/signature.hpp"
#include "fatpte/status.hpp"
#include "fatpte/tensor.hpp"
#include "field/fallback.hpp"

struct fatpte_container {
  std::unique_ptr<fatpte::Container> impl;
  // Named data, read from the manifest on first use.
  bool named_read = false;
  std::vector<std::pair<std::string, fatpte::Bytes>> named;
};

struct fatpte_device {
  fatpte::DeviceProfile profile;
};

struct fatpte_selection {
  fatpte::Selection selection;
  fatpte::DeviceProfile device;
  // Where the probe of this machine (no profile given) looked for each vendor runtime: handed to
  // the load of this selection (fatpte_load_with), which then does not search again.
  std::vector<fatpte::VendorRuntimeSearch> vendor_runtimes;
  // The explanation is text for people, built on first request: formatting a line per entry
  // cost about a fifth of a whole open + select, which a runtime that only loads never reads.
  // The entries are kept so that it can be built after the container is closed.
  std::vector<fatpte::Entry> entries;
  mutable std::once_flag explained;
  mutable std::string explanation;
};

struct fatpte_loaded {
  fatpte::Dispatch dispatch;
  std::string explanation;
  std::vector<fatpte::Tensor> outputs;  // of the last execute
  // The calls, falling back after load (field/fallback.hpp) when the load made a selection.
  std::unique_ptr<fatpte::Serving> serving;
  const fatpte::Container* container = nullptr;
};

struct fatpte_load_options {
  fatpte::LoadOptions options;
};

struct fatpte_load_report {
  std::string selection;
  std::string dispatch;
  std::string key_id;
  std::vector<std::pair<std::uint32_t, std::string>> attempts;
  std::string vendor_runtimes = "[]";  // a JSON list (fatpte::vendor_runtimes_json)
};

struct fatpte_self_test_report {
  fatpte::SelfTestReport report;
  std::string summary;
  std::string json;
};

struct fatpte_trust {
  std::shared_ptr<const fatpte::TrustedKeys> keys;
};

struct fatpte_signature_report {
  fatpte::SignatureCheck check;
};

namespace fatpte {
namespace capi {

const Container* container_of(const fatpte_container* c) noexcept;
fatpte_status to_status(const Status& s, fatpte_error* error) noexcept;
// The work the C reader's record of fetched ranges has done (RangeSet::steps, capi/reader.cpp):
// what a test counts to show fetching n ranges costs O(n log n).
std::uint64_t reader_steps(const fatpte_reader* reader) noexcept;
// A loaded handle's calls fall back after load (capi/field_c_api.cpp): set up once it loaded.
void serve(const Container& c, const std::optional<DeviceProfile>& device, const LoadOptions& options,
           fatpte_loaded& loaded);
// One call through the handle's Serving; its explanation kept up to date after a fallback.
Result<std::vector<Tensor>> serve_call(fatpte_loaded& loaded, const std::vector<Tensor>& inputs);

}  // namespace capi
}  // namespace fatpte

#endif  // FATPTE_SRC_CAPI_C_HANDLES_HPP_
