// fatpte-verify FILE --trusted-key PUBLIC.pem [--trusted-key ...] [--signature SIG]: the whole
// verification of specs/nfat-signature.md section 6 through the C API (fatpte/signature.h), as
// `fatpte verify` runs it. Prints `OK` or the first error as `E1311 <offset> <field>` (`-` for
// none), then `thinned: a,b` (the signed entries FILE no longer holds), then `unsigned golden:
// a,b` (the signed entries whose golden calls the signature does not vouch for, section 6.1); the
// message on stderr. Exit as the Python CLI, by the error's category (fatpte::exit_status): 0
// verified, 5 not, 1 when FILE is no valid container, 4 when a file cannot be read (a FIFO given as
// a key included), 2 on a usage error or a malformed key file (E0702).
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/json.hpp"
#include "fatpte/fatpte.h"
#include "fatpte/signature.h"
#include "fatpte/status.hpp"
#include "fatpte/text.hpp"

namespace {

int line(fatpte_status s, const fatpte_error& err, const char* file) {
  std::printf("%s ", fatpte_status_tag(s));
  if (err.offset == FATPTE_NO_OFFSET) {
    std::printf("-");
  } else {
    std::printf("%" PRIu64, err.offset);
  }
  std::printf(" %s\n", err.field[0] != '\0' ? err.field : "-");
  std::fprintf(stderr, "%s: %s\n", file, err.message);
  return fatpte::exit_status(static_cast<fatpte::Error>(s));
}

// The signed entries whose golden calls the signature does not vouch for, comma-separated.
std::string unsigned_golden(const fatpte_container* c, const fatpte_signature_report* report) {
  std::string out;
  uint32_t n = 0;
  if (report == nullptr || fatpte_entry_count(c, &n) != FATPTE_OK) return out;
  for (uint32_t i = 0; i < n; ++i) {
    int flag = 0;
    const char* name = nullptr;
    if (fatpte_signature_golden_unsigned(report, i, &flag) != FATPTE_OK || flag == 0) continue;
    if (fatpte_entry_name(c, i, &name) != FATPTE_OK) continue;
    out += (out.empty() ? "" : ",") + std::string(name);
  }
  return out;
}

// The command line: FILE, its trusted keys, --signature and --refuse-downgrade.
struct Args {
  const char* file = nullptr;
  const char* signature = nullptr;
  const char* downgrade = nullptr;
  std::vector<const char*> keys;
};

// false on a usage error.
bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--trusted-key") == 0 && i + 1 < argc) {
      a.keys.push_back(argv[++i]);
    } else if (std::strcmp(argv[i], "--signature") == 0 && i + 1 < argc) {
      a.signature = argv[++i];
    } else if (std::strcmp(argv[i], "--refuse-downgrade") == 0 && i + 1 < argc) {
      a.downgrade = argv[++i];
    } else if (a.file == nullptr && argv[i][0] != '-') {
      a.file = argv[i];
    } else {
      return false;
    }
  }
  return a.file != nullptr && !a.keys.empty();
}

// What verification needs besides FILE, freed when it goes.
struct Inputs {
  fatpte_device* device = nullptr;
  fatpte_trust* trust = nullptr;
  std::optional<std::string> detached;  // --signature's bytes, empty ones included
  ~Inputs() {
    fatpte_trust_free(trust);
    fatpte_device_free(device);
  }
};

// The device, the trusted keys and the detached signature, in that order: 0, or the exit status of
// the first that cannot be read (its message on stderr).
int load_inputs(const Args& a, Inputs& in) {
  fatpte_error err;
  // --refuse-downgrade: step 11 for this device, after every other step (as `fatpte verify`).
  if (a.downgrade != nullptr && fatpte_device_load(a.downgrade, &in.device, &err) != FATPTE_OK) {
    std::fprintf(stderr, "%s\n", fatpte::terminal_safe(err.message).c_str());
    return fatpte::exit_status(static_cast<fatpte::Error>(err.code));
  }
  const fatpte_status s = fatpte_trust_load(a.keys.data(), a.keys.size(), &in.trust, &err);
  if (s != FATPTE_OK) {
    // A key file that is not a regular file or cannot be read is I/O (E0811, E0801: 4); one that
    // holds no single public key is a malformed input the user gave (E0702: 2), as in Python.
    std::fprintf(stderr, "%s\n", fatpte::terminal_safe(err.message).c_str());
    return fatpte::exit_status(static_cast<fatpte::Error>(s));
  }
  if (a.signature == nullptr) return 0;
  // A regular file, read without blocking on a FIFO, up to one byte past MAX_SIGNATURE_SIZE:
  // the bundle's reader refuses a larger one as E1302 at step 2 (specs/nfat-signature.md
  // section 6 step 1), after the container's own checks, as Python's verify does.
  bool more = false;
  auto read = fatpte::json::read_head(a.signature, std::uint64_t{fatpte::format::kMaxSignatureSize} + 1,
                                      "the signature", more);
  if (!read.ok()) {
    std::fprintf(stderr, "fatpte-verify: %s\n", fatpte::terminal_safe(read.error().describe()).c_str());
    return fatpte::exit_status(read.error().code());
  }
  in.detached = std::move(read).value();
  return 0;
}

// The signed entries FILE no longer holds, comma-separated (none unless it verified).
std::string thinned(const fatpte_signature_report* report, fatpte_status s) {
  std::string out;
  uint32_t n = 0;
  if (report != nullptr && s == FATPTE_OK) fatpte_signature_thinned_count(report, &n);
  for (uint32_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    fatpte_signature_thinned_name(report, i, &name);
    out += (i ? "," : "") + std::string(name);
  }
  return out;
}

// Every step of section 6 for the open container `c`, the verdict and both lists printed.
int verify(fatpte_container* c, const char* file, const Inputs& in) {
  fatpte_error err;
  fatpte_signature_report* report = nullptr;
  fatpte_status s = fatpte_verify_signature(c, in.trust, in.detached ? in.detached->data() : nullptr,
                                            in.detached ? in.detached->size() : 0, &report, &err);
  if (report != nullptr) {
    fatpte_error bytes_err;
    const fatpte_status b = fatpte_signature_verify_all(c, report, &bytes_err);
    if (s == FATPTE_OK && b != FATPTE_OK) {
      s = b;
      err = bytes_err;
    }
    if (s == FATPTE_OK && in.device != nullptr) s = fatpte_signature_check_downgrade(c, report, in.device, &err);
  }
  int rc = 0;
  if (s == FATPTE_OK) {
    std::printf("OK\n");
  } else {
    rc = line(s, err, file);
  }
  std::printf("thinned: %s\n", thinned(report, s).c_str());
  std::printf("unsigned golden: %s\n", unsigned_golden(c, report).c_str());
  fatpte_signature_report_free(report);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) {
    std::fprintf(stderr, "usage: fatpte-verify FILE --trusted-key PUBLIC.pem [--trusted-key ...] [--signature SIG] "
                         "[--refuse-downgrade host|DEVICE|PROFILE.json]\n");
    return 2;
  }
  Inputs in;
  if (const int rc = load_inputs(a, in); rc != 0) return rc;
  fatpte_container* c = nullptr;
  fatpte_error err;
  const fatpte_status s = fatpte_open_file(a.file, &c, &err);
  if (s != FATPTE_OK) {
    const int rc = line(s, err, a.file);
    std::printf("thinned: \nunsigned golden: \n");
    return rc;
  }
  const int rc = verify(c, a.file, in);
  fatpte_close(c);
  return rc;
}
