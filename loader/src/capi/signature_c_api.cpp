// The C API of signed containers (fatpte/signature.h) over fatpte/signature.hpp: noexcept entry
// points that catch everything and report a Status through the C API's one conversion.
#include <memory>
#include <new>
#include <string>

#include "capi/c_handles.hpp"
#include "fatpte/signature.h"
#include "fatpte/signature.hpp"

namespace {

using fatpte::Error;
using fatpte::Status;
using fatpte::capi::to_status;

template <typename Body>
fatpte_status guarded(fatpte_error* error, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return to_status(Status(Error::IO_ERROR, fatpte::kNoOffset, "", "out of memory"), error);
  } catch (...) {
    return to_status(Status(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", "unexpected failure"), error);
  }
}

Status bad_argument(const char* what) { return Status(Error::INVALID_ARGUMENT, fatpte::kNoOffset, "", what); }

}  // namespace

extern "C" {

int fatpte_signatures_supported(void) noexcept { return fatpte::signatures_supported() ? 1 : 0; }

fatpte_status fatpte_trust_load(const char* const* pem_paths, size_t count, fatpte_trust** out,
                                fatpte_error* error) noexcept {
  return guarded(error, [&]() {
    if (out == nullptr || (count != 0 && pem_paths == nullptr)) return to_status(bad_argument("NULL argument"), error);
    *out = nullptr;
    std::vector<std::string> paths;
    for (size_t i = 0; i < count; ++i) {
      if (pem_paths[i] == nullptr) return to_status(bad_argument("NULL key path"), error);
      paths.emplace_back(pem_paths[i]);
    }
    auto keys = fatpte::TrustedKeys::load(paths);
    if (!keys.ok()) return to_status(keys.error(), error);
    *out = new fatpte_trust{std::move(keys).value()};
    return to_status(Status(), error);
  });
}

void fatpte_trust_free(fatpte_trust* trust) noexcept { delete trust; }

size_t fatpte_trust_count(const fatpte_trust* trust) noexcept {
  return trust == nullptr || trust->keys == nullptr ? 0 : trust->keys->keys().size();
}

const char* fatpte_trust_key_id(const fatpte_trust* trust, size_t index) noexcept {
  if (index >= fatpte_trust_count(trust)) return nullptr;
  return trust->keys->keys()[index].key_id.c_str();
}

fatpte_status fatpte_verify_signature(const fatpte_container* container, const fatpte_trust* trust,
                                      const void* detached, size_t detached_size, fatpte_signature_report** out,
                                      fatpte_error* error) noexcept {
  return guarded(error, [&]() {
    const fatpte::Container* c = fatpte::capi::container_of(container);
    if (c == nullptr || trust == nullptr || out == nullptr || (detached == nullptr && detached_size != 0)) {
      return to_status(bad_argument("NULL argument"), error);
    }
    *out = nullptr;
    const fatpte::Bytes sig{static_cast<const std::uint8_t*>(detached), detached_size};
    auto check = fatpte::check_signature(*c, *trust->keys, sig);
    if (!check.ok()) return to_status(check.error(), error);
    auto* report = new fatpte_signature_report{std::move(check).value()};
    *out = report;
    return to_status(report->check.first_error, error);
  });
}

fatpte_status fatpte_signature_verify_entry(const fatpte_container* container, fatpte_signature_report* report,
                                            uint32_t index, fatpte_error* error) noexcept {
  return guarded(error, [&]() {
    const fatpte::Container* c = fatpte::capi::container_of(container);
    if (c == nullptr || report == nullptr) return to_status(bad_argument("NULL argument"), error);
    return to_status(fatpte::check_entry_bytes(*c, report->check, index), error);
  });
}

fatpte_status fatpte_signature_verify_all(const fatpte_container* container, fatpte_signature_report* report,
                                          fatpte_error* error) noexcept {
  return guarded(error, [&]() {
    const fatpte::Container* c = fatpte::capi::container_of(container);
    if (c == nullptr || report == nullptr) return to_status(bad_argument("NULL argument"), error);
    return to_status(fatpte::check_all_bytes(*c, report->check), error);
  });
}

fatpte_status fatpte_signature_entry_state(const fatpte_signature_report* report, uint32_t index,
                                           fatpte_entry_signature* out) noexcept {
  if (report == nullptr || out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  if (index >= report->check.states.size()) return FATPTE_E_ENTRY_NOT_FOUND;
  *out = static_cast<fatpte_entry_signature>(report->check.states[index]);
  return FATPTE_OK;
}

const char* fatpte_signature_key_id(const fatpte_signature_report* report) noexcept {
  return report == nullptr ? "" : report->check.key_id.c_str();
}

fatpte_status fatpte_signature_thinned_count(const fatpte_signature_report* report, uint32_t* out) noexcept {
  if (report == nullptr || out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  *out = static_cast<uint32_t>(report->check.thinned.size());
  return FATPTE_OK;
}

fatpte_status fatpte_signature_thinned_name(const fatpte_signature_report* report, uint32_t index,
                                            const char** out) noexcept {
  if (report == nullptr || out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  if (index >= report->check.thinned.size()) return FATPTE_E_ENTRY_NOT_FOUND;
  *out = report->check.thinned[index].c_str();
  return FATPTE_OK;
}

fatpte_status fatpte_signature_golden_unsigned(const fatpte_signature_report* report, uint32_t index,
                                               int* out) noexcept {
  if (report == nullptr || out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  if (index >= report->check.golden_unsigned.size()) return FATPTE_E_ENTRY_NOT_FOUND;
  *out = report->check.golden_unsigned[index] ? 1 : 0;
  return FATPTE_OK;
}

void fatpte_signature_report_free(fatpte_signature_report* report) noexcept { delete report; }

fatpte_status fatpte_load_options_require_signature(fatpte_load_options* options, const fatpte_trust* trust) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (options == nullptr) return FATPTE_E_INVALID_ARGUMENT;
    options->options.trusted_keys = trust != nullptr ? trust->keys : nullptr;
    return FATPTE_OK;
  });
}

fatpte_status fatpte_load_options_set_signature(fatpte_load_options* options, const void* bundle, size_t size) noexcept {
  return guarded(nullptr, [&]() -> fatpte_status {
    if (options == nullptr || (bundle == nullptr && size != 0)) return FATPTE_E_INVALID_ARGUMENT;
    const auto* bytes = static_cast<const std::uint8_t*>(bundle);
    options->options.detached_signature.assign(bytes, bytes + size);
    return FATPTE_OK;
  });
}

fatpte_status fatpte_load_options_refuse_downgrade(fatpte_load_options* options, int refuse) noexcept {
  if (options == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  options->options.refuse_downgrade = refuse != 0;
  return FATPTE_OK;
}

fatpte_status fatpte_signature_check_downgrade(const fatpte_container* container, const fatpte_signature_report* report,
                                               const fatpte_device* device, fatpte_error* error) noexcept {
  return guarded(error, [&]() {
    const fatpte::Container* c = fatpte::capi::container_of(container);
    if (c == nullptr || report == nullptr) return to_status(bad_argument("NULL argument"), error);
    const fatpte::DeviceProfile profile = device != nullptr ? device->profile : fatpte::probe_host();
    return to_status(fatpte::check_downgrade(*c, report->check, profile), error);
  });
}

}  // extern "C"
