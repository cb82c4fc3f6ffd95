// Dispatch (see dispatch.hpp): finding, checking and loading backend libraries, with fallback.
#include "fatpte/dispatch.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fatpte/device.hpp"
#include "manifest_verify.hpp"
#include "text.hpp"
#include "nfat_manifest_generated.h"

namespace fatpte {

struct DispatchAccess {
  static LoadedBackend* make() { return new LoadedBackend(); }
  static void set(LoadedBackend& b, std::uint32_t index, void* library, const fatpte_backend* table, void* model,
                  std::shared_ptr<void> nd) {
    b.index_ = index;
    b.library_ = library;
    b.table_ = table;
    b.model_ = model;
    b.named_data_ = std::move(nd);
  }
};

namespace {

namespace M = nfat::manifest;

// The named data of a container: key -> bytes of its segment, from the verified manifest.
struct NamedData {
  std::map<std::string, Bytes> keys;
  fatpte_named_data api{};
};

int lookup(void* context, const char* key, const void** data, std::uint64_t* size) {
  if (context == nullptr || key == nullptr || data == nullptr || size == nullptr) return 1;
  const auto& keys = static_cast<NamedData*>(context)->keys;
  auto it = keys.find(key);
  if (it == keys.end()) return 1;
  *data = it->second.data;
  *size = it->second.size;
  return 0;
}

Result<std::shared_ptr<NamedData>> named_data(const Container& c) {
  auto nd = std::make_shared<NamedData>();
  nd->api.context = nd.get();
  nd->api.lookup = lookup;
  auto keys = named_data_map(c);
  if (!keys.ok()) return keys.error();
  nd->keys = std::move(keys).value();
  return nd;
}

bool is_file(const std::string& path) {
  struct stat sb;
  return stat(path.c_str(), &sb) == 0 && S_ISREG(sb.st_mode);
}

std::string why_text(const char* why) { return why[0] != '\0' ? std::string(why) : std::string("no reason given"); }

}  // namespace

Result<std::map<std::string, Bytes>> named_data_map(const Container& c) {
  std::map<std::string, Bytes> keys;
  const Header& h = c.header();
  if (h.version != format::kVersion2 || h.manifest_size == 0) return keys;
  const std::uint8_t* m = c.bytes().data + h.manifest_offset;
  FATPTE_RETURN_IF_ERROR(detail::check_manifest_buffer(m, h.manifest_size, h.manifest_offset));
  const auto* root = M::GetManifest(m);
  if (root->named_data() != nullptr) {
    for (const auto* item : *root->named_data()) {
      if (item->segment() >= c.segments().size()) continue;  // validate reports it (E0414)
      const Segment& s = c.segments()[item->segment()];
      keys[item->key()->str()] = Bytes{c.bytes().data + s.offset, s.size};
    }
  }
  return keys;
}

LoadedBackend::~LoadedBackend() {
  if (table_ != nullptr && model_ != nullptr) table_->unload(model_);
  // The library stays mapped: a backend may have started threads or registered handlers that
  // outlive unload, and unmapping their code would crash the process later.
}

Status LoadedBackend::run(const std::vector<float>& input, std::vector<float>& output) const {
  char why[512] = {0};
  std::size_t count = 0;
  const int rc = table_->run(model_, input.data(), input.size(), output.data(), output.size(), &count, why, sizeof why);
  FATPTE_CHECK(rc == 0, Error::INVALID_ARGUMENT, kNoOffset, "", "backend '%s' could not run: %s", table_->backend_id,
               why_text(why).c_str());
  FATPTE_CHECK(count <= output.size(), Error::INVALID_ARGUMENT, kNoOffset, "",
               "backend '%s' reported %zu outputs for a buffer of %zu", table_->backend_id, count, output.size());
  output.resize(count);
  return Status();
}

std::string backend_library_name(const std::string& backend_id) {
#if defined(__APPLE__)
  return "libfatpte_backend_" + backend_id + ".dylib";
#else
  return "libfatpte_backend_" + backend_id + ".so";
#endif
}

std::vector<std::string> backend_search_path(const std::vector<std::string>& configured) {
  std::vector<std::string> dirs;
  for (const std::string& d : configured) {
    if (!d.empty()) dirs.push_back(d);
  }
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
  return dirs;
}

Result<Dispatch> load_backend(const Container& c, const Selection& s, const DeviceProfile& device,
                              const std::vector<std::string>& configured_dirs) {
  Result<std::shared_ptr<NamedData>> nd = named_data(c);
  if (!nd.ok()) return nd.error();
  const std::vector<std::string> dirs = backend_search_path(configured_dirs);
  const std::string device_json = canonical_json(device);
  std::vector<const Verdict*> ranked;
  for (const Verdict& v : s.verdicts) {
    if (v.eligible) ranked.push_back(&v);
  }
  std::sort(ranked.begin(), ranked.end(), [](const Verdict* a, const Verdict* b) { return a->rank < b->rank; });
  Dispatch out;
  for (const Verdict* v : ranked) {
    const Entry& e = c.entries()[v->index];
    Attempt attempt;
    attempt.index = e.index;
    attempt.library = backend_library_name(e.backend_id);
    std::string found;
    for (const std::string& d : dirs) {
      const std::string candidate = d + "/" + attempt.library;
      if (is_file(candidate)) {
        found = candidate;
        break;
      }
    }
    if (found.empty()) {
      std::string where;
      for (const std::string& d : dirs) where += (where.empty() ? "" : ", ") + d;
      attempt.outcome = "library " + attempt.library + " not found in " +
                        (where.empty() ? std::string("any directory (no backend path is configured)") : where);
      out.attempts.push_back(std::move(attempt));
      continue;
    }
    attempt.library = found;
    void* lib = dlopen(found.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* err = dlerror();
      attempt.outcome = std::string("cannot open the library: ") + (err ? err : "unknown error");
      out.attempts.push_back(std::move(attempt));
      continue;
    }
    // POSIX guarantees a symbol address from dlsym converts to a function pointer.
    auto entry = reinterpret_cast<fatpte_backend_entry>(dlsym(lib, FATPTE_BACKEND_ENTRY_SYMBOL));
    const fatpte_backend* table = entry != nullptr ? entry() : nullptr;
    if (table == nullptr) {
      attempt.outcome = std::string("the library does not export ") + FATPTE_BACKEND_ENTRY_SYMBOL;
    } else if (v->has_backend_abi &&
               (table->abi_version < v->backend_abi_min || table->abi_version > v->backend_abi_max)) {
      // The entry's own range first (specs/nfat-manifest.md 4.2): like a missing library, a
      // reason to fall back to the next eligible entry, and the library is never called.
      attempt.outcome = "refused: backend library " + backend_library_name(e.backend_id) + " reports ABI version " +
                        std::to_string(table->abi_version) + ", the entry needs " +
                        std::to_string(v->backend_abi_min) + ".." + std::to_string(v->backend_abi_max);
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
      } else {
        Bytes payload = c.payload(e.index).value();
        void* model = nullptr;
        why[0] = '\0';
        if (table->load(payload.data, payload.size, &nd.value()->api, &model, why, sizeof why) != 0) {
          attempt.outcome = "the backend could not load the payload: " + why_text(why);
        } else {
          attempt.outcome = "loaded";
          out.backend.reset(DispatchAccess::make());
          DispatchAccess::set(*out.backend, e.index, lib, table, model, nd.value());
          out.attempts.push_back(std::move(attempt));
          return out;
        }
      }
    }
    // Refused or failed: the library is left mapped (see ~LoadedBackend) but never called again.
    out.attempts.push_back(std::move(attempt));
  }
  return fail(Error::NO_SPECIALIZATION_FITS, kNoOffset, "", "no eligible entry could be loaded:\n%s",
              explain_dispatch(c, out.attempts).c_str());
}

std::string explain_dispatch(const Container& c, const std::vector<Attempt>& attempts) {
  std::string out;
  for (const Attempt& a : attempts) {
    const Entry& e = c.entries()[a.index];
    if (!out.empty()) out += "\n";
    // Names and backend ids come from the file (a version 1 id may hold any byte from 0x01 to
    // 0x7f), outcomes quote them and the backends' own words: one line per attempt, escaped.
    out += "  dispatch: " + detail::clipped(e.name) + " [" + detail::clipped(e.backend_id) + "]: " +
           detail::printable(a.outcome) + " (" + detail::printable(a.library) + ")";
  }
  return out;
}

}  // namespace fatpte
