// fatpte-run: the loader's command line.
//
//   fatpte-run --device-json
//       print this machine's device profile as canonical JSON (the bytes of `fatpte device --json`)
//   fatpte-run --check-profile PROFILE.json...
//       only read each device profile: print one line per file, `OK`, or `E0702 FIELD` (the code
//       and the field path of the first bad value, `-` when none, bytes outside printable ASCII
//       and `\` written `\xNN`) with the full message on stderr;
//       exit 0 when all are valid, else the exit code of the first that is not
//   fatpte-run FILE [--device host|PROFILE.json] [--backend-path DIR]... [--prefer W]...
//              [--exclude W]... [--explain] --input FILE
//       choose the entry for the device (specs/nfat-manifest.md section 6), load its payload into
//       its backend library (include/fatpte/backend.h), falling back to the next eligible entry
//       when that fails, run it on the float32 values of the input file (text, whitespace
//       separated) and print `ran: NAME [BACKEND_ID]` and `output: V...`. --explain first prints
//       the selection and every dispatch attempt. With --require-signature --trusted-key K
//       (repeatable), the container's signature is verified against the keys before selection
//       (specs/nfat-signature.md steps 1 to 8) and each entry's payload and named data are hashed
//       just before that entry is loaded (steps 9 and 10): an unsigned container, an untrusted
//       signature or bytes that do not match stop the run (exit 5) before they reach a backend.
//   fatpte-run FILE --select-only [--device ...] [--prefer W]... [--exclude W]... [--explain] [--json]
//       choose only: print `NAME [BACKEND_ID]`, the explanation (--explain) or the selection as
//       JSON (--json, the bytes of Python's json.dumps(Selection.to_json(), indent=2); when no
//       entry fits, those of SelectionError.report, `chosen` null, before the error and exit 3).
//
// Exit codes as the Python CLI: 0 ok, 1 invalid container, 2 usage, 3 no specialization fits,
// 4 I/O error, 5 not verified (--require-signature).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fatpte/device.hpp"
#include "fatpte/fatpte.h"
#include "fatpte/fatpte.hpp"
#include "fatpte/select.hpp"
#include "fatpte/signature.h"

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "fatpte-run: %s\n"
               "usage: fatpte-run --device-json\n"
               "       fatpte-run --check-profile PROFILE.json...\n"
               "       fatpte-run FILE [--device host|PROFILE.json] [--backend-path DIR]... [--prefer W]... "
               "[--exclude W]... [--explain] [--require-signature --trusted-key PUBLIC.pem]... --input FILE\n"
               "       fatpte-run FILE --select-only [--device host|PROFILE.json] [--prefer W]... "
               "[--exclude W]... [--explain] [--json]\n",
               why);
  return 2;
}

int exit_code(fatpte::Error code) {
  const int v = static_cast<int>(code);
  if (v >= 1300) return 5;
  if (v >= 1000) return 1;
  if (v >= 900) return 3;
  if (v >= 800) return 4;
  if (v >= 700) return 2;
  return 1;
}

void split_into(const char* arg, std::vector<std::string>& out) {
  std::string word;
  for (const char* p = arg;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!word.empty()) out.push_back(word);
      word.clear();
      if (*p == '\0') break;
    } else {
      word += *p;
    }
  }
}

std::vector<const char*> c_strings(const std::vector<std::string>& words) {
  std::vector<const char*> out;
  for (const std::string& w : words) out.push_back(w.c_str());
  return out;
}

int fail_with(const std::string& file, const fatpte_error& err) {
  std::fprintf(stderr, "%s: %s\n", file.c_str(), err.message);
  return exit_code(static_cast<fatpte::Error>(err.code));
}

int run_loaded(fatpte_container* c, fatpte_loaded* loaded, const std::string& file, const std::vector<float>& input,
               bool explain);

// --require-signature: verify the signature before selecting, then hash each entry just before
// it is loaded. The fallback of fatpte_load is kept, one entry at a time: a selection with every
// other entry excluded is loaded, and when its library refuses it the next choice is verified and
// tried, so only the entries actually handed to a backend are hashed.
fatpte_status load_signed(fatpte_container* c, const char* device_json, std::vector<std::string> exclude,
                          const std::vector<std::string>& prefer, const std::vector<const char*>& dirs,
                          const std::vector<const char*>& keys, bool explain, fatpte_loaded** loaded,
                          fatpte_error* err) {
  fatpte_trust* trust = nullptr;
  fatpte_status st = fatpte_trust_load(keys.data(), keys.size(), &trust, err);
  if (st != FATPTE_OK) return st;
  fatpte_signature_report* report = nullptr;
  st = fatpte_verify_signature(c, trust, nullptr, 0, &report, err);
  fatpte_trust_free(trust);
  if (st != FATPTE_OK) {
    fatpte_signature_report_free(report);
    return st;
  }
  if (explain) std::printf("signature: verified with key %s\n", fatpte_signature_key_id(report));
  uint32_t count = 0;
  fatpte_entry_count(c, &count);
  fatpte_error last = *err;
  bool tried = false;
  const auto p = c_strings(prefer);
  while (true) {
    auto x = c_strings(exclude);
    fatpte_selection* sel = nullptr;
    st = fatpte_select(c, device_json, p.data(), p.size(), x.data(), x.size(), &sel, err);
    if (st != FATPTE_OK) {
      if (tried) *err = last;  // nothing left to fall back to: report the last refusal
      break;
    }
    if (explain && !tried) std::printf("%s\n", fatpte_selection_explain(sel));
    uint32_t chosen = 0;
    fatpte_selection_chosen(sel, &chosen);
    fatpte_selection_free(sel);
    st = fatpte_signature_verify_entry(c, report, chosen, err);
    const char* name = "";
    fatpte_entry_name(c, chosen, &name);
    if (st != FATPTE_OK) break;
    if (explain) std::printf("signature: entry '%s' and its named data hash as signed\n", name);
    std::vector<std::string> only = exclude;
    for (uint32_t i = 0; i < count; ++i) {
      const char* other = "";
      fatpte_entry_name(c, i, &other);
      if (i != chosen) only.emplace_back(other);
    }
    auto xo = c_strings(only);
    st = fatpte_select(c, device_json, p.data(), p.size(), xo.data(), xo.size(), &sel, err);
    if (st == FATPTE_OK) {
      st = fatpte_load(c, sel, dirs.data(), dirs.size(), loaded, err);
      fatpte_selection_free(sel);
    }
    if (st == FATPTE_OK) break;
    if (explain) std::printf("signature: entry '%s' was not loaded: %s\n", name, err->message);
    last = *err;
    tried = true;
    exclude.emplace_back(name);
  }
  fatpte_signature_report_free(report);
  return st;
}

// The run mode goes through the C API end to end (open, select, load, run), so the tests of
// fatpte-run exercise the interface a C caller uses.
int run_with_c_api(const std::string& file, const std::string& device, const std::vector<std::string>& prefer,
                   const std::vector<std::string>& exclude, const std::vector<std::string>& dirs,
                   const std::string& input_path, bool explain, const std::vector<std::string>& trusted_keys) {
  std::vector<float> input;
  std::ifstream in(input_path);
  if (!in) {
    std::fprintf(stderr, "fatpte-run: cannot read the input %s\n", input_path.c_str());
    return 4;
  }
  for (float v; in >> v;) input.push_back(v);
  if (!in.eof()) return usage(("the input " + input_path + " is not whitespace-separated numbers").c_str());
  std::string profile_json;
  if (device != "host") {
    std::ifstream p(device, std::ios::binary);
    if (!p) {
      std::fprintf(stderr, "fatpte-run: cannot read the device profile %s\n", device.c_str());
      return 4;
    }
    profile_json.assign(std::istreambuf_iterator<char>(p), std::istreambuf_iterator<char>());
  }
  fatpte_error err;
  fatpte_container* c = nullptr;
  if (fatpte_open_file(file.c_str(), &c, &err) != FATPTE_OK) return fail_with(file, err);
  const auto p = c_strings(prefer), x = c_strings(exclude), d = c_strings(dirs);
  fatpte_loaded* loaded = nullptr;
  if (!trusted_keys.empty()) {
    const char* json = device == "host" ? nullptr : profile_json.c_str();
    if (load_signed(c, json, exclude, prefer, d, c_strings(trusted_keys), explain, &loaded, &err) != FATPTE_OK) {
      fatpte_close(c);
      return fail_with(file, err);
    }
    return run_loaded(c, loaded, file, input, explain);
  }
  fatpte_selection* sel = nullptr;
  if (fatpte_select(c, device == "host" ? nullptr : profile_json.c_str(), p.data(), p.size(), x.data(), x.size(),
                    &sel, &err) != FATPTE_OK) {
    fatpte_close(c);
    return fail_with(file, err);
  }
  if (explain) std::printf("%s\n", fatpte_selection_explain(sel));
  const fatpte_status st = fatpte_load(c, sel, d.data(), d.size(), &loaded, &err);
  fatpte_selection_free(sel);
  if (st != FATPTE_OK) {
    fatpte_close(c);
    return fail_with(file, err);
  }
  return run_loaded(c, loaded, file, input, explain);
}

int run_loaded(fatpte_container* c, fatpte_loaded* loaded, const std::string& file, const std::vector<float>& input,
               bool explain) {
  fatpte_error err;
  if (explain) std::printf("%s\n", fatpte_loaded_explain(loaded));
  uint32_t index = 0;
  const char* name = "";
  const char* backend = "";
  fatpte_loaded_entry(loaded, &index);
  fatpte_entry_name(c, index, &name);
  fatpte_entry_backend_id(c, index, &backend);
  std::vector<float> output(1u << 16);
  size_t count = 0;
  int rc = 0;
  if (fatpte_run_f32(loaded, input.data(), input.size(), output.data(), output.size(), &count, &err) != FATPTE_OK) {
    rc = fail_with(file, err);
  } else {
    std::printf("ran: %s [%s]\noutput:", name, backend);
    for (size_t i = 0; i < count; ++i) std::printf(" %.9g", static_cast<double>(output[i]));
    std::printf("\n");
    rc = std::fflush(stdout) == 0 ? 0 : 4;
  }
  fatpte_unload(loaded);
  fatpte_close(c);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--device-json") == 0) {
    const std::string json = fatpte::canonical_json(fatpte::probe_host());
    std::fwrite(json.data(), 1, json.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 4;
  }
  if (argc >= 3 && std::strcmp(argv[1], "--check-profile") == 0) {
    // Exactly the reader --device uses (tests/loader/test_cpp_profile_parity.py compares it with Python).
    int rc = 0;
    for (int i = 2; i < argc; ++i) {
      auto p = fatpte::profile_from_file(argv[i]);
      if (p.ok()) {
        std::printf("OK\n");
        continue;
      }
      // The field path can hold any key of the file: bytes outside printable ASCII (and the
      // backslash) are written \xNN so the output stays one line per file.
      std::string field;
      for (unsigned char c : p.error().field()) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        field += c >= 0x20 && c < 0x7F && c != '\\' ? std::string(1, static_cast<char>(c)) : std::string(hex);
      }
      std::printf("%s %s\n", fatpte::error_tag(p.error().code()), field.empty() ? "-" : field.c_str());
      std::fprintf(stderr, "fatpte-run: %s\n", p.error().describe().c_str());
      if (rc == 0) rc = exit_code(p.error().code());
    }
    return std::fflush(stdout) == 0 ? rc : 4;
  }
  std::string file, device = "host", input_path;
  std::vector<std::string> prefer, exclude, backend_dirs, trusted_keys;
  bool select_only = false, explain = false, json = false, require_signature = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--select-only") {
      select_only = true;
    } else if (a == "--explain") {
      explain = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--require-signature") {
      require_signature = true;
    } else if (a == "--trusted-key" && has_value) {
      trusted_keys.push_back(argv[++i]);
    } else if ((a == "--device" || a == "--prefer" || a == "--exclude" || a == "--backend-path" || a == "--input") &&
               has_value) {
      const char* v = argv[++i];
      if (a == "--backend-path") backend_dirs.push_back(v);
      if (a == "--input") input_path = v;
      if (a == "--device") device = v;
      if (a == "--prefer") split_into(v, prefer);
      if (a == "--exclude") split_into(v, exclude);
    } else if (!a.empty() && a[0] != '-' && file.empty()) {
      file = a;
    } else {
      return usage(("unexpected argument '" + a + "'").c_str());
    }
  }
  if (file.empty()) return usage("no container given");
  if (!select_only && input_path.empty()) return usage("give the network's input with --input FILE");
  if (require_signature != !trusted_keys.empty()) return usage("--require-signature needs --trusted-key PUBLIC.pem, and --trusted-key needs --require-signature");
  if (require_signature && select_only) return usage("--require-signature verifies what is run: it does not go with --select-only");
  if (!select_only) {
    return run_with_c_api(file, device, prefer, exclude, backend_dirs, input_path, explain, trusted_keys);
  }
  try {
    fatpte::DeviceProfile profile;
    if (device == "host") {
      profile = fatpte::probe_host();
    } else {
      auto p = fatpte::profile_from_file(device);
      if (!p.ok()) {
        std::fprintf(stderr, "fatpte-run: %s\n", p.error().describe().c_str());
        return exit_code(p.error().code());
      }
      profile = p.value();
    }
    auto opened = fatpte::Container::open_file(file);
    if (!opened.ok()) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(), opened.error().describe().c_str());
      return exit_code(opened.error().code());
    }
    const fatpte::Container& c = *opened.value();
    auto sel = fatpte::select(c, profile, prefer, exclude);
    if (!sel.ok()) {
      if (json && sel.error().code() == fatpte::Error::NO_SPECIALIZATION_FITS) {
        // As `fatpte select --json`: every verdict on stdout, `chosen` null; the error follows.
        auto assessed = fatpte::assess(c, profile, prefer, exclude);
        if (assessed.ok()) std::fputs(fatpte::selection_json(c, assessed.value()).c_str(), stdout);
      }
      std::fprintf(stderr, "%s: %s\n", file.c_str(), sel.error().describe().c_str());
      return exit_code(sel.error().code());
    }
    if (json) {
      std::fputs(fatpte::selection_json(c, sel.value()).c_str(), stdout);
    } else if (explain) {
      std::printf("%s\n", fatpte::explain(c, sel.value()).c_str());
    } else {
      const fatpte::Entry& e = c.entries()[sel.value().chosen];
      std::printf("%s [%s]\n", e.name.c_str(), e.backend_id.c_str());
    }
    return std::fflush(stdout) == 0 ? 0 : 4;
  } catch (const std::exception& exc) {
    std::fprintf(stderr, "fatpte-run: %s\n", exc.what());
    return 4;
  }
}
