// The C API of what a load does in the field (issue 38): isolated qualification's options, and
// fallback after load (field/fallback.hpp) with its events.
#include <string>
#include <utility>
#include <vector>

#include "capi/c_handles.hpp"
#include "fatpte/fatpte.h"

namespace {

// Runs `body` on `o`'s options; INVALID_ARGUMENT for NULL, IO_ERROR when memory runs out.
template <typename Body>
fatpte_status with_options(fatpte_load_options* o, Body&& body) noexcept {
  if (o == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  try {
    return body(o->options);
  } catch (...) {
    return FATPTE_E_IO_ERROR;
  }
}

}  // namespace

namespace fatpte {
namespace capi {

void serve(const Container& c, const std::optional<DeviceProfile>& device, const LoadOptions& options,
           fatpte_loaded& loaded) {
  loaded.container = &c;
  loaded.serving = std::make_unique<Serving>(c, device, options, loaded.dispatch);
}

Result<std::vector<Tensor>> serve_call(fatpte_loaded& loaded, const std::vector<Tensor>& inputs) {
  if (!loaded.serving) return loaded.dispatch.loaded->run(inputs);
  const std::size_t before = loaded.serving->events().size();
  auto r = loaded.serving->run(inputs);
  if (loaded.serving->events().size() != before) loaded.explanation = explain_dispatch(*loaded.container, loaded.dispatch);
  return r;
}

}  // namespace capi
}  // namespace fatpte

fatpte_status fatpte_load_options_set_isolate(fatpte_load_options* o, int isolate, uint32_t timeout_ms) noexcept {
  return with_options(o, [&](fatpte::LoadOptions& options) {
    options.isolate = isolate != 0;
    options.isolate_timeout_ms = timeout_ms != 0 ? timeout_ms : fatpte::LoadOptions{}.isolate_timeout_ms;
    return FATPTE_OK;
  });
}

fatpte_status fatpte_load_options_set_qualifier(fatpte_load_options* o, const char* program) noexcept {
  return with_options(o, [&](fatpte::LoadOptions& options) {
    options.qualifier = program != nullptr ? program : "";
    return FATPTE_OK;
  });
}

fatpte_status fatpte_load_options_add_isolate_launcher(fatpte_load_options* o, const char* word) noexcept {
  return with_options(o, [&](fatpte::LoadOptions& options) {
    if (word == nullptr) return FATPTE_E_INVALID_ARGUMENT;
    options.isolate_launcher.emplace_back(word);
    return FATPTE_OK;
  });
}

fatpte_status fatpte_load_options_pass_environment(fatpte_load_options* o, const char* name) noexcept {
  return with_options(o, [&](fatpte::LoadOptions& options) {
    if (name == nullptr || name[0] == '\0' || std::string(name).find('=') != std::string::npos) {
      return FATPTE_E_INVALID_ARGUMENT;
    }
    options.isolate_environment.emplace_back(name);
    return FATPTE_OK;
  });
}

fatpte_status fatpte_load_options_set_isolate_inputs(fatpte_load_options* o, const fatpte_tensor* inputs,
                                                     size_t input_count) noexcept {
  return with_options(o, [&](fatpte::LoadOptions& options) {
    if (inputs == nullptr && input_count != 0) return FATPTE_E_INVALID_ARGUMENT;
    std::vector<fatpte::Tensor> copied(input_count);
    for (size_t i = 0; i < input_count; ++i) {
      const fatpte_tensor& t = inputs[i];
      if (!fatpte::is_dtype(t.dtype) || (t.rank != 0 && t.shape == nullptr) || (t.data == nullptr && t.nbytes != 0)) {
        return FATPTE_E_INVALID_ARGUMENT;
      }
      copied[i].dtype = static_cast<fatpte::DType>(t.dtype);
      copied[i].shape.assign(t.shape, t.shape + t.rank);
      const std::uint64_t numel = copied[i].numel();
      const std::uint64_t element = fatpte::element_size(copied[i].dtype);
      if (numel == fatpte::kNoCount || numel > fatpte::kNoCount / element || numel * element != t.nbytes) {
        return FATPTE_E_INVALID_ARGUMENT;
      }
      const auto* bytes = static_cast<const std::uint8_t*>(t.data);
      copied[i].data.assign(bytes, bytes + t.nbytes);
    }
    options.isolate_inputs = std::move(copied);
    return FATPTE_OK;
  });
}

fatpte_status fatpte_load_options_set_check_finite(fatpte_load_options* o, int check_finite) noexcept {
  return with_options(o, [&](fatpte::LoadOptions& options) {
    options.check_finite = check_finite != 0;
    return FATPTE_OK;
  });
}

fatpte_status fatpte_load_options_set_call_deadline(fatpte_load_options* o, uint32_t deadline_ms) noexcept {
  return with_options(o, [&](fatpte::LoadOptions& options) {
    options.call_deadline_ms = deadline_ms;
    return FATPTE_OK;
  });
}

fatpte_status fatpte_loaded_fallback_count(const fatpte_loaded* l, size_t* count) noexcept {
  if (l == nullptr || count == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  *count = l->serving ? l->serving->events().size() : 0;
  return FATPTE_OK;
}

fatpte_status fatpte_loaded_fallback(const fatpte_loaded* l, size_t index, fatpte_fallback_event* out) noexcept {
  if (l == nullptr || out == nullptr) return FATPTE_E_INVALID_ARGUMENT;
  if (!l->serving || index >= l->serving->events().size()) return FATPTE_E_ENTRY_NOT_FOUND;
  const fatpte::FallbackEvent& e = l->serving->events()[index];
  out->call = e.call;
  out->from_entry = e.from_entry;
  out->has_to_entry = e.to_entry ? 1 : 0;
  out->to_entry = e.to_entry.value_or(0);
  out->reason = e.reason.c_str();
  out->detail = e.detail.c_str();
  return FATPTE_OK;
}
