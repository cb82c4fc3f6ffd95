// The fat delegate (delegate/fat_backend.hpp).
#include "delegate/fat_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/log.h>

#include "common/text.hpp"
#include "container/golden.hpp"
#include "container/manifest_view.hpp"
#include "executorch/bounded_allocator.hpp"
#include "executorch/memory.hpp"
#include "executorch/program.hpp"
#include "executorch/program_payload.hpp"
#include "executorch/runtime.hpp"
#include "fatpte/container.hpp"
#include "fatpte/device.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/select.hpp"
#include "fatpte/status.hpp"

namespace fatpte {
namespace et {
namespace {

namespace R = executorch::runtime;

// What a nested program may take: the same defaults as the loader's LoadOptions.
constexpr std::uint64_t kMethodAllocatorLimit = std::uint64_t{256} << 20;
constexpr std::uint64_t kTempAllocatorLimit = std::uint64_t{256} << 20;
constexpr std::uint64_t kPlannedMemoryLimit = std::uint64_t{64} << 30;
constexpr std::size_t kMaxIdBytes = 128;

// Each line of `text` as one log line, so a reader of the log can grep the entry's name.
void log_lines(const std::string& text) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ET_LOG(Info, "fatpte fat delegate: %s", text.substr(start, end - start).c_str());
    start = end + 1;
  }
}

// Whether `line` is news in this process. A program lowered in several partitions has a fat
// delegate per partition, and they mostly say the same (the entry that runs, the entries this
// process cannot run): each line is logged the first time only. Every log line is a write, and
// a woken reader, in the middle of loading the program (a KV-cache model's three partitions
// cost 2% of its load and first call in three such lines, docs/performance.md). Remembers up
// to kMaxRemembered lines; past that, every line is logged.
bool first_time(const std::string& line) {
  constexpr std::size_t kMaxRemembered = 256;
  static std::mutex mutex;
  static std::set<std::string>& said = *new std::set<std::string>();  // never destroyed (register_fat_backend)
  std::lock_guard<std::mutex> lock(mutex);
  if (said.count(line) != 0) return false;
  if (said.size() < kMaxRemembered) said.insert(line);
  return true;
}

// Lines as few log messages as they fit in, joined by " | ": one message of ExecuTorch's log
// holds kMaxMessage bytes after our prefix (it cuts a message at 256), and a line of several
// lines (an entry's notes) goes on its own.
void say(const std::vector<std::string>& lines) {
  constexpr std::size_t kMaxMessage = 225;
  std::string message;
  for (const std::string& line : lines) {
    const bool alone = line.find('\n') != std::string::npos;
    if (!message.empty() && (alone || message.size() + 3 + line.size() > kMaxMessage)) {
      ET_LOG(Info, "fatpte fat delegate: %s", message.c_str());
      message.clear();
    }
    if (alone) {
      log_lines(line);
    } else {
      message += (message.empty() ? "" : " | ") + line;
    }
  }
  if (!message.empty()) ET_LOG(Info, "fatpte fat delegate: %s", message.c_str());
}

std::vector<std::string> words(R::BackendInitContext& context, const char* key) {
  std::vector<std::string> out;
  R::Result<const char*> value = context.get_runtime_spec<const char*>(key);
  if (!value.ok() || value.get() == nullptr) return out;
  std::string all = value.get();
  std::size_t start = 0;
  while (start <= all.size()) {
    std::size_t end = all.find(',', start);
    if (end == std::string::npos) end = all.size();
    std::string w = all.substr(start, end - start);
    w.erase(0, w.find_first_not_of(' '));
    w.erase(w.find_last_not_of(' ') + 1);
    if (!w.empty()) out.push_back(w);
    start = end + 1;
  }
  return out;
}

// Load-time option `self_test` (a bool, or the string "1" or "true"): run each nested program
// entry's golden calls before it is served (specs/nfat-manifest.md section 11).
bool self_test_wanted(R::BackendInitContext& context) {
  R::Result<bool> flag = context.get_runtime_spec<bool>("self_test");
  if (flag.ok()) return flag.get();
  R::Result<const char*> text = context.get_runtime_spec<const char*>("self_test");
  return text.ok() && text.get() != nullptr && (std::strcmp(text.get(), "1") == 0 || std::strcmp(text.get(), "true") == 0);
}

// The backends of this process's ExecuTorch registry that are registered and available now.
std::set<std::string> available_backends() {
  std::set<std::string> out;
  const std::size_t n = R::get_num_registered_backends();
  for (std::size_t i = 0; i < n; ++i) {
    R::Result<const char*> name = R::get_backend_name(i);
    if (!name.ok() || name.get() == nullptr) continue;
    const R::BackendInterface* backend = R::get_backend_class(name.get());
    if (backend != nullptr && backend->is_available()) out.insert(name.get());
  }
  return out;
}

// "" when ExecuTorch backend `id` is registered and available in this process, else why not.
std::string backend_missing(const std::string& id) {
  const R::BackendInterface* backend = R::get_backend_class(id.c_str());
  if (backend == nullptr) return "needs ExecuTorch backend " + id + ", which is not registered in this process";
  if (!backend->is_available()) return "needs ExecuTorch backend " + id + ", which is registered but not available";
  return "";
}

bool any_requirements(const nfat::manifest::Manifest* manifest) {
  if (manifest == nullptr || manifest->entries() == nullptr) return false;
  for (const nfat::manifest::Entry* e : *manifest->entries()) {
    if (e->requires_() != nullptr) return true;
  }
  return false;
}

// This machine, probed once per process (accelerators only when an entry asks about them).
// Function-local statics rather than std::call_once, whose glibc pthread_once makes a futex
// system call the first time.
const DeviceProfile& host(bool accelerators) {
  if (accelerators) {
    static const DeviceProfile& kFull = *new DeviceProfile(probe_host(true));  // never destroyed
    return kFull;
  }
  static const DeviceProfile& kPlain = *new DeviceProfile(probe_host(false));
  return kPlain;
}

// The entries this thread tried and could not initialise during its outermost fat delegate's init,
// with why: keyed by where the entry's payload lies, its size, the depth of the container holding
// it and what it was handed to (a nested program, or the ExecuTorch backend's id). An entry whose
// payload already failed there (entries sharing a payload; wrappers reaching one container from
// many places) is skipped with that reason instead of being initialised again: k levels of n
// entries sharing the level below are n**k paths through bytes that grow as n * k, and an init's
// work stays linear in the bytes (specs/executorch.md section 8). Forgotten when the outermost
// init returns, and the keys inside a nested program's aligned copy when that copy is freed (its
// addresses may be reused).
class Tried {
 public:
  // A key for a container (its first byte and depth) whatever its size, which no entry's key is.
  static constexpr std::uint64_t kAnySize = ~std::uint64_t{0};
  static constexpr const char* kContainer = "(a container)";
  struct Key {
    std::uintptr_t data;
    std::uint64_t size;
    std::uint32_t depth;
    std::string handed_to;  // "" for a nested program
    bool operator<(const Key& o) const noexcept {
      if (data != o.data) return data < o.data;
      if (size != o.size) return size < o.size;
      if (depth != o.depth) return depth < o.depth;
      return handed_to < o.handed_to;
    }
  };
  static const std::string* find(const Key& k) {
    auto it = tried_.find(k);
    return it == tried_.end() ? nullptr : &it->second;
  }
  static void add(Key k, std::string why) { tried_.emplace(std::move(k), std::move(why)); }
  static void forget(const std::uint8_t* data, std::size_t size) {
    const auto begin = reinterpret_cast<std::uintptr_t>(data);
    tried_.erase(tried_.lower_bound(Key{begin, 0, 0, ""}), tried_.lower_bound(Key{begin + size, 0, 0, ""}));
  }
  static void clear() noexcept { tried_.clear(); }

 private:
  static thread_local std::map<Key, std::string> tried_;
};
thread_local std::map<Tried::Key, std::string> Tried::tried_;

// A whole program carried as an entry's payload, run as the delegate's computation: its method's
// inputs are the delegate call's inputs and its outputs are copied into the call's outputs. Its
// planned memory (activations, mutable state) lives as long as the delegate, so state carries
// from one call to the next.
class NestedProgram {
 public:
  NestedProgram(const std::uint8_t* data, std::size_t size, Buffer copy)
      : copy_(std::move(copy)),
        size_(size),
        program_data_(copy_ ? copy_.get() : data),
        loader_(program_data_, size),
        method_allocator_(kMethodAllocatorLimit),
        temp_allocator_(kTempAllocatorLimit) {}

  ~NestedProgram() {
    if (copy_) Tried::forget(copy_.get(), size_);
  }
  NestedProgram(const NestedProgram&) = delete;
  NestedProgram& operator=(const NestedProgram&) = delete;

  // "" when the method is loaded, else why not.
  std::string load(const char* wanted, const R::NamedDataMap* named_data) {
    Capture capture;
    R::Result<R::Program> program = load_verified(&loader_, program_data_);
    if (!program.ok()) return et_reason("ExecuTorch refused the nested program (Program::load)", program.error(), capture);
    program_.emplace(std::move(program.get()));
    // The outer method's name when the nested program has it, else its only method.
    std::string name = wanted != nullptr ? wanted : "forward";
    if (!program_->method_meta(name.c_str()).ok()) {
      if (program_->num_methods() != 1) return "the nested program has no method '" + name + "'";
      name = program_->get_method_name(0).get();
      // ExecuTorch logs a name it is asked about as it is: one from the file that is not printable
      // text (a control character, bytes that are not UTF-8) would reach the terminal raw. (The
      // reason is escaped where it is logged.)
      if (detail::printable(name) != name) {
        return "the nested program's only method is named '" + name +
               "', which is not printable text: ExecuTorch is not asked for it";
      }
    }
    name_ = name;
    R::Result<R::MethodMeta> meta = program_->method_meta(name_.c_str());
    if (!meta.ok()) return et_reason("the nested program's method cannot be described", meta.error(), capture);
    std::uint64_t total = 0;
    const std::string why = plan_memory(meta.get(), name_, kPlannedMemoryLimit, planned_, spans_, total);
    if (!why.empty()) return "the nested program: " + why;
    planned_allocator_ =
        std::make_unique<R::HierarchicalAllocator>(R::Span<R::Span<uint8_t>>(spans_.data(), spans_.size()));
    memory_ = std::make_unique<R::MemoryManager>(&method_allocator_, planned_allocator_.get(), &temp_allocator_);
    R::Result<R::Method> method = program_->load_method(name_.c_str(), memory_.get(), nullptr, named_data);
    if (!method.ok()) return et_reason(("ExecuTorch could not load the nested method '" + name_ + "'").c_str(), method.error(), capture);
    method_.emplace(std::move(method.get()));
    return "";
  }

  const std::string& name() const noexcept { return name_; }

  // Golden call `call` on the loaded method: "" when every output is within its tolerance, else
  // why not (container/golden.hpp compares). The method's state changes; the caller loads a fresh
  // program to serve.
  std::string golden(const GoldenCallSpec& call) {
    const std::size_t inputs = method_->inputs_size();
    if (call.inputs.size() != inputs || call.outputs.size() != method_->outputs_size()) {
      return "the golden call has " + std::to_string(call.inputs.size()) + " inputs and " +
             std::to_string(call.outputs.size()) + " outputs, the method " + std::to_string(inputs) + " and " +
             std::to_string(method_->outputs_size());
    }
    const R::MethodMeta meta = method_->method_meta();
    std::vector<std::vector<std::uint8_t>> data(inputs);
    std::vector<std::vector<R::etensor::TensorImpl::SizesType>> sizes(inputs);
    std::vector<std::vector<R::etensor::TensorImpl::DimOrderType>> orders(inputs);
    std::vector<std::vector<R::etensor::TensorImpl::StridesType>> strides(inputs);
    std::vector<std::unique_ptr<R::etensor::TensorImpl>> impls(inputs);
    for (std::size_t i = 0; i < inputs; ++i) {
      const GoldenTensor& t = call.inputs[i];
      R::Result<R::Tag> tag = meta.input_tag(i);
      if (!tag.ok()) return "input " + std::to_string(i) + " cannot be described";
      R::Error e = R::Error::Ok;
      double x = 0;
      std::int64_t iv = 0;
      if (tag.get() == R::Tag::Int || tag.get() == R::Tag::Double || tag.get() == R::Tag::Bool) {
        if (t.bytes.size != t.element_size) return "input " + std::to_string(i) + " is a scalar, the golden tensor is not";
        if (t.scalar_type == 4) std::memcpy(&iv, t.bytes.data, 8);
        if (t.scalar_type == 7) std::memcpy(&x, t.bytes.data, 8);
        if (t.scalar_type == 11) iv = t.bytes.data[0] != 0;
        const R::EValue v = tag.get() == R::Tag::Int ? R::EValue(iv)
                            : tag.get() == R::Tag::Double ? R::EValue(x) : R::EValue(iv != 0);
        e = method_->set_input(v, i);
      } else {
        const std::size_t rank = t.sizes.size();
        data[i].assign(t.bytes.data, t.bytes.data + t.bytes.size);
        std::int64_t step = 1;
        strides[i].resize(rank);
        for (std::size_t d = rank; d-- > 0;) {
          strides[i][d] = static_cast<R::etensor::TensorImpl::StridesType>(step);
          step *= std::max<std::int64_t>(t.sizes[d], 1);
        }
        for (std::size_t d = 0; d < rank; ++d) {
          sizes[i].push_back(static_cast<R::etensor::TensorImpl::SizesType>(t.sizes[d]));
          orders[i].push_back(static_cast<R::etensor::TensorImpl::DimOrderType>(d));
        }
        impls[i] = std::make_unique<R::etensor::TensorImpl>(
            static_cast<executorch::aten::ScalarType>(t.scalar_type), static_cast<ssize_t>(rank), sizes[i].data(),
            data[i].data(), orders[i].data(), strides[i].data(), R::TensorShapeDynamism::STATIC);
        e = method_->set_input(R::EValue(executorch::aten::Tensor(impls[i].get())), i);
      }
      if (e != R::Error::Ok) return "input " + std::to_string(i) + " was refused (set_input, error " + std::to_string(static_cast<int>(e)) + ")";
    }
    const R::Error e = method_->execute();
    if (e != R::Error::Ok) return "the method could not execute (error " + std::to_string(static_cast<int>(e)) + ")";
    for (std::size_t j = 0; j < call.outputs.size(); ++j) {
      const R::EValue& v = method_->get_output(j);
      std::int8_t type = 0;
      std::vector<std::int64_t> got_sizes;
      std::vector<std::uint8_t> scalar(8, 0);
      const std::uint8_t* bytes = scalar.data();
      std::uint64_t nbytes = 8;
      if (v.isTensor()) {
        const executorch::aten::Tensor& out = v.toTensor();
        if (!R::is_contiguous_dim_order(out.dim_order().data(), out.dim())) {
          return "output " + std::to_string(j) + " is not in contiguous dim order";
        }
        type = static_cast<std::int8_t>(out.scalar_type());
        for (auto s : out.sizes()) got_sizes.push_back(s);
        bytes = static_cast<const std::uint8_t*>(out.const_data_ptr());
        nbytes = out.nbytes();
      } else if (v.isInt()) {
        type = 4;
        const std::int64_t x = v.toInt();
        std::memcpy(scalar.data(), &x, 8);
      } else if (v.isDouble()) {
        type = 7;
        const double x = v.toDouble();
        std::memcpy(scalar.data(), &x, 8);
      } else if (v.isBool()) {
        type = 11;
        scalar[0] = v.toBool() ? 1 : 0;
        nbytes = 1;
      } else {
        return "output " + std::to_string(j) + " is no tensor or scalar";
      }
      if (!v.isTensor()) got_sizes = call.outputs[j].want.sizes;  // a scalar has the one element it has
      const GoldenComparison cmp = compare_golden(call.outputs[j], type, got_sizes, bytes, nbytes);
      if (!cmp.problem.empty()) return "output " + std::to_string(j) + ": " + cmp.problem;
      if (!cmp.passed) {
        char text[160];
        std::snprintf(text, sizeof text, "output %zu: max abs %.3g (rel %.3g) > %.3g + %.3g * max|want| = %.3g", j,
                      cmp.max_abs, cmp.max_rel(), call.outputs[j].atol, call.outputs[j].rtol, cmp.bound);
        return text;
      }
    }
    return "";
  }

  R::Error execute(R::Span<R::EValue*> args) {
    const std::size_t inputs = method_->inputs_size();
    const std::size_t outputs = method_->outputs_size();
    if (args.size() != inputs + outputs) {
      ET_LOG(Error, "fatpte fat delegate: the call passes %zu values; the nested method '%s' takes %zu inputs and %zu outputs",
             args.size(), name_.c_str(), inputs, outputs);
      return R::Error::InvalidArgument;
    }
    for (std::size_t i = 0; i < inputs; ++i) {
      const R::Error e = method_->set_input(*args[i], i);
      if (e != R::Error::Ok) return e;
    }
    const R::Error e = method_->execute();
    if (e != R::Error::Ok) return e;
    for (std::size_t j = 0; j < outputs; ++j) {
      const R::EValue& from = method_->get_output(j);
      R::EValue& to = *args[inputs + j];
      if (!from.isTensor() || !to.isTensor()) {
        to = from;  // a scalar output
        continue;
      }
      const executorch::aten::Tensor& src = from.toTensor();
      executorch::aten::Tensor dst = to.toTensor();
      if (src.scalar_type() != dst.scalar_type()) {
        ET_LOG(Error, "fatpte fat delegate: output %zu of the nested method has another dtype than the call's", j);
        return R::Error::InvalidArgument;
      }
      if (!std::equal(src.sizes().begin(), src.sizes().end(), dst.sizes().begin(), dst.sizes().end())) {
        const R::Error r = R::resize_tensor(dst, src.sizes());
        if (r != R::Error::Ok) return r;
      }
      if (dst.nbytes() != src.nbytes()) return R::Error::InvalidArgument;
      if (src.nbytes() != 0) std::memcpy(dst.mutable_data_ptr(), src.const_data_ptr(), src.nbytes());
    }
    return R::Error::Ok;
  }

 private:
  // Destroyed in reverse: the method before the memory and the program it points into.
  Buffer copy_;
  std::size_t size_;
  const std::uint8_t* program_data_;  // the program's first byte: the payload in place, or copy_
  executorch::extension::BufferDataLoader loader_;
  std::optional<R::Program> program_;
  std::string name_;
  std::vector<Buffer> planned_;
  std::vector<R::Span<uint8_t>> spans_;
  std::unique_ptr<R::HierarchicalAllocator> planned_allocator_;
  BoundedAllocator method_allocator_;
  BoundedAllocator temp_allocator_;
  std::unique_ptr<R::MemoryManager> memory_;
  std::optional<R::Method> method_;
};

struct FatHandle {
  R::BackendInterface* backend = nullptr;  // the chosen entry's backend, or nullptr for a nested program
  R::DelegateHandle* inner = nullptr;
  std::unique_ptr<NestedProgram> nested;
};

// Why entry `e` (a nested program) cannot run here, "" when its backends are all present; the
// program is read (header and verified flatbuffer) but not loaded.
std::string nested_missing(const Bytes payload, const Entry& e, const char* method) {
  Result<ProgramInfo> info = read_program(payload, e.offset, "entries[" + std::to_string(e.index) + "].payload");
  if (!info.ok()) return "fatpte refused the nested program: " + info.error().describe();
  const MethodInfo* m = info.value().method(method != nullptr ? method : "forward");
  if (m == nullptr && info.value().methods.size() == 1) m = &info.value().methods[0];
  if (m == nullptr) return std::string("the nested program has no method '") + (method ? method : "forward") + "'";
  for (const std::string& id : m->backend_ids) {
    const std::string why = backend_missing(id);
    if (!why.empty()) return "nested program " + why;
  }
  return "";
}

// How deep this thread is in fat delegates' inits: an entry that is itself fat (a payload for this
// backend, or a nested program with fat delegates) initialises inside its container's init, on the
// same thread. specs/executorch.md section 8: at most format::kMaxFatDelegateDepth levels.
class Depth {
 public:
  Depth() noexcept { ++level_; }
  ~Depth() {
    if (--level_ == 0) Tried::clear();
  }
  Depth(const Depth&) = delete;
  Depth& operator=(const Depth&) = delete;
  static std::uint32_t level() noexcept { return level_; }

 private:
  static thread_local std::uint32_t level_;
};
thread_local std::uint32_t Depth::level_ = 0;

class FatBackend final : public R::BackendInterface {
 public:
  explicit FatBackend(std::string id) : id_(std::move(id)) {}
  const std::string& id() const noexcept { return id_; }
  bool is_available() const override { return true; }

  R::Result<R::DelegateHandle*> init(R::BackendInitContext& context, R::FreeableBuffer* processed,
                                     R::ArrayRef<R::CompileSpec> compile_specs) const override {
    const Depth depth;
    // Under another producer's id (an alias: upstream's NativeBackend), a payload that is not an
    // NFAT container is that backend's own and no fat delegate: declined as a backend declines a
    // payload it does not run, at Info level (it is no error of the file), so the entry holding
    // the program falls back as for any such backend. No other backend can hold the id in the
    // same process (ExecuTorch's registry has one backend per id), so there is none to hand it to.
    if (id_ != kFatBackendId &&
        (processed->size() < format::kMagicSize || std::memcmp(processed->data(), format::kMagic, format::kMagicSize) != 0)) {
      const std::string line = "registered as " + detail::printable(id_) + ": a payload that is not an NFAT container "
                               "is " + detail::printable(id_) + "'s own, not a fat delegate; declined (this process has "
                               "no other " + detail::printable(id_) + ")";
      if (first_time(line)) ET_LOG(Info, "fatpte fat delegate: %s", line.c_str());
      return R::Error::NotSupported;
    }
    // A container refused at this depth, or that validated here and then ran no entry, runs none
    // whatever size the payload gives it: a shorter or longer region from the same first byte
    // (version 1 entries may overlap) is refused by validation, or holds the same table and entries.
    const Tried::Key ran_none{reinterpret_cast<std::uintptr_t>(processed->data()), Tried::kAnySize, Depth::level(),
                              Tried::kContainer};
    if (Tried::find(ran_none) != nullptr) {
      const std::string line = "a container starting where one that ran no entry starts, at this depth: not tried again";
      if (first_time(line)) ET_LOG(Error, "fatpte fat delegate: %s", line.c_str());
      return R::Error::NotSupported;
    }
    if (Depth::level() > format::kMaxFatDelegateDepth) {
      Tried::add(ran_none, "too deep");
      return refuse(fail(Error::FAT_DELEGATE_TOO_DEEP, 0, "payload",
                         "a fat delegate at depth %u: fat delegates nest at most %u levels deep "
                         "(specs/executorch.md section 8)",
                         Depth::level(), format::kMaxFatDelegateDepth));
    }
    // No ensure_runtime(): the application initialised ExecuTorch before loading a program, and
    // its log handler is left alone. What an inner backend logs while failing reaches that log
    // directly, before the line saying the entry was skipped.
    const auto* data = static_cast<const std::uint8_t*>(processed->data());
    auto opened = Container::open_memory(data, processed->size());
    if (!opened.ok()) return refuse(opened.error());
    const Container& c = *opened.value();
    const Status valid = c.validate();
    if (!valid.ok()) return refuse(valid);

    auto manifest = manifest_view(c);
    if (!manifest.ok()) return refuse(manifest.error());
    // Probing the machine (cpuid, /proc) costs about 80 us, 2% of loading a small model: only
    // when an entry states a requirement that needs it. Otherwise the profile has no facts but
    // the registry's backends, which is all selection then reads.
    DeviceProfile device;
    if (any_requirements(manifest.value().root())) {
      device = host(requires_accelerators(c));
    } else {
      device.name = "host";
    }
    device.executorch_backends = available_backends();
    const std::vector<std::string> prefer = words(context, "prefer");
    const std::vector<std::string> exclude = words(context, "exclude");
    Result<Selection> assessed = assess(c, device, prefer, exclude);
    if (!assessed.ok()) return refuse(assessed.error());
    const Selection& selection = assessed.value();
    // The log says which entries were rejected and why, which were skipped and why, and the entry
    // that runs: each line once per process (first_time), said together in as few messages as
    // they fit in (say), since each message is a write to stderr and a wake-up of whatever reads it.
    bool rejected = false;
    std::vector<std::string> news;
    for (const Verdict& v : selection.verdicts) {
      if (v.eligible) continue;
      rejected = true;
      std::string line = explain_verdict(c.entries()[v.index], v);
      if (first_time(line)) news.push_back(std::move(line));
    }
    std::vector<const Verdict*> ranked;
    for (const Verdict& v : selection.verdicts) {
      if (v.eligible) ranked.push_back(&v);
    }
    std::sort(ranked.begin(), ranked.end(), [](const Verdict* a, const Verdict* b) { return a->rank < b->rank; });
    std::vector<std::string> why(c.entries().size());
    for (const Verdict& v : selection.verdicts) {
      if (v.eligible) continue;
      std::string w;
      for (const Failure& f : v.failures) {
        w += (w.empty() ? "" : "; ") + f.requirement + " needs " + f.needed + ", has " + f.has;
      }
      why[v.index] = w.empty() ? "not eligible" : w;
    }
    for (const Verdict* v : ranked) {
      const Entry& e = c.entries()[v->index];
      const Bytes payload = c.payload(e.index).value();
      auto handle = std::unique_ptr<FatHandle>(new (std::nothrow) FatHandle());
      if (!handle) return R::Error::MemoryAllocationFailed;
      const bool program = payload_is_program(c, e);
      std::string id;
      if (!program) {
        const nfat::manifest::Entry* me = manifest.value().entry(e.index);
        id = delegate_backend_id(e.backend_id);
        if (me != nullptr && me->executorch_backends() != nullptr && me->executorch_backends()->size() == 1) {
          id = me->executorch_backends()->Get(0)->str();
        }
      }
      Tried::Key tried{reinterpret_cast<std::uintptr_t>(payload.data), payload.size, Depth::level(), id};
      std::string outcome;
      if (const std::string* before = Tried::find(tried)) {
        outcome = *before;
      } else {
        if (program) {
          // fatpte's reader and ExecuTorch both read the program where it lies, as a flatbuffer,
          // which must be aligned like any (a version 1 payload may start at an odd offset): one
          // aligned copy, made before either reads it, serves both.
          Buffer copy;
          Bytes aligned = payload;
          if (reinterpret_cast<std::uintptr_t>(payload.data) % alignof(std::max_align_t) != 0) {
            copy = zeroed(static_cast<std::size_t>(payload.size));
            if (copy) {
              std::memcpy(copy.get(), payload.data, static_cast<std::size_t>(payload.size));
              aligned = Bytes{copy.get(), payload.size};
            }
          }
          if (reinterpret_cast<std::uintptr_t>(aligned.data) % alignof(std::max_align_t) != 0) {
            outcome = "cannot allocate an aligned copy of the nested program";
          } else {
            outcome = nested_missing(aligned, e, context.get_method_name());
            if (outcome.empty()) outcome = load_nested(payload, std::move(copy), context, *handle);
            if (outcome.empty() && self_test_wanted(context)) {
              std::string passed;
              outcome = self_test_nested(c, e, payload, context, *handle, passed);
              if (outcome.empty() && !passed.empty()) news.push_back("entry " + entry_label(e) + ": " + passed);
            }
          }
        } else {
          outcome = backend_missing(id);
          if (outcome.empty()) outcome = forward_init(id, payload, processed, context, compile_specs, *handle);
        }
        if (!outcome.empty()) Tried::add(std::move(tried), outcome);
      }
      if (outcome.empty()) {
        const std::string ran = "running entry " + entry_label(e) + (handle->nested ? " as a nested program" : "");
        if (first_time(ran)) news.push_back(ran + " (said once per process)");
        say(news);
        return handle.release();
      }
      why[e.index] = outcome;
      news.push_back("entry " + entry_label(e) + " skipped: " + detail::printable(outcome));
    }
    say(news);
    Tried::add(ran_none, "no entry ran");
    if (!rejected) log_lines(explain(c, selection));  // every entry was eligible: the whole ranking
    // One log line per entry: ExecuTorch cuts a log line at 256 bytes.
    const Status none = fail(Error::NO_SPECIALIZATION_FITS, kNoOffset, "",
                             "no entry of the fat delegate can run in this process (registered and available "
                             "ExecuTorch backends: %s); each entry and what it needed follows",
                             joined(device.executorch_backends.value()).c_str());
    refuse(none);
    for (const Entry& e : c.entries()) {  // names, ids and reasons quote the file: escaped
      ET_LOG(Error, "fatpte fat delegate: %s: entry %s: %s", error_tag(none.code()), entry_label(e).c_str(),
             detail::printable(why[e.index]).c_str());
    }
    return R::Error::NotSupported;
  }

  R::Error execute(R::BackendExecutionContext& context, R::DelegateHandle* handle,
                   R::Span<R::EValue*> args) const override {
    auto* h = static_cast<FatHandle*>(handle);
    if (h == nullptr) return R::Error::DelegateInvalidHandle;
    if (h->nested) return h->nested->execute(args);
    return h->backend->execute(context, h->inner, args);
  }

  void destroy(R::DelegateHandle* handle) const override {
    auto* h = static_cast<FatHandle*>(handle);
    if (h == nullptr) return;
    if (h->backend != nullptr) h->backend->destroy(h->inner);
    delete h;
  }

 private:
  std::string id_;

  static std::string joined(const std::set<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "none" : out;
  }

  static R::Error refuse(const Status& status, R::Error error = R::Error::InvalidProgram) {
    ET_LOG(Error, "fatpte fat delegate: %s", status.describe().c_str());
    return error;
  }

  // Forward init to backend `id` with a view of the entry's payload (zero-copy: the bytes stay in
  // the outer program's segment). When the inner backend frees its view, as backends do once they
  // have copied what they need, the outer buffer is freed too.
  static std::string forward_init(const std::string& id, Bytes payload, R::FreeableBuffer* processed,
                                  R::BackendInitContext& context, R::ArrayRef<R::CompileSpec> compile_specs,
                                  FatHandle& handle) {
    R::BackendInterface* backend = R::get_backend_class(id.c_str());
    R::FreeableBuffer view(payload.data, static_cast<size_t>(payload.size), nullptr);
    Capture capture;
    R::Result<R::DelegateHandle*> inner = backend->init(context, &view, compile_specs);
    if (!inner.ok()) return et_reason((id + " could not initialise the payload (init)").c_str(), inner.error(), capture);
    handle.backend = backend;
    handle.inner = inner.get();
    if (view.data() == nullptr) processed->Free();
    return "";
  }

  // The opt-in self-test of a nested program entry (load-time option `self_test`): its golden calls
  // of the loaded method, in order; then a fresh load to serve. "" when it passed (`passed` then
  // says what ran), else the reason the entry is skipped.
  static std::string self_test_nested(const Container& c, const Entry& e, Bytes payload, R::BackendInitContext& context,
                                      FatHandle& handle, std::string& passed) {
    Result<std::vector<GoldenCallSpec>> calls = golden_calls(c, e.index);
    if (!calls.ok()) return "self-test: " + calls.error().describe();
    std::vector<const GoldenCallSpec*> mine;
    for (const GoldenCallSpec& call : calls.value()) {
      if (call.method == handle.nested->name()) mine.push_back(&call);
    }
    if (mine.empty()) {
      passed = "self-test: no golden calls of method '" + detail::printable(handle.nested->name()) + "'";
      return "";
    }
    std::vector<GoldenCallSpec> made;
    for (const GoldenCallSpec* call : mine) made.push_back(*call);
    const Status damage = check_golden_segments(c, made);
    if (!damage.ok()) return "self-test: " + damage.describe();
    for (const GoldenCallSpec& call : made) {
      const std::string why = handle.nested->golden(call);
      if (!why.empty()) {
        handle.nested.reset();
        return "self-test failed: " + fail(Error::GOLDEN_MISMATCH, kNoOffset, "", "golden call %u of method '%s', %s",
                                           call.index, call.method.c_str(), why.c_str()).describe();
      }
    }
    passed = "self-test: " + std::to_string(made.size()) + " golden call" + (made.size() == 1 ? "" : "s") +
             " passed";
    // Served from the program's initial state: loaded again.
    handle.nested.reset();
    Buffer copy;
    if (reinterpret_cast<std::uintptr_t>(payload.data) % alignof(std::max_align_t) != 0) {
      copy = zeroed(static_cast<std::size_t>(payload.size));
      if (!copy) return "cannot allocate an aligned copy of the nested program";
      std::memcpy(copy.get(), payload.data, static_cast<std::size_t>(payload.size));
    }
    return load_nested(payload, std::move(copy), context, handle);
  }

  // `copy`: the payload's aligned copy when it does not lie aligned (ExecuTorch reads the program
  // in place), else empty.
  static std::string load_nested(Bytes payload, Buffer copy, R::BackendInitContext& context, FatHandle& handle) {
    auto nested = std::make_unique<NestedProgram>(payload.data, static_cast<std::size_t>(payload.size), std::move(copy));
    const std::string why = nested->load(context.get_method_name(), context.get_named_data_map());
    if (!why.empty()) return why;
    handle.nested = std::move(nested);
    return "";
  }
};

}  // namespace

R::Error register_fat_backend(const char* id) {
  // ExecuTorch's registry keeps the backend's and the names' pointers for the life of the
  // process, and a program (a Module in some other static) may still be destroyed, calling the
  // backend's destroy, after this library's static destructors ran: so none of them is ever
  // destroyed. That also leaves nothing of this library to run at exit.
  // One backend object per id, so an alias knows it is one.
  static std::mutex mutex;
  static std::deque<FatBackend>& backends = *new std::deque<FatBackend>();
  if (id == nullptr || id[0] == '\0' || std::strlen(id) > kMaxIdBytes) return R::Error::InvalidArgument;
  std::lock_guard<std::mutex> lock(mutex);
  for (const FatBackend& b : backends) {
    if (b.id() == id && R::get_backend_class(id) == &b) return R::Error::Ok;
  }
  if (R::get_backend_class(id) != nullptr) return R::Error::InvalidArgument;  // another backend holds it (as ExecuTorch says)
  backends.emplace_back(id);
  const R::Error registered = R::register_backend(R::Backend{backends.back().id().c_str(), &backends.back()});
  if (registered != R::Error::Ok) backends.pop_back();
  return registered;
}

}  // namespace et
}  // namespace fatpte
