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

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/log.h>

#include "common/text.hpp"
#include "container/golden.hpp"
#include "container/manifest_view.hpp"
#include "delegate/isolate.hpp"
#include "entries/program_reader.hpp"
#include "executorch/memory.hpp"
#include "executorch/method.hpp"
#include "executorch/program.hpp"
#include "executorch/runtime.hpp"
#include "fatpte/container.hpp"
#include "fatpte/device.hpp"
#include "fatpte/format.hpp"
#include "fatpte/result.hpp"
#include "fatpte/select.hpp"
#include "fatpte/status.hpp"
#include "fatpte/vendor_search.hpp"
#include "vendor/runtimes.hpp"

namespace fatpte {
namespace et {
namespace {

namespace R = executorch::runtime;

// What a nested program's method allocators may take: the same defaults as the loader's LoadOptions.
constexpr std::uint64_t kMethodAllocatorLimit = std::uint64_t{256} << 20;
constexpr std::uint64_t kTempAllocatorLimit = std::uint64_t{256} << 20;
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

// The probe with accelerators, and where it found each vendor runtime or every place it looked.
struct HostProbe {
  DeviceProfile profile;
  std::vector<VendorRuntimeSearch> searched;
  HostProbe() { profile = probe_host(ProbeScope{}, &searched); }
};

// This machine, probed once per process (accelerators only when an entry asks about them).
// Function-local statics rather than std::call_once, whose glibc pthread_once makes a futex
// system call the first time. With accelerators, the probe's search of each vendor runtime is
// handed to the backend that opens it, as a load's is (run/dispatch.cpp): the backend's decision
// is the probe's when none is kept yet, so an init searches once (specs/device-profile.md 9.1).
const DeviceProfile& host(bool accelerators) {
  if (accelerators) {
    static const HostProbe& kFull = *new HostProbe();  // never destroyed
    for (const VendorRuntimeSearch& where : kFull.searched) vendor::decide(*vendor::runtime_named(where.name), where);
    return kFull.profile;
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

// A whole program carried as an entry's payload, run as the delegate's computation through the
// method type (executorch/method.hpp): its method's inputs are the delegate call's inputs and its
// outputs are copied into the call's outputs. Its planned memory (activations, mutable state)
// lives as long as the delegate, so state carries from one call to the next.
class NestedProgram {
 public:
  NestedProgram(const std::uint8_t* data, std::size_t size, Buffer copy)
      : method_(Bytes{data, size}, std::move(copy), limits()) {}

  ~NestedProgram() {
    if (method_.copied()) Tried::forget(method_.program_bytes().data, static_cast<std::size_t>(method_.program_bytes().size));
  }
  NestedProgram(const NestedProgram&) = delete;
  NestedProgram& operator=(const NestedProgram&) = delete;

  // "" when the method is loaded (with the entry's signature adapter, `me`'s), else why not.
  std::string load(const char* wanted, const R::NamedDataMap* named_data, const nfat::manifest::Entry* me) {
    Capture capture;
    const R::Error loaded = method_.load_program();
    if (loaded != R::Error::Ok) return et_reason("ExecuTorch refused the nested program (Program::load)", loaded, capture);
    std::string name;
    const std::string unnamed = method_name(wanted, name);
    if (!unnamed.empty()) return unnamed;
    R::Result<R::MethodMeta> meta = method_.program().method_meta(name.c_str());
    if (!meta.ok()) return et_reason("the nested program's method cannot be described", meta.error(), capture);
    std::uint64_t total = 0;
    const std::string why = method_.reserve(name, meta.get(), total);
    if (!why.empty()) return "the nested program: " + why;
    const R::Error e = method_.load_method(named_data);
    if (e != R::Error::Ok) return et_reason(("ExecuTorch could not load the nested method '" + name + "'").c_str(), e, capture);
    EdgeAdapter adapter = edge_adapter(me, name);
    if (adapter.empty()) return "";
    const std::string unfit = method_.adapt(std::move(adapter));
    return unfit.empty() ? "" : "the nested program: " + unfit;
  }

  const std::string& name() const noexcept { return method_.name(); }

  // Golden call `call` on the loaded method (ProgramMethod::golden). The method's state changes;
  // the caller loads a fresh program to serve.
  std::string golden(const GoldenCallSpec& call) { return method_.golden(call); }

  R::Error execute(R::Span<R::EValue*> args) { return method_.forward(args); }

 private:
  // What a nested program may take: the same defaults as the loader's LoadOptions (planned memory:
  // default_planned_memory_limit(), half the device's memory, at most 64 GiB, reserved not committed).
  static MethodLimits limits() {
    MethodLimits out;
    out.method_allocator = kMethodAllocatorLimit;
    out.temp_allocator = kTempAllocatorLimit;
    out.planned = default_planned_memory_limit();
    out.planned_origin = default_planned_memory_origin();
    return out;
  }

  // The outer method's name when the nested program has it, else its only method: "" with `name`
  // set, else why not.
  std::string method_name(const char* wanted, std::string& name) const {
    name = wanted != nullptr ? wanted : "forward";
    if (method_.program().method_meta(name.c_str()).ok()) return "";
    if (method_.program().num_methods() != 1) return "the nested program has no method '" + name + "'";
    name = method_.program().get_method_name(0).get();
    // ExecuTorch logs a name it is asked about as it is: one from the file that is not printable
    // text (a control character, bytes that are not UTF-8) would reach the terminal raw. (The
    // reason is escaped where it is logged.)
    if (detail::printable(name) != name) {
      return "the nested program's only method is named '" + name +
             "', which is not printable text: ExecuTorch is not asked for it";
    }
    return "";
  }

  ProgramMethod method_;
};

struct FatHandle {
  R::BackendInterface* backend = nullptr;  // the chosen entry's backend, or nullptr for a nested program
  R::DelegateHandle* inner = nullptr;
  std::unique_ptr<NestedProgram> nested;
};

// Why entry `e` (a nested program) cannot run here, "" when its backends are all present; the
// program is read (as Python reads it, then its verified flatbuffer: the validator's codes) but
// not loaded.
std::string nested_missing(const Bytes payload, const Entry& e, const char* method) {
  const std::string field = "entries[" + std::to_string(e.index) + "].payload";
  Result<ProgramInfo> info = entries::read_program_validated(payload, e.offset, field);
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
    const Tried::Key ran_none{reinterpret_cast<std::uintptr_t>(processed->data()), Tried::kAnySize, Depth::level(),
                              Tried::kContainer};
    if (const std::optional<R::Error> declined = decline(processed, ran_none)) return *declined;
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
    const DeviceProfile device = device_for(c, manifest.value());
    const std::vector<std::string> prefer = words(context, "prefer");
    const std::vector<std::string> exclude = words(context, "exclude");
    Result<Selection> assessed = assess(c, device, prefer, exclude);
    if (!assessed.ok()) return refuse(assessed.error());
    const Selection& selection = assessed.value();
    // The log says which entries were rejected and why, which were skipped and why, and the entry
    // that runs: each line once per process (first_time), said together in as few messages as
    // they fit in (say), since each message is a write to stderr and a wake-up of whatever reads it.
    std::vector<std::string> news;
    std::vector<std::string> why(c.entries().size());
    const bool rejected = note_rejected(c, selection, news, why);
    for (const Verdict* v : ranked(selection)) {
      const Entry& e = c.entries()[v->index];
      auto handle = std::unique_ptr<FatHandle>(new (std::nothrow) FatHandle());
      if (!handle) return R::Error::MemoryAllocationFailed;
      const std::string outcome = try_entry(c, manifest.value(), e, processed, context, compile_specs, *handle, news);
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
    return refuse_all(c, device, why);
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

  // Under another producer's id (an alias: upstream's NativeBackend), a payload that is not an
  // NFAT container is that backend's own and no fat delegate: declined as a backend declines a
  // payload it does not run, at Info level (it is no error of the file), so the entry holding
  // the program falls back as for any such backend. No other backend can hold the id in the
  // same process (ExecuTorch's registry has one backend per id), so there is none to hand it to.
  // A container refused at this depth, or that validated here and then ran no entry (`ran_none`),
  // runs none whatever size the payload gives it: a shorter or longer region from the same first
  // byte (version 1 entries may overlap) is refused by validation, or holds the same table and
  // entries. Past the deepest level, refused. The error to return, or nothing when init goes on.
  std::optional<R::Error> decline(R::FreeableBuffer* processed, const Tried::Key& ran_none) const {
    if (id_ != kFatBackendId &&
        (processed->size() < format::kMagicSize || std::memcmp(processed->data(), format::kMagic, format::kMagicSize) != 0)) {
      const std::string line = "registered as " + detail::printable(id_) + ": a payload that is not an NFAT container "
                               "is " + detail::printable(id_) + "'s own, not a fat delegate; declined (this process has "
                               "no other " + detail::printable(id_) + ")";
      if (first_time(line)) ET_LOG(Info, "fatpte fat delegate: %s", line.c_str());
      return R::Error::NotSupported;
    }
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
    return std::nullopt;
  }

  // Probing the machine (cpuid, /proc) costs about 80 us, 2% of loading a small model: only when
  // an entry states a requirement that needs it. Otherwise the profile has no facts but the
  // registry's backends, which is all selection then reads.
  static DeviceProfile device_for(const Container& c, const ManifestView& manifest) {
    DeviceProfile device;
    if (any_requirements(manifest.root())) {
      device = host(requires_accelerators(c));
    } else {
      device.name = "host";
    }
    device.executorch_backends = available_backends();
    return device;
  }

  // The entries selection rejected: each one's line (news the first time in the process) and its
  // reason in `why`. Whether any was rejected.
  static bool note_rejected(const Container& c, const Selection& selection, std::vector<std::string>& news,
                            std::vector<std::string>& why) {
    bool rejected = false;
    for (const Verdict& v : selection.verdicts) {
      if (v.eligible) continue;
      rejected = true;
      std::string line = explain_verdict(c.entries()[v.index], v);
      if (first_time(line)) news.push_back(std::move(line));
      std::string w;
      for (const Failure& f : v.failures) {
        w += (w.empty() ? "" : "; ") + f.requirement + " needs " + f.needed + ", has " + f.has;
      }
      why[v.index] = w.empty() ? "not eligible" : w;
    }
    return rejected;
  }

  // The eligible entries, best first.
  static std::vector<const Verdict*> ranked(const Selection& selection) {
    std::vector<const Verdict*> out;
    for (const Verdict& v : selection.verdicts) {
      if (v.eligible) out.push_back(&v);
    }
    std::sort(out.begin(), out.end(), [](const Verdict* a, const Verdict* b) { return a->rank < b->rank; });
    return out;
  }

  // Entry `e` initialised into `handle`: "" when it runs, else why not, remembered (Tried) so an
  // entry whose payload failed here is not initialised again.
  static std::string try_entry(const Container& c, const ManifestView& manifest, const Entry& e,
                               R::FreeableBuffer* processed, R::BackendInitContext& context,
                               R::ArrayRef<R::CompileSpec> compile_specs, FatHandle& handle,
                               std::vector<std::string>& news) {
    const Bytes payload = c.payload(e.index).value();
    const bool program = payload_is_program(c, e);
    std::string id;
    if (!program) {
      const nfat::manifest::Entry* me = manifest.entry(e.index);
      id = delegate_backend_id(e.backend_id);
      if (me != nullptr && me->executorch_backends() != nullptr && me->executorch_backends()->size() == 1) {
        id = me->executorch_backends()->Get(0)->str();
      }
    }
    Tried::Key tried{reinterpret_cast<std::uintptr_t>(payload.data), payload.size, Depth::level(), id};
    if (const std::string* before = Tried::find(tried)) return *before;
    std::string outcome;
    if (program) {
      outcome = try_program(c, e, payload, context, handle, news);
    } else {
      outcome = backend_missing(id);
      if (outcome.empty()) outcome = forward_init(id, payload, processed, context, compile_specs, handle);
    }
    if (!outcome.empty()) Tried::add(std::move(tried), outcome);
    return outcome;
  }

  // A nested program entry: read, loaded, and self-tested when the load asks.
  static std::string try_program(const Container& c, const Entry& e, Bytes payload, R::BackendInitContext& context,
                                 FatHandle& handle, std::vector<std::string>& news) {
    // fatpte's reader and ExecuTorch both read the program where it lies, as a flatbuffer, which
    // must be aligned like any (a version 1 payload may start at an odd offset): one aligned copy,
    // made before either reads it, serves both.
    Buffer copy;
    Bytes aligned = payload;
    if (reinterpret_cast<std::uintptr_t>(payload.data) % alignof(std::max_align_t) != 0) {
      copy = aligned_copy(payload.data, static_cast<std::size_t>(payload.size));
      if (copy) aligned = Bytes{copy.get(), payload.size};
    }
    if (reinterpret_cast<std::uintptr_t>(aligned.data) % alignof(std::max_align_t) != 0) {
      return "cannot allocate an aligned copy of the nested program";
    }
    std::string outcome = nested_missing(aligned, e, context.get_method_name());
    // With `isolate`, a child process loads it and runs its golden calls first (delegate/isolate.hpp).
    const IsolateOptions isolate = isolate_options(context);
    if (outcome.empty() && isolate.on) outcome = qualify_nested(c, e, aligned, context.get_method_name(), isolate);
    if (outcome.empty()) outcome = load_nested(c, e, payload, std::move(copy), context, handle);
    if (outcome.empty() && isolate.on) news.push_back("entry " + entry_label(e) + ": isolated qualification: passed");
    if (outcome.empty() && self_test_wanted(context) && !isolate.on) {
      std::string passed;
      outcome = self_test_nested(c, e, payload, context, handle, passed);
      if (outcome.empty() && !passed.empty()) news.push_back("entry " + entry_label(e) + ": " + passed);
    }
    return outcome;
  }

  // No entry runs: the refusal, then one log line per entry (ExecuTorch cuts a log line at 256
  // bytes); names, ids and reasons quote the file, so they are escaped.
  static R::Error refuse_all(const Container& c, const DeviceProfile& device, const std::vector<std::string>& why) {
    const Status none = fail(Error::NO_SPECIALIZATION_FITS, kNoOffset, "",
                             "no entry of the fat delegate can run in this process (registered and available "
                             "ExecuTorch backends: %s); each entry and what it needed follows",
                             joined(device.executorch_backends.value()).c_str());
    refuse(none);
    for (const Entry& e : c.entries()) {
      ET_LOG(Error, "fatpte fat delegate: %s: entry %s: %s", error_tag(none.code()), entry_label(e).c_str(),
             detail::printable(why[e.index]).c_str());
    }
    return R::Error::NotSupported;
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
      copy = aligned_copy(payload.data, static_cast<std::size_t>(payload.size));
      if (!copy) return "cannot allocate an aligned copy of the nested program";
    }
    return load_nested(c, e, payload, std::move(copy), context, handle);
  }

  // `copy`: the payload's aligned copy when it does not lie aligned (ExecuTorch reads the program
  // in place), else empty.
  static std::string load_nested(const Container& c, const Entry& e, Bytes payload, Buffer copy,
                                 R::BackendInitContext& context, FatHandle& handle) {
    auto nested = std::make_unique<NestedProgram>(payload.data, static_cast<std::size_t>(payload.size), std::move(copy));
    auto manifest = manifest_view(c);
    const nfat::manifest::Entry* me = manifest.ok() ? manifest.value().entry(e.index) : nullptr;
    const std::string why = nested->load(context.get_method_name(), context.get_named_data_map(), me);
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
