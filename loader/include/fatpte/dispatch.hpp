// dispatch.hpp: loading the chosen entry of a container into the runtime that runs it, with
// fallback to the next eligible entry, and running it.
//
// Two kinds of payload are run:
// - ExecuTorch programs (payload kind ET12, or a version 1 payload whose bytes 4..8 are ET12):
//   loaded with ExecuTorch's own runtime (libexecutorch.so, linked) from the container's mapping,
//   zero-copy, the shared named data served through ExecuTorch's NamedDataMap interface. The
//   ExecuTorch backends a method needs are read from the program's delegates first; their
//   libraries are loaded at run time (dlopen RTLD_LAZY | RTLD_GLOBAL) from what the caller
//   configures, and ExecuTorch's registry is asked whether each one is registered and available.
//   Built only with the ExecuTorch SDK (CMake option FATPTE_EXECUTORCH); without it such entries
//   are skipped with that reason.
// - Any other payload: fatpte's example backend ABI (backend.h), a library
//   libfatpte_backend_<backend_id>.so that runs one float32 tensor in, one out.
//
// Libraries are looked up only where the caller says (LoadOptions), never at a path taken from
// the container. The eligible entries are tried in rank order, each by its index in the table;
// for each one, in this order: its selection verdict, whether the backends and libraries it needs
// are there (from the manifest, before a byte of the payload is read), in a container read
// through the C reader whether every byte the attempt reads was fetched (Container::present;
// "not fetched: ..." otherwise, and nothing of it is read), the SHA-256 of its payload
// and the named data it lists against the signed statement (when a signature is required), then
// the load. An entry is skipped, with the reason recorded, when a library it needs is withheld,
// missing, cannot be opened or is refused, when a backend is not registered or not available, or
// when the runtime refuses the program or fails to load the method (ExecuTorch's error code and
// log line are kept). Damage and tampering are not reasons to fall back: a payload or named-data
// segment whose CRC32C does not match stops the load with that error (E0208, E0305) before the
// runtime sees a byte of it, and so does an entry whose bytes do not hash as signed (E1311).
#ifndef FATPTE_DISPATCH_HPP_
#define FATPTE_DISPATCH_HPP_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fatpte/backend.h"
#include "fatpte/container.hpp"
#include "fatpte/device.hpp"
#include "fatpte/result.hpp"
#include "fatpte/select.hpp"
#include "fatpte/signature.hpp"
#include "fatpte/tensor.hpp"

namespace fatpte {

// Where backend libraries come from. The search path is `search_path`, then each folder of
// FATPTE_BACKEND_PATH (':'-separated, when use_environment); for ExecuTorch libraries, then the
// build's default folder (the ExecuTorch SDK's library folder, when use_build_default).
//
// `libraries` maps an ExecuTorch backend id (as a program's delegates name it, e.g.
// "XnnpackBackend") to its library: a file name searched in the search path, or a path (it
// contains a '/'). An empty value withholds the backend: entries that need it are skipped. A
// backend id not in the map is looked up by ExecuTorch's naming of its shipped libraries:
// `FooBackend` -> libexecutorch_backend_foo.so (the id without "Backend", lowercased). The key
// "kernels", and any key starting with "kernels_", names an operator library, loaded before the
// first ExecuTorch program so that operators outside delegates can run; with use_build_default,
// "kernels" defaults to libexecutorch_kernels_optimized.so (ExecuTorch's portable and optimized
// CPU kernels).
struct LoadOptions {
  std::string method = "forward";  // the method of an ExecuTorch program to load
  std::vector<std::string> search_path;
  std::map<std::string, std::string> libraries;
  bool use_environment = true;
  bool use_build_default = true;
  // Vendor runtimes (specs/device-profile.md 9.1): name ("openvino") -> the path of its library,
  // looked at before the runtime's variable (OPENVINO_LIB_PATH), the Python environments and the
  // system's search; "" withholds it: entries whose backend needs it are skipped, and the probe
  // lists none of its devices. fatpte-run: --vendor-runtime NAME=PATH.
  std::map<std::string, std::string> vendor_runtimes;
  // Bounds of the memory ExecuTorch gets for one loaded method (loader/README.md, "Memory"): the
  // method allocator holds the method's values, tensor headers and delegate handles; the temp
  // allocator the scratch memory kernels ask for during one execute; planned memory the
  // buffers MethodMeta asks for (activations, inputs, outputs, mutable state), reserved rather than
  // committed: a page counts once the program writes it. Unset: default_planned_memory_limit()
  // (device.hpp: half this machine's memory, at most 64 GiB); a method asking for more is skipped
  // with the reason, its buffers never reserved.
  std::uint64_t method_allocator_limit = std::uint64_t{256} << 20;
  std::uint64_t temp_allocator_limit = std::uint64_t{256} << 20;
  std::optional<std::uint64_t> planned_memory_limit;
  // Signed loading (specs/nfat-signature.md section 6): when set, the container's signature must
  // verify with one of these keys (steps 1 to 8) before any entry is tried, and each entry's
  // payload and the named data it lists must hash as signed (steps 9 and 10) before a byte of
  // them is read for loading; otherwise the load stops with the verification's error (exit 5 in
  // fatpte-run). `detached_signature` is a detached bundle; empty: the container's own.
  std::shared_ptr<const TrustedKeys> trusted_keys;
  std::vector<std::uint8_t> detached_signature;
  // With a signature required: refuse a container from which the entry this device would get among
  // the signed entries was thinned away (step 11, the downgrade check; off by default).
  bool refuse_downgrade = false;
  // Whether an entry that cannot be loaded makes the next eligible one be tried (the default);
  // false: only the first, and its reason is the error.
  bool fallback = true;
  // Only this entry (its index in the table) is tried, when it is eligible: another method of an
  // entry loaded before, or one entry a check runs on purpose.
  std::optional<std::uint32_t> only_entry;
  // Who set these options, for the words of the reasons: an application (false: they name the
  // options, e.g. a library mapped to none) or fatpte-run (true: they name its flags).
  bool command_line = false;
  // Run each loaded entry's golden calls before serving it (fatpte/self_test.hpp): a mismatch is a
  // failed load, and the next eligible entry is tried with the finding as the reason.
  bool self_test = false;
  // Isolated qualification (issue 38; loader/src/run/qualify.hpp): before an entry is loaded in
  // this process, a child process (fatpte-run, an exec'd program: this process never maps the
  // entry's libraries first) loads it and runs its golden calls of the method, or, when it has
  // none, the one call `isolate_inputs` (none given: only the load). A crash (any signal), a
  // non-zero exit or the child running past `isolate_timeout_ms` (killed then) demotes the entry
  // with that reason (the signal's name: SIGSEGV, SIGILL, ...) and the next eligible entry is
  // tried. With it, the golden calls run in the child, and `self_test` runs none in this process.
  bool isolate = false;
  std::uint32_t isolate_timeout_ms = 30000;
  std::vector<Tensor> isolate_inputs;
  // The child program: "" is fatpte-run beside the file libfatpte's code is in (or, for an
  // installed library in lib/, in ../bin); `isolate_launcher` words go before it (e.g. qemu-aarch64
  // -cpu cortex-a53); the child's environment holds only the variables named here, from ours.
  std::string qualifier;
  std::vector<std::string> isolate_launcher;
  std::vector<std::string> isolate_environment;
  // Fallback after load (issue 38; loader/src/field/fallback.hpp), for the entry points that
  // serve calls (the C API's fatpte_execute, ContainerModule::execute): with `fallback`, a call
  // that the entry fails (an execute error; not inputs that do not fit the method) marks it failed,
  // loads the next eligible entry (its state initialised from its own program) and retries the
  // call once. Opt-in: an output holding NaN or an infinity counts as a failure
  // (`check_finite`), and so does a call running past `call_deadline_ms` (0: none; the call then
  // runs on a worker thread that is abandoned, with the entry, at the deadline).
  bool check_finite = false;
  std::uint32_t call_deadline_ms = 0;
  // The verdict store (specs/verdicts.md): the folder that holds this application's store file
  // `verdicts_name`.verdicts.json (created when missing), or "" for none; default_verdicts_dir()
  // is where an application keeps it unless it has a reason not to. With one, an entry the store
  // remembers crashing or disagreeing is skipped without being tried, one it remembers passing is
  // served without its golden calls, and any other is tried under the crash journal: a record
  // written (and synced) before its load and self-test, replaced by the verdict after them.
  std::string verdicts;
  std::string verdicts_name = "fatpte";
  // Receipts (specs/receipts.md): called once at the end of each load, whatever its outcome, with
  // one line of JSON (no newline) saying what was chosen and why every other entry was not, the
  // self-test, the verdict store's hits, the device and the runtime. `receipt_name` is the
  // container's name as receipts give it (a file name, never a path, unless the caller puts one);
  // without `receipt_details` a receipt holds reason codes, not the reasons' words (which can
  // name library paths).
  std::function<void(const std::string& line)> receipt;
  std::string receipt_name;
  bool receipt_details = false;
};

// $XDG_CACHE_HOME/fatpte/verdicts, else $HOME/.cache/fatpte/verdicts; "" when neither is set.
std::string default_verdicts_dir();

// "ID=PATH" (as `--backend-lib` gives it) into options.libraries; "ID=" withholds ID.
Status set_backend_library(LoadOptions& options, const std::string& assignment);
// "NAME=PATH" (as `--vendor-runtime` gives it) into options.vendor_runtimes; "NAME=" withholds the
// runtime. INVALID_ARGUMENT naming the runtimes there are when NAME is none of them.
Status set_vendor_runtime(LoadOptions& options, const std::string& assignment);
// A backend map file: {"search_path": ["dir", ...], "libraries": {"ID": "file or path", ...}}.
// Relative paths in it are taken from the file's folder; its entries override earlier ones and
// its folders come after those already configured. INVALID_ARGUMENT naming the field.
Status read_backend_map(LoadOptions& options, const std::string& path);
// The folders searched, in order: for example backend libraries, and for ExecuTorch's, with
// use_build_default, then: in a binary of the build tree, the SDK's library folder and the build
// folder (the fat delegate library); in any other copy (an install prefix, moved or not), its own
// folder, its lib/ (a tool in bin/) and the folder of the libexecutorch.so the process runs, never
// the SDK or build folder it was configured with (docs/cpp.md, "Install trees").
std::vector<std::string> backend_search_path(const LoadOptions& options);
std::vector<std::string> executorch_search_path(const LoadOptions& options);
// The folder of the file libfatpte's code is in (libfatpte.so, or the program it is linked into),
// symbolic links resolved; "" when the system does not say.
std::string own_library_dir();
// The ExecuTorch backends this process's runtime provides (registered, and available) once every
// backend library (`libexecutorch_backend_*`) of executorch_search_path(options) is loaded: what a
// device profile's executorch_backends are for this machine's runtime (specs/device-profile.md
// 5.1). A library that cannot be loaded (a vendor SDK it needs is absent) provides nothing; one
// the options withhold is not loaded. Empty in a build without the ExecuTorch SDK.
std::set<std::string> runtime_backends(const LoadOptions& options);
// The same after a probe of this machine with the options' vendor runtimes (probe_host(scope,
// &searched), scope.vendor_runtimes = options.vendor_runtimes): each runtime it searched is handed
// to its backend as found there, rather than searched again.
std::set<std::string> runtime_backends(const LoadOptions& options, const std::vector<VendorRuntimeSearch>& searched);
// The library file of an ExecuTorch backend id by ExecuTorch's naming (see LoadOptions).
std::string executorch_library_name(const std::string& backend_id);
// The library file name of a backend id of fatpte's example ABI on this platform.
std::string backend_library_name(const std::string& backend_id);
// The ExecuTorch SDK's library folder this build was configured with; "" without the SDK.
const char* build_executorch_library_dir() noexcept;
// Whether this build runs ExecuTorch programs.
bool has_executorch() noexcept;
// Whether the lines ExecuTorch logs once libfatpte has initialised its runtime also reach the log
// handler it had before (its default prints them on stderr, e.g. cpuinfo's `Failed to open midr
// file`); default no: an application hears them only when it asks. The Error lines logged while
// an entry loads are kept in the attempt's reason either way. (fatpte-run: --executorch-log.)
void set_executorch_log(bool forward);

// One entry tried.
struct Attempt {
  std::uint32_t index = 0;            // entry tried
  std::string outcome;                // "loaded", or why the entry was skipped
  std::string library;                // the library that decided (path or file name), or ""
  std::vector<std::string> details;   // the steps, for an explanation
  // The verdict store's record that decided (LoadOptions::verdicts): "pass" (served without its
  // golden calls), "fail" or "crash" (skipped without being tried), or "" (none).
  std::string remembered;
};

// A loaded entry: one method of a program, ready to run; keeps its state (mutable buffers, KV
// caches) from one run to the next. Not thread-safe. Must not outlive the Container.
class Loaded {
 public:
  virtual ~Loaded() = default;
  Loaded(const Loaded&) = delete;
  Loaded& operator=(const Loaded&) = delete;
  std::uint32_t index() const noexcept { return index_; }
  const std::string& method() const noexcept { return method_; }
  // One call: `inputs` in the method's order; the outputs, copied out of the runtime's memory.
  virtual Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) = 0;

 protected:
  Loaded(std::uint32_t index, std::string method) : index_(index), method_(std::move(method)) {}

 private:
  std::uint32_t index_;
  std::string method_;
};

struct Dispatch {
  std::unique_ptr<Loaded> loaded;
  std::vector<Attempt> attempts;  // in the order tried, the last one "loaded" when one loaded
  std::vector<std::string> notes;  // process-wide steps: the signature, operator libraries loaded or missing
  // The selection, when load() made it (the overload that takes a Choice).
  std::optional<Selection> selection;
  std::string signature_key_id;  // the trusted key that verified the signature, when one was required
  // The verified statement, when a signature was required: a self-test of the loaded entry
  // (self_test.hpp, SelfTestOptions::signature) makes only the golden calls it vouches for.
  std::shared_ptr<const SignatureCheck> signature;
  // Each vendor runtime the load's probe of this machine looked for, where it was found or every
  // place looked (specs/device-profile.md 9.1); empty when the load probed no accelerator.
  std::vector<VendorRuntimeSearch> vendor_runtimes;
};

// What to choose for: the device (absent: this machine, probed for only the facts some entry's
// requirements read, as select(c, probe_host(probe_scope(c)), ...) does) and the caller's words.
struct Choice {
  std::optional<DeviceProfile> device;
  std::vector<std::string> prefer;
  std::vector<std::string> exclude;
};

// Every named-data key of the container and the bytes of its segment (zero-copy, in the
// mapping), read from the manifest after its checksum and the flatbuffers verifier passed; empty
// without one.
Result<std::map<std::string, Bytes>> named_data_map(const Container& container);

// The whole load policy: verify the signature when the options require one, select for the
// choice, then load the best eligible entry that loads, falling back as the options say. `out`
// records every step whatever the outcome (the selection, the signature's key, every attempt and
// its reason), so a caller can explain a failure as well as a success. When no entry loads:
// NO_SPECIALIZATION_FITS, the message listing every attempt and why it failed. A damaged payload
// or segment, a signature that does not verify or bytes that do not hash as signed: their error.
Status load(const Container& container, const Choice& choice, const LoadOptions& options, Dispatch& out);
// The same for a selection already made (for `device`).
Result<Dispatch> load(const Container& container, const Selection& selection, const DeviceProfile& device,
                      const LoadOptions& options);
// The same when `device` is this machine as a probe found it, which searched for the vendor runtimes
// of `searched` (probe_host(scope, &searched)): each the options give no path of their own is the
// load's record (Dispatch::vendor_runtimes, its `vendor runtime NAME:` line) and is handed to its
// backend as that search found it, rather than searched again (a runtime the options name is
// searched with their path when its backend is asked for). What the C API's fatpte_load_with does
// with a selection of fatpte_select(NULL, ...).
Result<Dispatch> load(const Container& container, const Selection& selection, const DeviceProfile& device,
                      const LoadOptions& options, const std::vector<VendorRuntimeSearch>& searched);
// The attempts as lines for an explanation: `dispatch: NAME [ID]: OUTCOME (LIBRARY)`, each
// followed by its details indented, after the notes.
std::string explain_dispatch(const Container& container, const Dispatch& dispatch);
// Dispatch::vendor_runtimes as the JSON list of a run report's `vendor_runtimes`
// (specs/run-report.md); `options` are the load's (a withheld runtime names the option).
std::string vendor_runtimes_json(const Dispatch& dispatch, const LoadOptions& options);

}  // namespace fatpte

#endif  // FATPTE_DISPATCH_HPP_
