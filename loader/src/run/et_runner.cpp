// Loading and running an ExecuTorch program entry (run/et_runner.hpp).
#include "run/et_runner.hpp"

#include <dirent.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>

#include "container/manifest_view.hpp"
#include "executorch/backend_ids.hpp"
#include "executorch/memory.hpp"
#include "executorch/method.hpp"
#include "executorch/named_data.hpp"
#include "executorch/program.hpp"
#include "executorch/runtime.hpp"
#include "entries/program_reader.hpp"
#include "run/remember.hpp"
#include "fatpte/device.hpp"
#include "device/library_files.hpp"
#include "vendor/runtimes.hpp"

namespace fatpte {
namespace et {
namespace {

namespace R = executorch::runtime;

std::string count(std::size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// What a method of this load may take: the options' limits.
MethodLimits limits(const LoadOptions& options) {
  MethodLimits out;
  out.method_allocator = options.method_allocator_limit;
  out.temp_allocator = options.temp_allocator_limit;
  out.planned = options.planned_memory_limit.value_or(default_planned_memory_limit());
  out.planned_origin = options.planned_memory_limit ? "the limit the application set (planned_memory_limit)"
                                                    : default_planned_memory_origin();
  return out;
}

// A loaded ExecuTorch program entry: the method type (executorch/method.hpp) over the payload,
// with the container's named data.
class EtLoaded final : public Loaded {
 public:
  // `payload` is served in place when it is aligned as ExecuTorch requires; else `copy` holds it.
  EtLoaded(std::uint32_t index, std::string method, Bytes payload, Buffer copy, const Container& container,
           std::vector<std::pair<std::string, std::uint32_t>> keys, std::map<std::string, Layout> layouts,
           const LoadOptions& options)
      : Loaded(index, std::move(method)),
        data_map_(container, std::move(keys), std::move(layouts)),
        method_(payload, std::move(copy), limits(options)) {}

  // Program::load, the planned buffers, load_method. "" when loaded, else why not; a damaged
  // segment met on the way is returned in `damage`.
  std::string load(Attempt& attempt, Status& damage, EdgeAdapter adapter) {
    {
      Capture capture;
      const R::Error e = method_.load_program();
      if (e != R::Error::Ok) return et_reason("ExecuTorch refused the program (Program::load)", e, capture);
    }
    Capture capture;
    R::Result<R::MethodMeta> meta = method_.program().method_meta(method().c_str());
    if (!meta.ok()) return et_reason(("ExecuTorch has no method '" + method() + "' (method_meta)").c_str(), meta.error(), capture);
    std::uint64_t planned_total = 0;
    const std::string why = method_.reserve(method(), meta.get(), planned_total);
    if (!why.empty()) return why;
    const R::Error loaded = method_.load_method(&data_map_);
    // What the program's fat delegates chose, and why not the other entries (their log lines).
    for (const std::string& line : capture.fat_lines()) attempt.details.push_back("fat delegate: " + line);
    damage = data_map_.damage();
    if (!damage.ok()) return "damaged";
    if (loaded != R::Error::Ok) return load_method_reason(loaded, capture);
    if (!adapter.empty()) {
      const std::string text = adapter.text();
      const std::string unfit = method_.adapt(std::move(adapter));
      if (!unfit.empty()) return unfit;
      attempt.details.push_back("signature adapter, converted at the edge: " + text);
    }
    const R::Method& m = *method_.executorch_method();
    attempt.details.push_back("method '" + method() + "': " + count(m.inputs_size(), "input") + ", " +
                              count(m.outputs_size(), "output") + ", " + bytes_text(planned_total) + " planned in " +
                              count(method_.planned_buffers(), "buffer") + " (reserved), method allocator " +
                              bytes_text(method_.method_allocator().used_size()));
    return "";
  }

  ProgramMethod* program_method() { return &method_; }
  Bytes program_bytes() const { return method_.program_bytes(); }

  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) override { return method_.run(inputs); }

 private:
  std::string load_method_reason(R::Error error, const Capture& capture) {
    // A key the program asked for that neither the entry nor the program holds: say which.
    std::vector<std::string> missing;
    R::Result<const R::NamedDataMap*> own = method_.program().get_named_data_map();
    for (const std::string& key : data_map_.asked_missing()) {
      if (!own.ok() || own.get() == nullptr || !own.get()->get_data(key).ok()) missing.push_back(key);
    }
    std::string why;
    if (!missing.empty()) {
      why = fail(Error::NAMED_DATA_NOT_FOUND, kNoOffset, "named_data",
                 "the program asks for named-data key%s '%s', which the container does not hold for this entry",
                 missing.size() > 1 ? "s" : "", join(missing).c_str())
                .describe() +
            "; ";
    }
    const std::vector<std::string> layouts = data_map_.layouts_missing();
    if (!layouts.empty()) {
      why += "the container records no tensor layout for named-data key" + std::string(layouts.size() > 1 ? "s " : " ") +
             join(layouts) + ", which ExecuTorch needs for external tensors; ";
    }
    if (method_.method_allocator().exceeded()) {
      why += "the method allocator reached its limit of " + bytes_text(method_.method_allocator().limit()) + "; ";
    }
    return why + et_reason(("ExecuTorch could not load method '" + method() + "' (load_method)").c_str(), error, capture);
  }

  // Destroyed in reverse: the method before the named data it was loaded with.
  ContainerDataMap data_map_;
  ProgramMethod method_;
};

// The vendor runtime backend `id` opens (vendor/runtimes.hpp), found and handed to it before its
// library is loaded; "" when it has none or it was found (a detail says where), else why not:
// withheld, or not found with every place looked.
std::string vendor_runtime_ready(const std::string& id, const LoadOptions& options, std::vector<std::string>& details) {
  vendor::Located where;
  if (!vendor::prepare_backend(id, options.vendor_runtimes, where)) return "";
  const vendor::VendorRuntime& r = *vendor::runtime_of_backend(id);
  const std::string runtime = std::string(r.title) + "'s runtime (" + r.system_name + ")";
  const std::string why = vendor::why_absent(r, where, options.command_line);
  if (!why.empty()) return "needs ExecuTorch backend " + id + ", which needs " + runtime + ": " + why;
  details.push_back(id + ": " + runtime + " " + where.text());
  return "";
}

// Whether ExecuTorch backend `id` can be used, loading its library when it is not registered
// yet; "" when it can, else why not. `library` receives the library that decided.
std::string backend_ready(const std::string& id, const LoadOptions& options, const std::vector<std::string>& dirs,
                          std::string& library, std::vector<std::string>& details) {
  auto configured = options.libraries.find(id);
  if (configured != options.libraries.end() && configured->second.empty()) {
    return "needs ExecuTorch backend " + id + ": withheld by the caller (" +
           (options.command_line ? "--backend-lib " + id + "=" : "its library is set to none in the load options") +
           ")";
  }
  // A library name derived from the program's own bytes must stay a plain file name searched in the
  // caller's folders: an id outside [A-Za-z0-9_] (a '/', "..") is never turned into one.
  const bool plain_id = !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char ch) {
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
  });
  if (configured == options.libraries.end() && !plain_id && R::get_backend_class(id.c_str()) == nullptr) {
    return "needs ExecuTorch backend '" + id + "': no library is looked up for an id that is not letters, " +
           "digits and '_'";
  }
  const std::string file = configured != options.libraries.end() ? configured->second : executorch_library_name(id);
  library = file;
  const std::string vendor_why = vendor_runtime_ready(id, options, details);
  if (!vendor_why.empty()) return vendor_why;
  if (R::get_backend_class(id.c_str()) == nullptr) {
    const std::string path = detail::find_library(file, dirs);
    if (path.empty()) return "needs ExecuTorch backend " + id + ": " + file + " " + detail::not_found(file, dirs);
    library = path;
    Capture capture;
    const Opened opened = open_library(path);
    if (!opened.ok) return "needs ExecuTorch backend " + id + ": cannot load " + path + ": " + opened.error;
    if (R::get_backend_class(id.c_str()) == nullptr) {
      return "needs ExecuTorch backend " + id + ": " + path + " was loaded but did not register it" +
             (capture.lines().empty() ? std::string() : " (ExecuTorch: " + capture.text() + ")");
    }
    details.push_back(id + ": registered by " + path + (opened.already ? " (loaded before)" : ""));
  } else {
    details.push_back(id + ": registered in this process already");
  }
  // A backend over a vendor runtime answers is_available() by asking that runtime for its devices
  // (OpenVINO: a core and every plugin's devices, 3 to 20 ms here), and ExecuTorch asks it again
  // when the method initialises the delegate: its runtime found is this check, and a runtime that
  // then lists no device fails the load with ExecuTorch's error, which falls back the same way.
  if (vendor::runtime_of_backend(id) == nullptr && !R::get_backend_class(id.c_str())->is_available()) {
    return "ExecuTorch backend " + id + " is registered but not available on this machine (is_available() is false)";
  }
  return "";
}

// A fat delegate chooses among the backends registered in this process when it initialises: the
// libraries of the backends its entries run on are loaded for it, found as for any program's,
// and so are those the caller names (--backend-lib ID=LIB); each optional (a missing one only
// makes the fat delegate choose another entry). Withheld ones stay withheld.
void load_fat_backends(const MethodInfo& method, const LoadOptions& options, const std::vector<std::string>& dirs,
                       Attempt& attempt) {
  std::vector<std::string> wanted;
  for (const Bytes& nfat : method.fat_payloads) {
    for (const std::string& id : fat_entry_backends(nfat)) {
      if (std::find(wanted.begin(), wanted.end(), id) == wanted.end()) wanted.push_back(id);
    }
  }
  for (const auto& kv : options.libraries) {
    if (detail::is_operator_key(kv.first) || kv.second.empty()) continue;
    if (std::find(wanted.begin(), wanted.end(), kv.first) == wanted.end()) wanted.push_back(kv.first);
  }
  for (const std::string& id : wanted) {
    if (id == kFatBackendId || std::find(method.backend_ids.begin(), method.backend_ids.end(), id) !=
                                   method.backend_ids.end()) {
      continue;  // the program's own delegates: checked before
    }
    std::string library;
    const std::string why = backend_ready(id, options, dirs, library, attempt.details);
    if (!why.empty()) attempt.details.push_back("for the fat delegate: " + why);
  }
}

}  // namespace

bool available() noexcept { return true; }

void set_log_forwarding(bool forward) { set_forwarding(forward); }

void load_operator_libraries(const LoadOptions& options, const std::vector<std::string>& dirs,
                             std::vector<std::string>& notes) {
  ensure_runtime();
  for (const auto& kv : detail::operator_libraries(options)) {
    if (kv.second.empty()) {
      notes.push_back("executorch operators '" + kv.first + "': withheld by the caller");
      continue;
    }
    const std::string path = detail::find_library(kv.second, dirs);
    if (path.empty()) {
      notes.push_back("executorch operators '" + kv.first + "': " + kv.second + " " + detail::not_found(kv.second, dirs) +
                      "; operators outside delegates cannot run");
      continue;
    }
    const Opened opened = open_library(path);
    notes.push_back("executorch operators '" + kv.first + "': " +
                    (opened.ok ? "loaded " + path : "cannot load " + path + ": " + opened.error));
  }
}

Result<bool> listed_backends_ready(const Container& c, const Entry& e, const LoadOptions& options,
                                   const std::vector<std::string>& dirs, Attempt& attempt) {
  ensure_runtime();
  auto manifest = manifest_view(c);
  if (!manifest.ok()) return manifest.error();
  const nfat::manifest::Entry* me = manifest.value().entry(e.index);
  if (me != nullptr && me->executorch_backends() != nullptr) {
    for (const ::flatbuffers::String* id : *me->executorch_backends()) {
      const std::string why = backend_ready(id->str(), options, dirs, attempt.library, attempt.details);
      if (!why.empty()) {
        attempt.outcome = why + " (the manifest's executorch_backends; the program was not read)";
        return false;
      }
    }
  }
  return true;
}

ProgramMethod* program_method(Loaded& loaded) {
  auto* et = dynamic_cast<EtLoaded*>(&loaded);
  return et != nullptr ? et->program_method() : nullptr;
}

Bytes program_bytes(const Loaded& loaded) {
  const auto* et = dynamic_cast<const EtLoaded*>(&loaded);
  return et != nullptr ? et->program_bytes() : Bytes{};
}

bool backend_registered(const std::string& id) {
  ensure_runtime();
  return R::get_backend_class(id.c_str()) != nullptr;
}

std::set<std::string> registry_backends(const LoadOptions& options, const std::vector<std::string>& dirs) {
  ensure_runtime();
  std::set<std::string> withheld;
  for (const auto& kv : options.libraries) {
    if (kv.second.empty()) withheld.insert(executorch_library_name(kv.first));
  }
  // A backend whose vendor runtime is withheld is not loaded; the others are handed theirs first.
  for (const vendor::VendorRuntime& r : vendor::vendor_runtimes()) {
    vendor::Located where;
    vendor::prepare_backend(r.backend_id, options.vendor_runtimes, where);
    if (where.withheld) withheld.insert(executorch_library_name(r.backend_id));
  }
  std::set<std::string> seen;
  for (const std::string& dir : dirs) {
    std::vector<std::string> names;
    if (DIR* d = opendir(dir.c_str())) {
      while (const dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.rfind("libexecutorch_backend_", 0) == 0 && name.size() > 3 &&
            name.compare(name.size() - 3, 3, ".so") == 0 && withheld.count(name) == 0 && seen.insert(name).second) {
          names.push_back(name);
        }
      }
      closedir(d);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) open_library(dir + "/" + name);
  }
  std::set<std::string> out;
  for (std::size_t i = 0; i < R::get_num_registered_backends(); ++i) {
    R::Result<const char*> id = R::get_backend_name(i);
    if (!id.ok() || id.get() == nullptr) continue;
    auto withheld_id = options.libraries.find(id.get());
    if (withheld_id != options.libraries.end() && withheld_id->second.empty()) continue;
    const R::BackendInterface* backend = R::get_backend_class(id.get());
    if (backend != nullptr && backend->is_available()) out.insert(id.get());
  }
  return out;
}

Status load_entry(const Container& c, const Entry& e, const LoadOptions& options, const std::vector<std::string>& dirs,
                  Attempt& attempt, std::unique_ptr<Loaded>& out) {
  ensure_runtime();
  auto manifest = manifest_view(c);
  if (!manifest.ok()) return manifest.error();
  const nfat::manifest::Entry* me = manifest.value().entry(e.index);
  // Damage first, before anything reads the program: the checksum covers every byte of it.
  FATPTE_RETURN_IF_ERROR(check_payload_integrity(c.bytes(), c.header(), e));
  const Bytes payload = c.payload(e.index).value();
  // ExecuTorch reads the program's flatbuffer in place and needs it aligned to
  // alignof(max_align_t), and so do fatpte's own reads of it (read_program verifies the flatbuffer
  // where it lies). Payloads fatpte packs are (64 by default); an entry of a version 1 container,
  // or one packed with a smaller alignment, may not be: only such a payload is copied, before
  // anything reads it.
  Buffer copy;
  if (reinterpret_cast<std::uintptr_t>(payload.data) % alignof(std::max_align_t) != 0) {
    copy = aligned_copy(payload.data, static_cast<std::size_t>(payload.size));
    if (!copy) {
      attempt.outcome = "cannot allocate an aligned copy of the payload (" + bytes_text(payload.size) + ")";
      return Status();
    }
    attempt.details.push_back("the payload at " + std::to_string(e.offset) + " is not aligned to " +
                              std::to_string(alignof(std::max_align_t)) +
                              " bytes as ExecuTorch needs: copied into an aligned buffer");
  }
  const Bytes program_bytes = copy ? Bytes{copy.get(), payload.size} : payload;
  const std::string field = "entries[" + std::to_string(e.index) + "].payload";
  Result<ProgramInfo> program = entries::read_program_validated(program_bytes, e.offset, field);
  if (!program.ok()) {
    attempt.outcome = "fatpte refused the ExecuTorch program: " + program.error().describe();
    return Status();
  }
  const MethodInfo* method = program.value().method(options.method);
  if (method == nullptr) {
    std::vector<std::string> names;
    for (const MethodInfo& m : program.value().methods) names.push_back("'" + m.name + "'");
    attempt.outcome = "the program has no method '" + options.method + "' (it has " +
                      (names.empty() ? std::string("none") : join(names)) + ")";
    return Status();
  }
  attempt.details.push_back("ExecuTorch program, method '" + method->name + "' needs " +
                            (method->backend_ids.empty() ? std::string("no ExecuTorch backend (its operators run on the kernels)")
                                                         : "backends " + join(method->backend_ids)));
  for (const std::string& id : method->backend_ids) {
    if (me != nullptr && me->executorch_backends() != nullptr &&
        std::any_of(me->executorch_backends()->begin(), me->executorch_backends()->end(),
                    [&](const ::flatbuffers::String* m) { return m->str() == id; })) {
      continue;  // ready: checked from the manifest above
    }
    const std::string why = backend_ready(id, options, dirs, attempt.library, attempt.details);
    if (!why.empty()) {
      attempt.outcome = why;
      return Status();
    }
  }
  if (!method->fat_payloads.empty()) load_fat_backends(*method, options, dirs, attempt);
  auto keys = entry_named_data(c, e);
  if (!keys.ok()) return keys.error();
  auto layouts = recorded_layouts(c, keys.value());
  if (!layouts.ok()) return layouts.error();
  if (!keys.value().empty()) {
    attempt.details.push_back("named data: " + count(keys.value().size(), "key") +
                              " of the container, served zero-copy");
  }
  auto loaded = std::make_unique<EtLoaded>(e.index, options.method, payload, std::move(copy), c,
                                           std::move(keys).value(), std::move(layouts).value(), options);
  Status damage;
  const std::string why = loaded->load(attempt, damage, edge_adapter(me, options.method));
  if (!damage.ok()) return damage;
  if (!why.empty()) {
    attempt.outcome = why;
    return Status();
  }
  attempt.outcome = "loaded";
  out = std::move(loaded);
  return Status();
}

}  // namespace et
}  // namespace fatpte
