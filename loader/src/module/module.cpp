// A container as an ExecuTorch Module (fatpte/module.hpp).
#include "fatpte/module.hpp"

#include <cmath>
#include <cstring>
#include <utility>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/runtime/executor/method.h>

#include "capi/c_handles.hpp"
#include "executorch/method.hpp"
#include "field/fallback.hpp"
#include "fatpte/select.hpp"
#include "run/et_runner.hpp"

namespace fatpte {
namespace {

namespace R = ::executorch::runtime;

// What a load did, without the loaded method (for a caller's report).
void copy_report(const Dispatch& from, Dispatch& to) {
  to.attempts = from.attempts;
  to.notes = from.notes;
  to.selection = from.selection;
  to.signature_key_id = from.signature_key_id;
}

// "output 0 holds NaN at element 3" for the first non-finite element of a floating tensor output; "".
template <typename T>
std::string first_non_finite(const executorch::aten::Tensor& t, std::size_t output) {
  const T* data = t.const_data_ptr<T>();
  for (ssize_t i = 0; i < t.numel(); ++i) {
    const float v = static_cast<float>(data[i]);
    if (!std::isfinite(v)) {
      return "output " + std::to_string(output) + " holds " + (std::isnan(v) ? "NaN" : "an infinity") +
             " at element " + std::to_string(i);
    }
  }
  return "";
}

std::string non_finite_values(const std::vector<R::EValue>& outputs) {
  using executorch::aten::ScalarType;
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    if (!outputs[o].isTensor()) continue;
    const executorch::aten::Tensor& t = outputs[o].toTensor();
    std::string why;
    if (t.scalar_type() == ScalarType::Float) why = first_non_finite<float>(t, o);
    if (t.scalar_type() == ScalarType::Double) why = first_non_finite<double>(t, o);
    if (t.scalar_type() == ScalarType::Half) why = first_non_finite<executorch::aten::Half>(t, o);
    if (t.scalar_type() == ScalarType::BFloat16) why = first_non_finite<executorch::aten::BFloat16>(t, o);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

ContainerModule::ContainerModule(detail::ModuleState state, std::unique_ptr<R::DataLoader> program)
    : detail::ModuleState(std::move(state)), ::executorch::extension::Module(std::move(program)) {}

ContainerModule::~ContainerModule() = default;

std::string ContainerModule::explain() const {
  std::string out;
  if (dispatch->selection) out = fatpte::explain(*container, *dispatch->selection) + "\n";
  return out + explain_dispatch(*container, *dispatch);
}

R::Error ContainerModule::load(const R::Program::Verification verification) {
  // The entry is loaded already (load_module); this loads ExecuTorch's own view of the same bytes,
  // which the queries of the base class read.
  return ::executorch::extension::Module::load(verification);
}

Loaded* ContainerModule::method_for(const std::string& name) {
  if (name == dispatch->loaded->method()) return dispatch->loaded.get();
  auto found = more.find(name);
  if (found != more.end()) return found->second.get();
  // Another method of the same entry, never of another: no selection, no fallback.
  LoadOptions o = options.load;
  o.method = name;
  o.only_entry = dispatch->loaded->index();
  o.fallback = false;
  auto loaded = fatpte::load(*container, *dispatch->selection, options.choice.device.value_or(DeviceProfile{}), o);
  if (!loaded.ok()) return nullptr;
  return (more[name] = std::move(loaded.value().loaded)).get();
}

R::Result<std::vector<R::EValue>> ContainerModule::execute(const std::string& method_name,
                                                           const std::vector<R::EValue>& input_values) {
  Loaded* loaded = method_for(method_name);
  if (loaded == nullptr) return R::Error::InvalidArgument;
  et::ProgramMethod* method = et::program_method(*loaded);
  if (method == nullptr) return R::Error::InvalidState;
  // Only the first method's calls fall back: another method is the same entry's (method_for).
  if (loaded != dispatch->loaded.get() || !options.load.fallback || !dispatch->selection) {
    return method->execute_values(input_values);
  }
  ++calls;
  const R::Error set = method->set_values(input_values);
  if (set != R::Error::Ok) return set;  // the caller's inputs: no entry would take them
  auto outputs = method->execute_set();
  if (!outputs.ok()) {
    return fall_back("execute_error", "ExecuTorch's execute failed (error " +
                                          std::to_string(static_cast<int>(outputs.error())) + ")", input_values);
  }
  const std::string why = options.load.check_finite ? non_finite_values(outputs.get()) : "";
  return why.empty() ? std::move(outputs) : fall_back("non_finite_output", why, input_values);
}

R::Result<std::vector<R::EValue>> ContainerModule::fall_back(const std::string& reason, const std::string& detail,
                                                             const std::vector<R::EValue>& inputs) {
  FallbackEvent event;
  event.call = calls - 1;
  event.from_entry = dispatch->loaded->index();
  event.reason = reason;
  event.detail = detail;
  for (const Attempt& a : dispatch->attempts) tried.insert(a.index);
  tried.insert(event.from_entry);
  std::unique_ptr<Loaded> failed = std::move(dispatch->loaded);
  more.clear();  // the failed entry's other methods
  const Status next = load_next(*container, *dispatch->selection, options.choice.device, options.load, tried, *dispatch);
  if (dispatch->loaded) event.to_entry = dispatch->loaded->index();
  fallbacks.push_back(event);
  record_fallback(*container, options.choice.device, options.load, event, dispatch->notes);
  if (!next.ok() || !dispatch->loaded) {
    // Nothing else can serve: the failed entry stays (its next call may fail again).
    if (!dispatch->loaded) dispatch->loaded = std::move(failed);
    return R::Error::Internal;
  }
  failed.reset();
  et::ProgramMethod* method = et::program_method(*dispatch->loaded);
  if (method == nullptr) return R::Error::InvalidState;
  auto retried = method->execute_values(inputs);
  if (retried.ok() && options.load.check_finite && !non_finite_values(retried.get()).empty()) {
    return R::Error::Internal;
  }
  return retried;
}

Result<std::unique_ptr<ContainerModule>> load_module(std::shared_ptr<const Container> container,
                                                     const ModuleOptions& options, Dispatch* report) {
  if (!container) return fail(Error::INVALID_ARGUMENT, kNoOffset, "", "no container");
  set_executorch_log(options.executorch_log);
  auto dispatch = std::make_unique<Dispatch>();
  const Status loaded = load(*container, options.choice, options.load, *dispatch);
  if (report != nullptr) copy_report(*dispatch, *report);
  if (!loaded.ok()) return loaded;
  const Bytes program = et::program_bytes(*dispatch->loaded);
  if (program.data == nullptr) {
    const Entry& e = container->entries()[dispatch->loaded->index()];
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "", "entry %s is not an ExecuTorch program (it runs through "
                "fatpte's example backend ABI): a Module runs programs; load it with fatpte::load",
                entry_label(e).c_str());
  }
  auto loader = std::make_unique<::executorch::extension::BufferDataLoader>(program.data,
                                                                           static_cast<std::size_t>(program.size));
  detail::ModuleState state{std::move(container), std::move(dispatch), options, {}, {}, {}, 0};
  return std::make_unique<ContainerModule>(std::move(state), std::move(loader));
}

Result<std::unique_ptr<ContainerModule>> load_module(const std::string& path, const ModuleOptions& options,
                                                     Dispatch* report) {
  auto opened = Container::open_file(path);
  if (!opened.ok()) return opened.error();
  return load_module(std::shared_ptr<const Container>(std::move(opened).value()), options, report);
}

Result<std::unique_ptr<ContainerModule>> load_module(const void* data, std::size_t size, const ModuleOptions& options,
                                                     Dispatch* report) {
  auto opened = Container::open_memory(data, size);
  if (!opened.ok()) return opened.error();
  return load_module(std::shared_ptr<const Container>(std::move(opened).value()), options, report);
}

std::shared_ptr<const Container> container_of(const fatpte_container* handle) {
  const Container* c = capi::container_of(handle);
  if (c == nullptr) return nullptr;
  return std::shared_ptr<const Container>(c, [](const Container*) {});  // borrowed: the handle owns it
}

}  // namespace fatpte
