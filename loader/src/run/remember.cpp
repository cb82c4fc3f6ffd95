// Remembered verdicts in the load policy (see remember.hpp, specs/verdicts.md section 5).
#include "run/remember.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <utility>

#include "container/manifest_view.hpp"
#include "executorch/program.hpp"
#include "fatpte/text.hpp"
#include "common/text.hpp"
#include "memory/identity.hpp"
#include "device/library_files.hpp"
#include "device/origin.hpp"

namespace fatpte {

std::string default_verdicts_dir() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  if (cache != nullptr && cache[0] == '/') return std::string(cache) + "/fatpte/verdicts";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/fatpte/verdicts";
  return "";
}

namespace detail {

namespace {

// The folder and those above it, as mkdir -p (0700: what a device learned is its own).
bool make_folders(const std::string& dir) {
  for (std::size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    const std::string part = dir.substr(0, at);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  struct stat sb;
  return ::stat(dir.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode);
}

}  // namespace

bool is_operator_key(const std::string& key) { return key == "kernels" || starts_with(key, "kernels_"); }

std::map<std::string, std::string> operator_libraries(const LoadOptions& options) {
  std::map<std::string, std::string> out;
  if (options.use_build_default) out["kernels"] = "libexecutorch_kernels_optimized.so";
  for (const auto& kv : options.libraries) {
    if (is_operator_key(kv.first)) out[kv.first] = kv.second;
  }
  return out;
}

std::string runtime_fingerprint(const LoadOptions& options) {
  const std::vector<std::string> et_dirs = executorch_search_path(options);
  std::string out;
  out.reserve(256);
  // Where libfatpte's code and ExecuTorch's runtime are, as the load policy found them once per
  // process (device/origin.hpp): the main program's file even when argv[0] was a bare name. Each
  // line appended in place: the joined temporaries cost a receipt more than the lines' content.
  const Origin& o = origin();
  if (!o.file.empty()) {
    out.append("fatpte ", 7);
    memory::append_library_identity(out, o.file);
    out += '\n';
  }
  if (!o.runtime_dir.empty()) {
    out.append("executorch ", 11);
    memory::append_library_identity(out, o.runtime_dir + "/libexecutorch.so");
    out += '\n';
  }
  for (const auto& kv : operator_libraries(options)) {
    const std::string path = kv.second.empty() ? "" : find_library(kv.second, et_dirs);
    out += kv.first;
    out += ' ';
    if (path.empty()) {
      out.append("none", 4);
    } else {
      memory::append_library_identity(out, path);
    }
    out += '\n';
  }
  return out;
}

const std::string& DeviceFingerprint::profile_json() {
  if (!profile_json_) profile_json_ = canonical_json(device_);
  return *profile_json_;
}

const std::string& DeviceFingerprint::runtime() {
  if (!runtime_) runtime_ = runtime_fingerprint(options_);
  return *runtime_;
}

const std::string& DeviceFingerprint::digest() {
  if (!digest_) digest_ = memory::digest_hex(profile_json(), "\n", runtime());
  return *digest_;
}

namespace {

// The identity of every library entry `e` loads, "ID=IDENTITY", sorted: for a program, the
// backends its manifest lists (executorch_backends); for another payload, its example backend.
std::vector<std::string> entry_libraries(const Container& c, const Entry& e, bool program, const LoadOptions& options) {
  std::vector<std::pair<std::string, std::string>> wanted;  // id, file
  if (program) {
    auto manifest = manifest_view(c);
    const nfat::manifest::Entry* record = manifest.ok() ? manifest.value().entry(e.index) : nullptr;
    if (record != nullptr && record->executorch_backends() != nullptr) {
      for (const ::flatbuffers::String* id : *record->executorch_backends()) {
        auto configured = options.libraries.find(id->str());
        wanted.emplace_back(id->str(), configured != options.libraries.end() ? configured->second
                                                                            : executorch_library_name(id->str()));
      }
    }
  } else {
    wanted.emplace_back(e.backend_id, backend_library_name(e.backend_id));
  }
  const std::vector<std::string> dirs = program ? executorch_search_path(options) : backend_search_path(options);
  std::vector<std::string> out;
  for (const auto& [id, file] : wanted) {
    const std::string path = file.empty() ? "" : find_library(file, dirs);
    out.push_back(id + "=" + (path.empty() ? std::string("none") : memory::library_identity(path)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Remembered::Remembered(const Container& c, DeviceFingerprint& device, const LoadOptions& options,
                       std::vector<std::string>& notes)
    : container_(c), options_(options) {
  if (options.verdicts.empty()) return;
  path_ = options.verdicts + "/" + options.verdicts_name + ".verdicts.json";
  auto store = memory::read_store(path_);
  if (!store.ok()) {
    notes.push_back("verdict store: not used: " + store.error().describe());
    return;
  }
  store_ = std::move(store).value();
  container_digest_ = memory::container_digest(c);
  device_digest_ = device.digest();
  on_ = true;
}

bool Remembered::allows(const Entry& e, bool program, Attempt& attempt) {
  passed_ = settled_ = false;
  journaled_ = false;
  if (!on_) return true;
  key_ = memory::VerdictKey{container_digest_, e.index, e.name, program ? options_.method : "forward", device_digest_,
                            entry_libraries(container_, e, program, options_)};
  const memory::VerdictRecord* r = memory::find(store_, key_);
  if (r == nullptr) return true;
  if (r->verdict == "skipped") {
    // Tried here before, and skipped for a reason its checks find again (they run again): the
    // process survived them, so they need no journal.
    settled_ = true;
    attempt.details.push_back("verdict store: tried here before and skipped (" + r->reason + ")");
    return true;
  }
  if (r->verdict == "loaded") {
    // It loaded before, without a self-test: nothing is known of its golden calls.
    settled_ = !options_.self_test;
    if (settled_) attempt.details.push_back("verdict store: it loaded here before (no self-test was asked)");
    return true;
  }
  if (r->verdict == "pass") {
    passed_ = settled_ = true;
    attempt.remembered = "pass";
    attempt.details.push_back("verdict store: a pass is remembered for this entry, device and libraries (" +
                              r->reason + ")");
    return true;
  }
  attempt.remembered = r->verdict == "attempt" ? "crash" : r->verdict;
  attempt.outcome = "remembered: " +
                    (r->verdict == "fail" ? r->reason
                     : r->verdict == "crash" ? "it crashed the process: " + r->reason
                                              : std::string("the process ended during an attempt at it (a crash, "
                                                            "or the process was killed) before its outcome was "
                                                            "recorded")) +
                    "; not tried (the verdict store " + path_ + "; `fatpte verdicts clear` forgets it)";
  return false;
}

void Remembered::save(Attempt& attempt) {
  if (!make_folders(options_.verdicts)) {
    attempt.details.push_back("verdict store: cannot create the folder " + options_.verdicts + ": not written");
    return;
  }
  const Status st = memory::write_store(path_, store_);
  if (!st.ok()) attempt.details.push_back("verdict store: not written: " + st.describe());
}

void Remembered::begin(Attempt& attempt) {
  if (!on_ || settled_) return;
  memory::put(store_, memory::VerdictRecord{key_, "attempt", "", static_cast<std::uint64_t>(std::time(nullptr))});
  journaled_ = true;
  save(attempt);
}

void Remembered::end(Attempt& attempt, const std::string& verdict, const std::string& reason) {
  if (!on_) return;
  const memory::VerdictRecord* was = memory::find(store_, key_);
  const bool journaled = journaled_;
  journaled_ = false;
  if (verdict.empty()) {
    if (was == nullptr) return;
    memory::erase(store_, key_);
  } else {
    // Known already (a pass also says it loads): nothing to write.
    if (!journaled && was != nullptr && (was->verdict == verdict || (was->verdict == "pass" && verdict == "loaded"))) {
      return;
    }
    // ASCII (escaped as for a terminal), clipped: the reader refuses a longer text or bad UTF-8.
    std::string text = printable(reason);
    if (text.size() > memory::kMaxText) text = text.substr(0, memory::kMaxText - 3) + "...";
    memory::put(store_, memory::VerdictRecord{key_, verdict, text, static_cast<std::uint64_t>(std::time(nullptr))});
    attempt.details.push_back("verdict store: remembered " + verdict);
  }
  save(attempt);
}

void remember_failed_call(const Container& c, const DeviceProfile& device, const LoadOptions& options, const Entry& e,
                          const std::string& reason, std::vector<std::string>& notes) {
  if (options.verdicts.empty()) return;
  DeviceFingerprint fingerprint(device, options);
  Remembered remembered(c, fingerprint, options, notes);
  Attempt attempt;
  attempt.index = e.index;
  remembered.allows(e, payload_is_program(c, e), attempt);
  remembered.end(attempt, "fail", "failed a call after its load: " + reason);
  for (const std::string& d : attempt.details) notes.push_back(d);
}

}  // namespace detail
}  // namespace fatpte
