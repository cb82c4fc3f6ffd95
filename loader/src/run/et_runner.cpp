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

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>

#include "container/manifest_view.hpp"
#include "executorch/backend_ids.hpp"
#include "executorch/bounded_allocator.hpp"
#include "executorch/memory.hpp"
#include "executorch/named_data.hpp"
#include "executorch/program.hpp"
#include "executorch/program_payload.hpp"
#include "executorch/runtime.hpp"
#include "fatpte/device.hpp"
#include "run/library_search.hpp"

namespace fatpte {
namespace et {
namespace {

namespace R = executorch::runtime;
using ScalarType = executorch::aten::ScalarType;

std::string count(std::size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

const char* tag_name(R::Tag tag) {
  switch (tag) {
    case R::Tag::None: return "None";
    case R::Tag::Tensor: return "Tensor";
    case R::Tag::String: return "String";
    case R::Tag::Double: return "Double";
    case R::Tag::Int: return "Int";
    case R::Tag::Bool: return "Bool";
    default: return "list";
  }
}

// Copies an N-dimensional array of `sizes` between two strided layouts (strides in elements).
void strided_copy(const std::uint8_t* src, const std::vector<std::int64_t>& src_strides, std::uint8_t* dst,
                  const std::vector<std::int64_t>& dst_strides, const std::vector<std::int64_t>& sizes,
                  std::size_t element) {
  const std::size_t rank = sizes.size();
  // The callers' sizes were checked against the method's (set_input) or come from ExecuTorch's own
  // tensor (output): their product fits.
  std::uint64_t total = 1;
  for (std::int64_t s : sizes) total *= static_cast<std::uint64_t>(s);
  std::vector<std::int64_t> index(rank, 0);
  for (std::uint64_t n = 0; n < total; ++n) {
    std::int64_t from = 0, to = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      from += index[d] * src_strides[d];
      to += index[d] * dst_strides[d];
    }
    std::memcpy(dst + static_cast<std::size_t>(to) * element, src + static_cast<std::size_t>(from) * element, element);
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> strides(sizes.size(), 1);
  for (std::size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * std::max<std::int64_t>(sizes[d], 1);
  return strides;
}

// Strides (in elements) of `sizes` laid out in `dim_order` (outermost dimension first).
std::vector<std::int64_t> dim_order_strides(const std::vector<std::int64_t>& sizes,
                                            const std::vector<std::uint8_t>& dim_order) {
  std::vector<std::int64_t> strides(sizes.size(), 1);
  std::int64_t step = 1;
  for (std::size_t k = dim_order.size(); k-- > 0;) {
    strides[dim_order[k]] = step;
    step *= std::max<std::int64_t>(sizes[dim_order[k]], 1);
  }
  return strides;
}

bool is_permutation(const std::vector<std::uint8_t>& order) {
  std::vector<bool> seen(order.size(), false);
  for (std::uint8_t d : order) {
    if (d >= order.size() || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

Status input_error(std::size_t i, const std::string& what) {
  return fail(Error::INVALID_ARGUMENT, kNoOffset, "inputs[" + std::to_string(i) + "]", "input %zu %s", i, what.c_str());
}

// One staged tensor input: its elements laid out as the method expects, and ExecuTorch's view.
struct StagedInput {
  std::vector<std::uint8_t> data;
  std::vector<R::etensor::TensorImpl::SizesType> sizes;
  std::vector<R::etensor::TensorImpl::DimOrderType> dim_order;
  std::vector<R::etensor::TensorImpl::StridesType> strides;
  std::unique_ptr<R::etensor::TensorImpl> impl;
};

class EtLoaded final : public Loaded {
 public:
  // `payload` is served in place when it is aligned as ExecuTorch requires; else `copy` holds it.
  EtLoaded(std::uint32_t index, std::string method, Bytes payload, Buffer copy, const Container& container,
           std::vector<std::pair<std::string, std::uint32_t>> keys, std::map<std::string, Layout> layouts,
           const LoadOptions& options)
      : Loaded(index, std::move(method)),
        copy_(std::move(copy)),
        program_data_(copy_ ? copy_.get() : payload.data),
        program_size_(payload.size),
        loader_(program_data_, static_cast<size_t>(payload.size)),
        data_map_(container, std::move(keys), std::move(layouts)),
        method_allocator_(options.method_allocator_limit),
        temp_allocator_(options.temp_allocator_limit),
        planned_limit_(options.planned_memory_limit.value_or(default_planned_memory_limit())),
        planned_origin_(options.planned_memory_limit ? "the limit the application set (planned_memory_limit)"
                                                     : default_planned_memory_origin()) {}

  // Program::load, the planned buffers, load_method. "" when loaded, else why not; a damaged
  // segment met on the way is returned in `damage`.
  std::string load(Attempt& attempt, Status& damage) {
    {
      Capture capture;
      R::Result<R::Program> program = load_verified(&loader_, program_data_);
      if (!program.ok()) return et_reason("ExecuTorch refused the program (Program::load)", program.error(), capture);
      program_.emplace(std::move(program.get()));
    }
    Capture capture;
    R::Result<R::MethodMeta> meta = program_->method_meta(method().c_str());
    if (!meta.ok()) return et_reason(("ExecuTorch has no method '" + method() + "' (method_meta)").c_str(), meta.error(), capture);
    std::uint64_t planned_total = 0;
    const std::string why =
        plan_memory(meta.get(), method(), planned_limit_, planned_origin_, planned_, spans_, planned_total);
    if (!why.empty()) return why;
    planned_allocator_ = std::make_unique<R::HierarchicalAllocator>(R::Span<R::Span<uint8_t>>(spans_.data(), spans_.size()));
    memory_ = std::make_unique<R::MemoryManager>(&method_allocator_, planned_allocator_.get(), &temp_allocator_);
    R::Result<R::Method> m = program_->load_method(method().c_str(), memory_.get(), nullptr, &data_map_);
    // What the program's fat delegates chose, and why not the other entries (their log lines).
    for (const std::string& line : capture.fat_lines()) attempt.details.push_back("fat delegate: " + line);
    damage = data_map_.damage();
    if (!damage.ok()) return "damaged";
    if (!m.ok()) return load_method_reason(m.error(), capture);
    method_.emplace(std::move(m.get()));
    attempt.details.push_back("method '" + method() + "': " + count(method_->inputs_size(), "input") + ", " +
                              count(method_->outputs_size(), "output") + ", " + bytes_text(planned_total) +
                              " planned in " + count(spans_.size(), "buffer") + " (reserved), method allocator " +
                              bytes_text(method_allocator_.used_size()));
    return "";
  }

  R::Method* executorch_method() { return method_ ? &*method_ : nullptr; }
  Bytes program_bytes() const { return Bytes{program_data_, program_size_}; }

  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) override {
    const size_t n = method_->inputs_size();
    if (inputs.size() != n) {
      return fail(Error::INVALID_ARGUMENT, kNoOffset, "inputs", "method '%s' takes %zu inputs; %zu were given",
                  method().c_str(), n, inputs.size());
    }
    const R::MethodMeta meta = method_->method_meta();
    staged_.clear();
    staged_.resize(n);
    for (size_t i = 0; i < n; ++i) FATPTE_RETURN_IF_ERROR(set_input(meta, i, inputs[i], staged_[i]));
    {
      Capture capture;
      const R::Error e = method_->execute();
      if (e != R::Error::Ok) {
        return fail(Error::INVALID_ARGUMENT, kNoOffset, "", "%s",
                    et_reason(("ExecuTorch could not execute method '" + method() + "'").c_str(), e, capture).c_str());
      }
    }
    std::vector<Tensor> out;
    for (size_t i = 0; i < method_->outputs_size(); ++i) {
      auto t = output(i);
      if (!t.ok()) return t.error();
      out.push_back(std::move(t).value());
    }
    return out;
  }

 private:
  std::string load_method_reason(R::Error error, const Capture& capture) {
    // A key the program asked for that neither the entry nor the program holds: say which.
    std::vector<std::string> missing;
    R::Result<const R::NamedDataMap*> own = program_->get_named_data_map();
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
    if (method_allocator_.exceeded()) {
      why += "the method allocator reached its limit of " + bytes_text(method_allocator_.limit()) + "; ";
    }
    return why + et_reason(("ExecuTorch could not load method '" + method() + "' (load_method)").c_str(), error, capture);
  }

  Status set_input(const R::MethodMeta& meta, size_t i, const Tensor& in, StagedInput& staged) {
    R::Result<R::Tag> tag = meta.input_tag(i);
    if (!tag.ok()) return input_error(i, "cannot be described by ExecuTorch (MethodMeta)");
    const char* dtype = dtype_name(in.dtype);
    if (tag.get() == R::Tag::Int || tag.get() == R::Tag::Double || tag.get() == R::Tag::Bool) {
      // A scalar argument: given as a tensor of one element.
      if (in.numel() != 1 || in.data.size() != element_size(in.dtype)) {
        return input_error(i, std::string("is a ") + tag_name(tag.get()) + " value; give it as a tensor of one element, not " +
                                  std::to_string(in.numel()));
      }
      R::EValue v;
      const double x = in.as_double(0);
      if (tag.get() == R::Tag::Int) {
        std::int64_t iv = 0;
        if (in.dtype == DType::kInt64) std::memcpy(&iv, in.data.data(), 8);
        else iv = static_cast<std::int64_t>(x);
        v = R::EValue(iv);
      } else if (tag.get() == R::Tag::Double) {
        v = R::EValue(x);
      } else {
        v = R::EValue(x != 0.0);
      }
      return set(i, v);
    }
    if (tag.get() != R::Tag::Tensor) {
      return input_error(i, std::string("is a ") + tag_name(tag.get()) + " value, which a call cannot give");
    }
    R::Result<R::TensorInfo> info = meta.input_tensor_meta(i);
    if (!info.ok()) return input_error(i, "cannot be described by ExecuTorch (MethodMeta)");
    const int expected = static_cast<int>(info->scalar_type());
    if (static_cast<int>(in.dtype) != expected) {
      const char* want = is_dtype(expected) ? dtype_name(static_cast<DType>(expected)) : "another type";
      return input_error(i, std::string("of the method is ") + want + "; the call gives " + (dtype ? dtype : "?"));
    }
    const size_t rank = in.shape.size();
    if (rank != info->sizes().size()) {
      return input_error(i, "of the method has rank " + std::to_string(info->sizes().size()) + "; the call gives rank " +
                                  std::to_string(rank));
    }
    std::vector<std::uint8_t> order(info->dim_order().begin(), info->dim_order().end());
    if (order.size() != rank || !is_permutation(order)) {
      order.resize(rank);
      for (size_t d = 0; d < rank; ++d) order[d] = static_cast<std::uint8_t>(d);
    }
    // The method's own sizes bound the call's (static shapes equal them, dynamic ones stay within
    // their upper bound): a shape past them is refused before a byte is staged, so no count of
    // elements can run past what the method planned memory for.
    const auto method_sizes = info->sizes();
    for (size_t d = 0; d < rank; ++d) {
      if (in.shape[d] < 0 || in.shape[d] > method_sizes[d]) {
        return input_error(i, "has size " + std::to_string(in.shape[d]) + " in dimension " + std::to_string(d) +
                                  "; the method's is " + std::to_string(method_sizes[d]));
      }
    }
    const std::uint64_t numel = in.numel();
    if (numel == kNoCount || in.data.size() / element_size(in.dtype) != numel ||
        in.data.size() % element_size(in.dtype) != 0) {
      return input_error(i, "holds " + std::to_string(in.data.size()) + " bytes, which its dtype and shape do not");
    }
    const std::vector<std::int64_t> strides = dim_order_strides(in.shape, order);
    staged.data.resize(in.data.size());
    strided_copy(in.data.data(), contiguous_strides(in.shape), staged.data.data(), strides, in.shape,
                 element_size(in.dtype));
    for (size_t d = 0; d < rank; ++d) {
      staged.sizes.push_back(static_cast<R::etensor::TensorImpl::SizesType>(in.shape[d]));
      staged.dim_order.push_back(order[d]);
      staged.strides.push_back(static_cast<R::etensor::TensorImpl::StridesType>(strides[d]));
    }
    staged.impl = std::make_unique<R::etensor::TensorImpl>(
        static_cast<ScalarType>(expected), static_cast<ssize_t>(rank), staged.sizes.data(), staged.data.data(),
        staged.dim_order.data(), staged.strides.data(), R::TensorShapeDynamism::STATIC);
    return set(i, R::EValue(executorch::aten::Tensor(staged.impl.get())));
  }

  Status set(size_t i, const R::EValue& v) {
    Capture capture;
    const R::Error e = method_->set_input(v, i);
    if (e == R::Error::Ok) return Status();
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "inputs[" + std::to_string(i) + "]", "input %zu: %s", i,
                et_reason("ExecuTorch refused it (set_input)", e, capture).c_str());
  }

  Result<Tensor> output(size_t i) const {
    const R::EValue& v = method_->get_output(i);
    Tensor t;
    if (v.isNone()) {
      t.none = true;
      return t;
    }
    if (v.isInt() || v.isDouble() || v.isBool()) {
      t.dtype = v.isInt() ? DType::kInt64 : v.isDouble() ? DType::kFloat64 : DType::kBool;
      t.data.resize(element_size(t.dtype));
      if (v.isInt()) {
        const std::int64_t x = v.toInt();
        std::memcpy(t.data.data(), &x, 8);
      } else if (v.isDouble()) {
        const double x = v.toDouble();
        std::memcpy(t.data.data(), &x, 8);
      } else {
        t.data[0] = v.toBool() ? 1 : 0;
      }
      return t;
    }
    if (!v.isTensor()) {
      return fail(Error::INVALID_ARGUMENT, kNoOffset, "outputs[" + std::to_string(i) + "]",
                  "output %zu of method '%s' is a %s value, which fatpte cannot return", i, method().c_str(),
                  tag_name(v.tag));
    }
    const executorch::aten::Tensor& et = v.toTensor();
    const int code = static_cast<int>(et.scalar_type());
    if (!is_dtype(code)) {
      return fail(Error::INVALID_ARGUMENT, kNoOffset, "outputs[" + std::to_string(i) + "]",
                  "output %zu of method '%s' has ScalarType %d, which fatpte cannot represent", i, method().c_str(),
                  code);
    }
    t.dtype = static_cast<DType>(code);
    std::vector<std::int64_t> strides;
    for (auto s : et.sizes()) t.shape.push_back(s);
    for (auto s : et.strides()) strides.push_back(s);
    if (strides.size() != t.shape.size()) strides = contiguous_strides(t.shape);
    t.data.resize(static_cast<std::size_t>(t.numel()) * element_size(t.dtype));
    if (!t.data.empty()) {
      strided_copy(static_cast<const std::uint8_t*>(et.const_data_ptr()), strides, t.data.data(),
                   contiguous_strides(t.shape), t.shape, element_size(t.dtype));
    }
    return t;
  }

  // Destroyed in reverse: the method before the memory and the program it points into.
  Buffer copy_;
  const std::uint8_t* program_data_;  // the program's first byte: the payload in place, or copy_
  std::uint64_t program_size_;
  executorch::extension::BufferDataLoader loader_;
  ContainerDataMap data_map_;
  std::optional<R::Program> program_;
  Reserved planned_;
  std::vector<R::Span<uint8_t>> spans_;
  std::unique_ptr<R::HierarchicalAllocator> planned_allocator_;
  BoundedAllocator method_allocator_;
  BoundedAllocator temp_allocator_;
  std::uint64_t planned_limit_;
  std::string planned_origin_;
  std::unique_ptr<R::MemoryManager> memory_;
  std::optional<R::Method> method_;
  std::vector<StagedInput> staged_;  // the last call's inputs: a non-planned input points into them
};

bool is_operator_key(const std::string& key) { return key == "kernels" || key.rfind("kernels_", 0) == 0; }

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
  if (!R::get_backend_class(id.c_str())->is_available()) {
    return "ExecuTorch backend " + id + " is registered but not available on this machine (is_available() is false)";
  }
  return "";
}

}  // namespace

bool available() noexcept { return true; }

void set_log_forwarding(bool forward) { set_forwarding(forward); }

void load_operator_libraries(const LoadOptions& options, const std::vector<std::string>& dirs,
                             std::vector<std::string>& notes) {
  ensure_runtime();
  std::map<std::string, std::string> wanted;
  if (options.use_build_default) wanted["kernels"] = "libexecutorch_kernels_optimized.so";
  for (const auto& kv : options.libraries) {
    if (is_operator_key(kv.first)) wanted[kv.first] = kv.second;
  }
  for (const auto& kv : wanted) {
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

R::Method* executorch_method(Loaded& loaded) {
  auto* et = dynamic_cast<EtLoaded*>(&loaded);
  return et != nullptr ? et->executorch_method() : nullptr;
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
  Result<ProgramInfo> program = read_program(program_bytes, e.offset, field);
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
  // A fat delegate chooses among the backends registered in this process when it initialises: the
  // libraries of the backends its entries run on are loaded for it, found as for any program's,
  // and so are those the caller names (--backend-lib ID=LIB); each optional (a missing one only
  // makes the fat delegate choose another entry). Withheld ones stay withheld.
  if (!method->fat_payloads.empty()) {
    std::vector<std::string> wanted;
    for (const Bytes& nfat : method->fat_payloads) {
      for (const std::string& id : fat_entry_backends(nfat)) {
        if (std::find(wanted.begin(), wanted.end(), id) == wanted.end()) wanted.push_back(id);
      }
    }
    for (const auto& kv : options.libraries) {
      if (is_operator_key(kv.first) || kv.second.empty()) continue;
      if (std::find(wanted.begin(), wanted.end(), kv.first) == wanted.end()) wanted.push_back(kv.first);
    }
    for (const std::string& id : wanted) {
      if (id == kFatBackendId || std::find(method->backend_ids.begin(), method->backend_ids.end(), id) !=
                                     method->backend_ids.end()) {
        continue;  // the program's own delegates: checked above
      }
      std::string library;
      const std::string why = backend_ready(id, options, dirs, library, attempt.details);
      if (!why.empty()) attempt.details.push_back("for the fat delegate: " + why);
    }
  }
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
  const std::string why = loaded->load(attempt, damage);
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
