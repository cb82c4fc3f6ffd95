// Dispatch (see dispatch.hpp): the caller's library configuration, the fallback over eligible
// entries, and fatpte's example backend ABI (backend.h). ExecuTorch entries are loaded by
// run/et_runner.cpp.
#include "fatpte/dispatch.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/json.hpp"
#include "common/text.hpp"
#include "container/golden.hpp"
#include "container/manifest_view.hpp"
#include "device/origin.hpp"
#include "executorch/program.hpp"
#include "fatpte/device.hpp"
#include "run/et_runner.hpp"
#include "device/library_files.hpp"
#include "run/qualify.hpp"
#include "run/receipt.hpp"
#include "run/remember.hpp"
#include "run/self_test.hpp"
#include "vendor/runtimes.hpp"

#ifndef FATPTE_EXECUTORCH_LIBRARY_DIR
#define FATPTE_EXECUTORCH_LIBRARY_DIR ""
#endif

namespace fatpte {

namespace {

namespace M = nfat::manifest;

// ---- fatpte's example backend ABI (backend.h) ----

// The named data an example backend may look up: exactly the keys its entry's manifest record
// lists (specs/nfat-manifest.md 4.3), each segment's CRC32C checked before its bytes are first
// handed out. Another entry's keys are not there: in a signed load only the listed keys were
// hashed, and a reader that fetched only this entry's bytes has no others.
struct NamedData {
  const Container* container = nullptr;
  std::map<std::string, std::uint32_t> keys;  // key -> segment index
  std::vector<std::uint8_t> verified;          // per segment: 0 unchecked, 1 good, 2 damaged
  Status damage;
  std::mutex mutex;
  fatpte_named_data api{};
};

int lookup(void* context, const char* key, const void** data, std::uint64_t* size) {
  if (context == nullptr || key == nullptr || data == nullptr || size == nullptr) return 1;
  auto* nd = static_cast<NamedData*>(context);
  auto it = nd->keys.find(key);
  if (it == nd->keys.end()) return 1;
  const Segment& s = nd->container->segments()[it->second];
  std::lock_guard<std::mutex> lock(nd->mutex);
  if (nd->verified[it->second] == 0) {
    Status st = check_segment_integrity(nd->container->bytes(), nd->container->header(), s);
    nd->verified[it->second] = st.ok() ? 1 : 2;
    if (!st.ok() && nd->damage.ok()) nd->damage = std::move(st);
  }
  if (nd->verified[it->second] != 1) return 1;
  *data = nd->container->bytes().data + s.offset;
  *size = s.size;
  return 0;
}

Result<std::shared_ptr<NamedData>> named_data(const Container& c, const Entry& e) {
  auto nd = std::make_shared<NamedData>();
  nd->container = &c;
  nd->verified.assign(c.segments().size(), 0);
  nd->api.context = nd.get();
  nd->api.lookup = lookup;
  auto manifest = manifest_view(c);
  if (!manifest.ok()) return manifest.error();
  const M::Manifest* root = manifest.value().root();
  const M::Entry* record = manifest.value().entry(e.index);
  if (root == nullptr || root->named_data() == nullptr || record == nullptr || record->named_data() == nullptr) {
    return nd;
  }
  std::map<std::string, std::uint32_t> all;
  for (const M::NamedData* item : *root->named_data()) {
    if (item->segment() >= c.segments().size()) continue;  // validate reports it (E0414)
    all.emplace(item->key()->str(), item->segment());
  }
  for (const ::flatbuffers::String* key : *record->named_data()) {
    auto it = all.find(key->str());
    if (it != all.end()) nd->keys.insert(*it);
  }
  return nd;
}

std::string hex(std::uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(v));
  return text;
}

// In a container the C reader fills as it fetches (Container::partial), why an attempt at `e`
// would read bytes that were never fetched: its payload, a segment of the named data its record
// lists, or (self-testing) a golden tensor its calls name; "" when all were fetched, or for any
// other container. Asked once the entry's backends and libraries are found (from the table and
// the manifest), before a byte of it is read: an entry that could not run anyway is not reported
// as one to fetch.
std::string not_fetched(const Container& c, const Entry& e, bool self_test) {
  if (!c.partial()) return "";
  const std::string fetch = "; fetch the entry (fatpte_reader_fetch_entry) to have it tried";
  if (!c.present(e.offset, e.size)) {
    return "not fetched: its payload (" + std::to_string(e.size) + " bytes at " + hex(e.offset) +
           ") was not read through the reader" + fetch;
  }
  auto nd = named_data(c, e);
  if (nd.ok()) {
    for (const auto& [key, index] : nd.value()->keys) {
      const Segment& s = c.segments()[index];
      if (!c.present(s.offset, s.size)) {
        return "not fetched: its named data '" + detail::clipped(key) + "' (segments[" + std::to_string(index) +
               "]) was not read through the reader" + fetch;
      }
    }
  }
  if (!self_test) return "";
  auto calls = golden_calls(c, e.index);
  if (!calls.ok()) return "";  // the self-test stops on it, before a golden byte is read
  for (const GoldenCallSpec& call : calls.value()) {
    std::vector<const GoldenTensor*> tensors;
    for (const GoldenTensor& t : call.inputs) tensors.push_back(&t);
    for (const GoldenOutputSpec& o : call.outputs) tensors.push_back(&o.want);
    for (const GoldenTensor* t : tensors) {
      const Segment& s = c.segments()[t->segment];
      if (!c.present(s.offset, s.size)) {
        return "not fetched: its golden tensor '" + detail::clipped(t->key) + "' (segments[" +
               std::to_string(t->segment) +
               "]) was not read through the reader; fetch them (fatpte_reader_fetch_golden) to self-test it";
      }
    }
  }
  return "";
}

std::string why_text(const char* why) { return why[0] != '\0' ? std::string(why) : std::string("no reason given"); }

class ExampleLoaded final : public Loaded {
 public:
  ExampleLoaded(std::uint32_t index, const fatpte_backend* table, void* model, std::shared_ptr<NamedData> nd)
      : Loaded(index, "forward"), table_(table), model_(model), named_data_(std::move(nd)) {}
  ~ExampleLoaded() override {
    table_->unload(model_);
    // The library stays mapped: a backend may have started threads or registered handlers that
    // outlive unload, and unmapping their code would crash the process later.
  }

  // The example ABI takes one float32 tensor (its elements in order) and returns one, flat.
  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) override {
    FATPTE_CHECK(inputs.size() == 1 && inputs[0].dtype == DType::kFloat32, Error::INVALID_ARGUMENT, kNoOffset,
                 "inputs", "backend '%s' (the example ABI) takes one float32 tensor; %zu inputs were given",
                 table_->backend_id, inputs.size());
    std::vector<float> in(inputs[0].data.size() / sizeof(float));
    std::memcpy(in.data(), inputs[0].data.data(), in.size() * sizeof(float));
    std::vector<float> result(kMaxOutputs);
    char why[512] = {0};
    std::size_t count = 0;
    const int rc = table_->run(model_, in.data(), in.size(), result.data(), result.size(), &count, why, sizeof why);
    FATPTE_CHECK(rc == 0, Error::INVALID_ARGUMENT, kNoOffset, "", "backend '%s' could not run: %s",
                 table_->backend_id, why_text(why).c_str());
    FATPTE_CHECK(count <= result.size(), Error::INVALID_ARGUMENT, kNoOffset, "",
                 "backend '%s' reported %zu outputs for a buffer of %zu", table_->backend_id, count, result.size());
    Tensor out;
    out.dtype = DType::kFloat32;
    out.shape = {static_cast<std::int64_t>(count)};
    out.data.resize(count * sizeof(float));
    std::memcpy(out.data.data(), result.data(), out.data.size());
    return std::vector<Tensor>{std::move(out)};
  }

 private:
  static constexpr std::size_t kMaxOutputs = 1u << 16;
  const fatpte_backend* table_;
  void* model_;
  std::shared_ptr<NamedData> named_data_;  // the lookup context the backend may keep using
};

// The library file an example backend id names: a plain file name searched in the caller's
// folders, never a path. A version 1 backend id may hold any byte from 0x01 to 0x7f (a '/', so
// "a/../../x" would be a path); only an id of the version 2 alphabet names a library. "" when the
// id names none.
std::string example_library_file(const std::string& backend_id) {
  const bool plain = !backend_id.empty() && backend_id.size() <= 128 &&
                     backend_id.find_first_not_of(format::kIdAlphabet) == std::string::npos;
  return plain ? backend_library_name(backend_id) : std::string();
}

// Why an entry that is no program but whose manifest record says it runs on ExecuTorch backends
// (a backend's own payload, a native package) cannot be loaded here: fatpte loads whole ExecuTorch
// programs, and other payloads only through its example backend ABI. "" for any other entry.
std::string bare_backend_payload(const Container& c, const Entry& e) {
  auto manifest = manifest_view(c);
  if (!manifest.ok()) return "";
  const M::Entry* record = manifest.value().entry(e.index);
  if (record == nullptr || record->executorch_backends() == nullptr || record->executorch_backends()->size() == 0) {
    return "";
  }
  std::string ids;
  bool registered = true;
  for (const ::flatbuffers::String* id : *record->executorch_backends()) {
    ids += (ids.empty() ? "" : ", ") + id->str();
    registered = registered && et::backend_registered(id->str());
  }
  static const std::uint8_t kZip[4] = {'P', 'K', 3, 4};
  const bool package =
      e.size >= 4 && c.present(e.offset, 4) && std::memcmp(c.bytes().data + e.offset, kZip, 4) == 0;
  std::string why = std::string(package ? "a native package (.ptn)" : "a backend payload, not a whole program,") +
                    " for ExecuTorch backend " + ids + ": ";
  if (!registered) why += "this runtime has no " + ids + "; ";
  return why + "fatpte loads ExecuTorch programs (.pte) and, for other payloads, its example backend ABI";
}

// The example backend library of `e`, found, opened and asked (ABI version, id, is_available),
// before a byte of the payload is read. nullptr with attempt.outcome saying why.
const fatpte_backend* example_backend(const Entry& e, const Verdict& v, const std::string& device_json,
                                      const LoadOptions& options, const std::vector<std::string>& dirs,
                                      Attempt& attempt) {
  const std::string file = example_library_file(e.backend_id);
  if (file.empty()) {
    attempt.outcome = "no library is looked up for a backend id outside letters, digits, '_', '-' and '.' "
                      "(a library name taken from a file is never a path)";
    return nullptr;
  }
  attempt.library = file;
  if (options.method != "forward") {
    attempt.outcome = "the example backend ABI has one method, 'forward', not '" + options.method + "'";
    return nullptr;
  }
  const std::string found = detail::find_library(file, dirs);
  if (found.empty()) {
    attempt.outcome = "library " + file + " " + detail::not_found(file, dirs);
    return nullptr;
  }
  attempt.library = found;
  void* lib = dlopen(found.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    attempt.outcome = std::string("cannot open the library: ") + (err ? err : "unknown error");
    return nullptr;
  }
  // POSIX guarantees a symbol address from dlsym converts to a function pointer.
  auto entry = reinterpret_cast<fatpte_backend_entry>(dlsym(lib, FATPTE_BACKEND_ENTRY_SYMBOL));
  const fatpte_backend* table = entry != nullptr ? entry() : nullptr;
  // Refused or failed: the library is left mapped (see ~ExampleLoaded) but never called again.
  if (table == nullptr) {
    attempt.outcome = std::string("the library does not export ") + FATPTE_BACKEND_ENTRY_SYMBOL;
  } else if (v.has_backend_abi && (table->abi_version < v.backend_abi_min || table->abi_version > v.backend_abi_max)) {
    // The entry's own range first (specs/nfat-manifest.md 4.2): like a missing library, a
    // reason to fall back to the next eligible entry, and the library is never called.
    attempt.outcome = "refused: backend library " + file + " reports ABI version " + std::to_string(table->abi_version) +
                      ", the entry needs " + std::to_string(v.backend_abi_min) + ".." +
                      std::to_string(v.backend_abi_max);
  } else if (table->abi_version != FATPTE_BACKEND_ABI_VERSION) {
    attempt.outcome = "refused: the library speaks backend ABI version " + std::to_string(table->abi_version) +
                      ", this loader speaks " + std::to_string(FATPTE_BACKEND_ABI_VERSION);
  } else if (table->backend_id == nullptr || e.backend_id != table->backend_id) {
    attempt.outcome = std::string("refused: the library says it is backend '") +
                      (table->backend_id ? table->backend_id : "(null)") + "', not '" + e.backend_id + "'";
  } else if (!table->is_available || !table->load || !table->run || !table->unload) {
    attempt.outcome = "refused: the library's function table is incomplete";
  } else {
    char why[512] = {0};
    if (table->is_available(device_json.c_str(), why, sizeof why) != 0) {
      attempt.outcome = "not available on this machine: " + why_text(why);
      return nullptr;
    }
    return table;
  }
  return nullptr;
}

// Load `e` into its example backend `table`. Fails only for damage; otherwise `out` or the reason.
Status load_example(const Container& c, const Entry& e, const fatpte_backend* table, Attempt& attempt,
                    std::unique_ptr<Loaded>& out) {
  FATPTE_RETURN_IF_ERROR(check_payload_integrity(c.bytes(), c.header(), e));
  auto nd = named_data(c, e);
  if (!nd.ok()) return nd.error();
  Bytes payload = c.payload(e.index).value();
  void* model = nullptr;
  char why[512] = {0};
  const int rc = table->load(payload.data, payload.size, &nd.value()->api, &model, why, sizeof why);
  {
    std::lock_guard<std::mutex> lock(nd.value()->mutex);
    if (!nd.value()->damage.ok()) {
      if (rc == 0) table->unload(model);
      return nd.value()->damage;
    }
  }
  if (rc != 0) {
    attempt.outcome = "the backend could not load the payload: " + why_text(why);
    return Status();
  }
  attempt.outcome = "loaded";
  out = std::make_unique<ExampleLoaded>(e.index, table, model, nd.value());
  return Status();
}

bool valid_backend_key(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '.' || ch == '-';
  });
}

std::string resolve_from(const std::string& base, const std::string& path) {
  if (path.empty() || path[0] == '/' || base.empty()) return path;
  return base + "/" + path;
}

}  // namespace

Status set_backend_library(LoadOptions& options, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  const std::string id = eq == std::string::npos ? assignment : assignment.substr(0, eq);
  FATPTE_CHECK(eq != std::string::npos && valid_backend_key(id), Error::INVALID_ARGUMENT, kNoOffset, "--backend-lib",
               "--backend-lib takes ID=PATH (an ExecuTorch backend id such as XnnpackBackend, or kernels), "
               "or ID= to withhold it; got '%s'",
               assignment.c_str());
  options.libraries[id] = assignment.substr(eq + 1);
  return Status();
}

Status set_vendor_runtime(LoadOptions& options, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  const std::string name = assignment.substr(0, eq);
  if (eq == std::string::npos || vendor::runtime_named(name) == nullptr) {
    std::string names;
    for (const vendor::VendorRuntime& r : vendor::vendor_runtimes()) names += (names.empty() ? "" : ", ") + std::string(r.name);
    return fail(Error::INVALID_ARGUMENT, kNoOffset, "vendor_runtimes",
                "'%s' is not NAME=PATH for a vendor runtime (one of: %s); NAME= withholds it",
                detail::printable(assignment).c_str(), names.c_str());
  }
  options.vendor_runtimes[name] = assignment.substr(eq + 1);
  return Status();
}

Status read_backend_map(LoadOptions& options, const std::string& path) {
  auto text = json::read_file(path, std::uint64_t{1} << 20);
  if (!text.ok()) return text.error();
  auto doc = json::parse(text.value(), path);
  if (!doc.ok()) return doc.error();
  const std::size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
  const json::Value root = doc.value().root();
  FATPTE_CHECK(root.is(json::Kind::kObject), Error::INVALID_ARGUMENT, 0, "$",
               "%s: a backend map is an object with \"search_path\" and \"libraries\"", path.c_str());
  for (const json::Value::Member member : root.members()) {
    const json::Value v = member.value;
    const std::string key(member.key);
    if (key == "search_path") {
      FATPTE_CHECK(v.is(json::Kind::kArray), Error::INVALID_ARGUMENT, v.offset(), "search_path",
                   "%s: search_path must be a list of folders", path.c_str());
      std::size_t i = 0;
      for (const json::Value item : v.items()) {
        FATPTE_CHECK(item.is(json::Kind::kString) && !item.text().empty(), Error::INVALID_ARGUMENT, item.offset(),
                     "search_path[" + std::to_string(i) + "]", "%s: search_path[%zu] must be a folder name",
                     path.c_str(), i);
        options.search_path.push_back(resolve_from(base, std::string(item.text())));
        ++i;
      }
    } else if (key == "libraries") {
      FATPTE_CHECK(v.is(json::Kind::kObject), Error::INVALID_ARGUMENT, v.offset(), "libraries",
                   "%s: libraries must map backend ids to library files", path.c_str());
      for (const json::Value::Member lib : v.members()) {
        const std::string id(lib.key);
        FATPTE_CHECK(valid_backend_key(id) && lib.value.is(json::Kind::kString), Error::INVALID_ARGUMENT,
                     lib.value.offset(), "libraries." + id,
                     "%s: libraries.%s must be a library file name or path (\"\" withholds it)", path.c_str(),
                     id.c_str());
        const std::string file(lib.value.text());
        options.libraries[id] = file.find('/') == std::string::npos ? file : resolve_from(base, file);
      }
    } else {
      return fail(Error::INVALID_ARGUMENT, v.offset(), key,
                  "%s: unknown key \"%s\" (a backend map has \"search_path\" and \"libraries\")", path.c_str(),
                  key.c_str());
    }
  }
  return Status();
}

std::vector<std::string> backend_search_path(const LoadOptions& options) {
  std::vector<std::string> dirs;
  for (const std::string& d : options.search_path) {
    if (!d.empty()) dirs.push_back(d);
  }
  if (options.use_environment) {
    if (const char* env = std::getenv("FATPTE_BACKEND_PATH")) {
      std::string part;
      for (const char* p = env;; ++p) {
        if (*p == ':' || *p == '\0') {
          if (!part.empty()) dirs.push_back(part);
          part.clear();
          if (*p == '\0') break;
        } else {
          part += *p;
        }
      }
    }
  }
  return dirs;
}

std::string own_library_dir() { return detail::origin().dir; }

std::vector<std::string> executorch_search_path(const LoadOptions& options) {
  std::vector<std::string> dirs = backend_search_path(options);
  if (!options.use_build_default) return dirs;
  // The build tree's binaries: the SDK they were configured with, then their own folder (the fat
  // delegate library). Anything else (an install prefix, moved or not, or an application linked
  // with an installed libfatpte.a): its own folder, its lib/, and the folder of the
  // libexecutorch.so it runs, never the SDK folder it was configured with (device/origin.hpp).
  const detail::Origin& o = detail::origin();
  if (o.build_tree) {
    if (build_executorch_library_dir()[0] != '\0') dirs.push_back(build_executorch_library_dir());
    dirs.push_back(o.dir);
    return dirs;
  }
  for (const std::string& d : detail::prefix_library_dirs()) dirs.push_back(d);
  return dirs;
}

namespace {

// The --explain line of where ExecuTorch libraries are looked for, and of the runtime library the
// dynamic linker chose (by run path); each one found is named by the note or detail of its load
// ("loaded PATH", "registered by PATH").
std::string executorch_search_text(const std::vector<std::string>& dirs) {
  std::string order;
  for (std::size_t i = 0; i < dirs.size(); ++i) order += (i == 0 ? "" : ", ") + std::to_string(i + 1) + ". " + dirs[i];
  const std::string& runtime = detail::origin().runtime_dir;
  return "executorch libraries: libfatpte runs from " + detail::origin_text() + ", with ExecuTorch's runtime " +
         (runtime.empty() ? std::string("(libexecutorch.so not found among the loaded libraries)")
                          : runtime + "/libexecutorch.so") +
         "; searched in order: " + (order.empty() ? std::string("no folder") : order);
}

}  // namespace

std::string executorch_library_name(const std::string& backend_id) {
  std::string stem = backend_id;
  const std::string suffix = "Backend";
  if (stem.size() > suffix.size() && stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0) {
    stem.resize(stem.size() - suffix.size());
  }
  for (char& ch : stem) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
#if defined(__APPLE__)
  return "libexecutorch_backend_" + stem + ".dylib";
#else
  return "libexecutorch_backend_" + stem + ".so";
#endif
}

std::string backend_library_name(const std::string& backend_id) {
#if defined(__APPLE__)
  return "libfatpte_backend_" + backend_id + ".dylib";
#else
  return "libfatpte_backend_" + backend_id + ".so";
#endif
}

const char* build_executorch_library_dir() noexcept { return FATPTE_EXECUTORCH_LIBRARY_DIR; }

std::set<std::string> runtime_backends(const LoadOptions& options) {
  return et::registry_backends(options, executorch_search_path(options));
}

std::set<std::string> runtime_backends(const LoadOptions& options, const std::vector<VendorRuntimeSearch>& searched) {
  for (const VendorRuntimeSearch& where : searched) vendor::decide(*vendor::runtime_named(where.name), where);
  return runtime_backends(options);
}

bool has_executorch() noexcept { return et::available(); }

void set_executorch_log(bool forward) { et::set_log_forwarding(forward); }

Result<std::map<std::string, Bytes>> named_data_map(const Container& c) {
  std::map<std::string, Bytes> keys;
  auto manifest = manifest_view(c);
  if (!manifest.ok()) return manifest.error();
  const M::Manifest* root = manifest.value().root();
  if (root != nullptr && root->named_data() != nullptr) {
    for (const M::NamedData* item : *root->named_data()) {
      if (item->segment() >= c.segments().size()) continue;  // validate reports it (E0414)
      const Segment& s = c.segments()[item->segment()];
      keys[item->key()->str()] = Bytes{c.bytes().data + s.offset, s.size};
    }
  }
  return keys;
}

namespace {

// The entries of `s` that may be tried, in rank order.
std::vector<const Verdict*> candidates(const Selection& s) {
  std::vector<const Verdict*> ranked;
  for (const Verdict& v : s.verdicts) {
    if (v.eligible) ranked.push_back(&v);
  }
  std::sort(ranked.begin(), ranked.end(), [](const Verdict* a, const Verdict* b) { return a->rank < b->rank; });
  return ranked;
}

// LoadOptions::only_entry: the entry exists and is eligible, or why not (E0704, E0901).
Status only_entry(const Container& c, const Selection& s, const LoadOptions& options) {
  if (!options.only_entry) return Status();
  const std::uint32_t index = *options.only_entry;
  FATPTE_CHECK(index < c.entries().size(), Error::ENTRY_NOT_FOUND, kNoOffset, "entry",
               "the container has no entry %u (it holds %zu)", index, c.entries().size());
  const Entry& e = c.entries()[index];
  for (const Verdict& v : s.verdicts) {
    if (v.index != index) continue;
    FATPTE_CHECK(v.eligible, Error::NO_SPECIALIZATION_FITS, kNoOffset, "", "entry %s is not eligible on the device: %s",
                 entry_label(e).c_str(), detail::printable(explain_verdict(e, v)).c_str());
  }
  return Status();
}

// Steps 1 to 8 of specs/nfat-signature.md section 6 when the options require a signature: before
// any entry is tried, so nothing of an unsigned or tampered container reaches a backend.
// And step 11 for `device` when the options refuse a downgrade.
Status verify_signature(const Container& c, const LoadOptions& options, const DeviceProfile& device,
                        const std::vector<std::string>& prefer, const std::vector<std::string>& exclude,
                        std::optional<SignatureCheck>& check, Dispatch& out) {
  if (!options.trusted_keys) return Status();
  const Bytes detached{options.detached_signature.data(), options.detached_signature.size()};
  auto verified = check_signature(c, *options.trusted_keys, detached);
  if (!verified.ok()) return verified.error();
  FATPTE_RETURN_IF_ERROR(verified.value().first_error);
  if (options.refuse_downgrade) {
    FATPTE_RETURN_IF_ERROR(check_downgrade(c, verified.value(), device, prefer, exclude));
  }
  out.signature_key_id = verified.value().key_id;
  out.notes.push_back("signature: verified with key " + out.signature_key_id +
                      (options.refuse_downgrade ? "; no better signed entry was thinned away for this device" : ""));
  check.emplace(std::move(verified).value());
  return Status();
}

// What finding an entry's backends needs.
struct Backends {
  bool program;
  const DeviceProfile& device;
  const LoadOptions& options;
  const std::vector<std::string>& dirs;     // example backend libraries
  const std::vector<std::string>& et_dirs;  // ExecuTorch's
};

// The entry's backends and libraries, found: an ExecuTorch program's listed backends loaded into
// the runtime's registry, an example backend's library opened and asked (`table`). False with
// attempt.outcome saying why; a failed Result stops the load.
Result<bool> backends_ready(const Container& c, const Entry& e, const Verdict& v, const Backends& b,
                            std::string& device_json, const fatpte_backend*& table, Attempt& attempt) {
  if (b.program) return et::listed_backends_ready(c, e, b.options, b.et_dirs, attempt);
  if (device_json.empty()) device_json = canonical_json(b.device);
  table = example_backend(e, v, device_json, b.options, b.dirs, attempt);
  return table != nullptr;
}

// What an attempt proved, into the verdict store: a pass (loaded, its golden calls passed), a
// failure (they disagreed), a load without a self-test, a skip for a reason its checks find again
// at every start (a library missing or refused: later starts need no journal for either), or
// nothing (bytes not fetched yet, or stopped).
void remember_outcome(detail::Remembered& remembered, const Status& stop, bool loaded, const LoadOptions& options,
                      Attempt& attempt) {
  if (stop.ok() && loaded && (options.self_test || options.isolate)) {  // its calls passed, here or in a child
    auto line = std::find_if(attempt.details.begin(), attempt.details.end(),
                             [](const std::string& d) { return detail::starts_with(d, "self-test: "); });
    remembered.end(attempt, "pass", line != attempt.details.end() ? *line : "");
  } else if (stop.ok() && !loaded && options.self_test && detail::starts_with(attempt.outcome, "self-test failed")) {
    remembered.end(attempt, "fail", attempt.outcome);
  } else if (stop.ok() && loaded) {
    remembered.end(attempt, "loaded", "loaded without a self-test");
  } else if (stop.ok() && !attempt.outcome.empty() && !detail::starts_with(attempt.outcome, "not fetched")) {
    remembered.end(attempt, "skipped", attempt.outcome);  // found again by its checks at every start
  } else {
    remembered.end(attempt, "", "");
  }
}

// remember_outcome, once per attempt however the loop leaves it (a skip's `continue` included).
struct Outcome {
  detail::Remembered& remembered;
  const LoadOptions& options;
  Attempt& attempt;
  bool recorded = false;
  void record(const Status& stop, bool loaded) {
    if (!recorded) remember_outcome(remembered, stop, loaded, options, attempt);
    recorded = true;
  }
  ~Outcome() { record(Status(), false); }
};

// The qualification verdict on `e` before it is loaded here (run/qualify.hpp): recorded in the
// attempt; false when the entry is demoted (its outcome then says why), which the verdict store
// remembers: a crash or a hang (a signal or the deadline ended the child) as "crash", a failure as
// "fail", so the next start skips the entry without trying it.
bool qualified(const Container& c, const Entry& e, const DeviceProfile& device, const LoadOptions& options,
               Attempt& attempt, Outcome& outcome) {
  const detail::Qualification q = detail::qualify_entry(c, e, device, options);
  if (q.passed()) {
    if (options.isolate) attempt.details.push_back(q.describe());
    return true;
  }
  attempt.outcome = q.describe();
  outcome.remembered.end(attempt, q.kind == detail::Qualification::Kind::kFail ? "fail" : "crash", attempt.outcome);
  outcome.recorded = true;
  return false;
}

// Try the candidates of `s` by index, in rank order: for each, whether its backends and libraries
// are there, then (signed) its bytes hashed against the statement, then its qualification verdict
// (with isolation: from a child process, and only then are its libraries found here), then the load.
Status try_candidates(const Container& c, const Selection& s, detail::DeviceFingerprint& fingerprint,
                      const LoadOptions& options, std::optional<SignatureCheck>& signature, Dispatch& out) {
  const DeviceProfile& device = fingerprint.device();
  const std::vector<std::string> dirs = backend_search_path(options);
  const std::vector<std::string> et_dirs = executorch_search_path(options);
  std::string device_json;  // what an example library is given; programs need none
  bool operators_loaded = false;
  FATPTE_RETURN_IF_ERROR(only_entry(c, s, options));
  detail::Remembered remembered(c, fingerprint, options, out.notes);
  for (const Verdict* v : candidates(s)) {
    if (!options.fallback && !out.attempts.empty()) break;
    if (options.only_entry && v->index != *options.only_entry) continue;
    const Entry& e = c.entries()[v->index];
    out.attempts.emplace_back();
    Attempt& attempt = out.attempts.back();
    attempt.index = e.index;
    // An entry that states no payload kind is told apart by its payload's bytes 4..8.
    if (!payload_kind_stated(c, e) && !c.present(e.offset, std::min<std::uint64_t>(e.size, 8))) {
      attempt.outcome = not_fetched(c, e, options.self_test);
      continue;
    }
    const bool program = payload_is_program(c, e);
    if (!remembered.allows(e, program, attempt)) continue;
    // Before any library of the entry is opened: a static initializer may fault too (SIGILL).
    remembered.begin(attempt);
    Outcome outcome{remembered, options, attempt};
    if (program && !operators_loaded) {
      out.notes.push_back(executorch_search_text(et_dirs));
      et::load_operator_libraries(options, et_dirs, out.notes);
      operators_loaded = true;
    }
    if (!program) {
      attempt.outcome = bare_backend_payload(c, e);
      if (!attempt.outcome.empty()) continue;
    }
    const Backends backends{program, device, options, dirs, et_dirs};
    const fatpte_backend* table = nullptr;
    // Without isolation, an entry whose backends are missing is skipped before a byte of it is
    // read; with it, this process maps none of the entry's libraries before the child's verdict.
    if (!options.isolate) {
      auto ready = backends_ready(c, e, *v, backends, device_json, table, attempt);
      if (!ready.ok()) return ready.error();
      if (!ready.value()) continue;
    }
    attempt.outcome = not_fetched(c, e, options.self_test);
    if (!attempt.outcome.empty()) continue;
    // Tampering and damage stop the load: they are not reasons to try another entry.
    Status stop;
    if (signature) {
      stop = check_entry_bytes(c, *signature, e.index);
      if (stop.ok()) attempt.details.push_back("signature: entry '" + e.name + "' and its named data hash as signed");
    }
    if (stop.ok() && remembered.passed() && options.isolate) {
      attempt.details.push_back("qualification: not run: the verdict store remembers the entry passing");
    } else if (stop.ok() && !qualified(c, e, device, options, attempt, outcome)) {
      continue;
    }
    if (stop.ok() && options.isolate) {
      auto ready = backends_ready(c, e, *v, backends, device_json, table, attempt);
      if (!ready.ok()) return ready.error();
      if (!ready.value()) continue;
    }
    std::unique_ptr<Loaded> loaded;
    if (stop.ok()) {
      stop = program ? et::load_entry(c, e, options, et_dirs, attempt, loaded) : load_example(c, e, table, attempt, loaded);
    }
    if (stop.ok() && loaded && options.self_test && remembered.passed()) {
      attempt.details.push_back("self-test: not run: the verdict store remembers its golden calls passing");
    } else if (stop.ok() && loaded && options.self_test && !options.isolate) {
      stop = detail::self_test_on_load(c, signature ? &*signature : nullptr, attempt, loaded,
                                       [&](std::unique_ptr<Loaded>& again, std::string& why) -> Status {
                                         if (!program) return Status();  // the example ABI keeps no state
                                         Attempt second;
                                         const Status st = et::load_entry(c, e, options, et_dirs, second, again);
                                         if (st.ok() && !again) why = second.outcome;
                                         return st;
                                       });
    }
    outcome.record(stop, loaded != nullptr);
    if (!stop.ok()) {
      attempt.outcome = "stopped: " + stop.describe();
      return stop;
    }
    if (loaded) {
      out.loaded = std::move(loaded);
      if (signature) out.signature = std::make_shared<const SignatureCheck>(*signature);
      return Status();
    }
  }
  return fail(Error::NO_SPECIALIZATION_FITS, kNoOffset, "", "no eligible entry could be loaded:\n%s",
              explain_dispatch(c, out).c_str());
}

}  // namespace

namespace {

Status load_on(const Container& c, const Choice& choice, detail::DeviceFingerprint& fingerprint,
               const LoadOptions& options, Dispatch& out) {
  const DeviceProfile& device = fingerprint.device();
  std::optional<SignatureCheck> signature;
  FATPTE_RETURN_IF_ERROR(verify_signature(c, options, device, choice.prefer, choice.exclude, signature, out));
  auto s = select(c, device, choice.prefer, choice.exclude);
  if (!s.ok()) {
    // Every verdict, for an explanation of why none fits.
    auto assessed = assess(c, device, choice.prefer, choice.exclude);
    if (assessed.ok()) out.selection = std::move(assessed).value();
    return s.error();
  }
  out.selection = std::move(s).value();
  return try_candidates(c, *out.selection, fingerprint, options, signature, out);
}

// Where the probe found vendor runtime `where.name`, or every place it looked, as the load's line
// (an entry that needs one of its devices is refused at selection when it is absent:
// specs/device-profile.md 9.1), and handed to the backend that opens it: one load searches once.
void hand_on(const VendorRuntimeSearch& where, const LoadOptions& options, Dispatch& out) {
  const vendor::VendorRuntime& r = *vendor::runtime_named(where.name);
  out.notes.push_back(vendor::status_line(r, where, options.command_line));
  vendor::decide(r, where);
}

}  // namespace

Status load(const Container& c, const Choice& choice, const LoadOptions& options, Dispatch& out) {
  // This machine: only what the entries' requirements read (the whole probe for a downgrade
  // check, which also ranks the thinned entries the statement describes).
  // (A verdict store keys its verdicts by the whole probe too: specs/verdicts.md section 3.)
  ProbeScope scope = (options.trusted_keys && options.refuse_downgrade) || !options.verdicts.empty()
                         ? ProbeScope{}
                         : probe_scope(c);
  if (!(options.trusted_keys && options.refuse_downgrade) && !options.verdicts.empty()) {
    // Every fact for the store's key but the accelerators, which only when an entry requires one
    // (and a vendor runtime's devices only when an entry requires one of them): specs/verdicts.md
    // section 3. Looking for drivers and runtimes no entry needs is a library search each start
    // (CUDA's and OpenVINO's: about 0.25 ms where they are absent, 5% of a start).
    const ProbeScope needed = probe_scope(c);
    scope.accelerators = needed.accelerators;
    if (needed.vendor_devices) {
      scope.vendor_devices.emplace();
      for (const auto& kv : *needed.vendor_devices) (*scope.vendor_devices)[kv.first] = {""};
    }
  }
  scope.vendor_runtimes = options.vendor_runtimes;
  const DeviceProfile device = choice.device ? *choice.device : probe_host(scope, &out.vendor_runtimes);
  for (const VendorRuntimeSearch& where : out.vendor_runtimes) hand_on(where, options, out);
  // One fingerprint for the verdict store's key and the receipt, made only if one asks.
  detail::DeviceFingerprint fingerprint(device, options);
  const Status st = load_on(c, choice, fingerprint, options, out);
  detail::deliver_load_receipt(c, fingerprint, options, out, out.selection ? &*out.selection : nullptr, st);
  return st;
}

Result<Dispatch> load(const Container& c, const Selection& s, const DeviceProfile& device, const LoadOptions& options) {
  return load(c, s, device, options, {});
}

Result<Dispatch> load(const Container& c, const Selection& s, const DeviceProfile& device, const LoadOptions& options,
                      const std::vector<VendorRuntimeSearch>& searched) {
  Dispatch out;
  for (const VendorRuntimeSearch& where : searched) {
    if (options.vendor_runtimes.count(where.name) != 0) continue;  // searched with the caller's path when asked
    out.vendor_runtimes.push_back(where);
    hand_on(where, options, out);
  }
  std::optional<SignatureCheck> signature;
  Status st = verify_signature(c, options, device, s.prefer, s.exclude, signature, out);
  detail::DeviceFingerprint fingerprint(device, options);
  if (st.ok()) st = try_candidates(c, s, fingerprint, options, signature, out);
  detail::deliver_load_receipt(c, fingerprint, options, out, &s, st);
  FATPTE_RETURN_IF_ERROR(st);
  return out;
}

std::string explain_dispatch(const Container& c, const Dispatch& d) {
  std::string out;
  for (const std::string& note : d.notes) out += (out.empty() ? "" : "\n") + ("  " + note);
  for (const Attempt& a : d.attempts) {
    const Entry& e = c.entries()[a.index];
    if (!out.empty()) out += "\n";
    // Names and backend ids come from the file (a version 1 id may hold any byte from 0x01 to
    // 0x7f), outcomes quote them and the backends' own words: every line escaped.
    out += "  dispatch: " + entry_label(e) + ": " + detail::printable(a.outcome);
    if (!a.library.empty()) out += " (" + detail::printable(a.library) + ")";
    for (const std::string& line : a.details) out += "\n      " + detail::printable(line);
  }
  return out;
}

std::string vendor_runtimes_json(const Dispatch& d, const LoadOptions& options) {
  std::string out = "[";
  for (const VendorRuntimeSearch& where : d.vendor_runtimes) {
    out += (out.size() == 1 ? "" : ", ") + vendor::search_json(*vendor::runtime_named(where.name), where,
                                                                options.command_line);
  }
  return out + "]";
}

}  // namespace fatpte
