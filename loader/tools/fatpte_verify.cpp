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

}  // namespace

int main(int argc, char** argv) {
  const char* file = nullptr;
  const char* signature = nullptr;
  const char* downgrade = nullptr;
  std::vector<const char*> keys;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--trusted-key") == 0 && i + 1 < argc) {
      keys.push_back(argv[++i]);
    } else if (std::strcmp(argv[i], "--signature") == 0 && i + 1 < argc) {
      signature = argv[++i];
    } else if (std::strcmp(argv[i], "--refuse-downgrade") == 0 && i + 1 < argc) {
      downgrade = argv[++i];
    } else if (file == nullptr && argv[i][0] != '-') {
      file = argv[i];
    } else {
      file = nullptr;
      break;
    }
  }
  if (file == nullptr || keys.empty()) {
    std::fprintf(stderr, "usage: fatpte-verify FILE --trusted-key PUBLIC.pem [--trusted-key ...] [--signature SIG] "
                         "[--refuse-downgrade host|DEVICE|PROFILE.json]\n");
    return 2;
  }
  fatpte_error err;
  // --refuse-downgrade: step 11 for this device, after every other step (as `fatpte verify`).
  fatpte_device* device = nullptr;
  if (downgrade != nullptr && fatpte_device_load(downgrade, &device, &err) != FATPTE_OK) {
    std::fprintf(stderr, "%s\n", fatpte::terminal_safe(err.message).c_str());
    return fatpte::exit_status(static_cast<fatpte::Error>(err.code));
  }
  fatpte_trust* trust = nullptr;
  fatpte_status s = fatpte_trust_load(keys.data(), keys.size(), &trust, &err);
  if (s != FATPTE_OK) {
    // A key file that is not a regular file or cannot be read is I/O (E0811, E0801: 4); one that
    // holds no single public key is a malformed input the user gave (E0702: 2), as in Python.
    std::fprintf(stderr, "%s\n", fatpte::terminal_safe(err.message).c_str());
    fatpte_device_free(device);
    return fatpte::exit_status(static_cast<fatpte::Error>(s));
  }
  std::string detached;
  if (signature != nullptr) {
    // A regular file, read without blocking on a FIFO, up to one byte past MAX_SIGNATURE_SIZE:
    // the bundle's reader refuses a larger one as E1302 at step 2 (specs/nfat-signature.md
    // section 6 step 1), after the container's own checks, as Python's verify does.
    bool more = false;
    auto read = fatpte::json::read_head(signature, std::uint64_t{fatpte::format::kMaxSignatureSize} + 1,
                                        "the signature", more);
    if (!read.ok()) {
      std::fprintf(stderr, "fatpte-verify: %s\n", fatpte::terminal_safe(read.error().describe()).c_str());
      fatpte_trust_free(trust);
      fatpte_device_free(device);
      return fatpte::exit_status(read.error().code());
    }
    detached = std::move(read).value();
  }
  fatpte_container* c = nullptr;
  s = fatpte_open_file(file, &c, &err);
  int rc = 0;
  if (s != FATPTE_OK) {
    rc = line(s, err, file);
    std::printf("thinned: \nunsigned golden: \n");
  } else {
    fatpte_signature_report* report = nullptr;
    s = fatpte_verify_signature(c, trust, detached.empty() ? nullptr : detached.data(), detached.size(), &report,
                                &err);
    if (report != nullptr) {
      fatpte_error bytes_err;
      const fatpte_status b = fatpte_signature_verify_all(c, report, &bytes_err);
      if (s == FATPTE_OK && b != FATPTE_OK) {
        s = b;
        err = bytes_err;
      }
      if (s == FATPTE_OK && device != nullptr) s = fatpte_signature_check_downgrade(c, report, device, &err);
    }
    if (s == FATPTE_OK) {
      std::printf("OK\n");
    } else {
      rc = line(s, err, file);
    }
    std::string thinned;
    uint32_t n = 0;
    if (report != nullptr && s == FATPTE_OK) fatpte_signature_thinned_count(report, &n);
    for (uint32_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      fatpte_signature_thinned_name(report, i, &name);
      thinned += (i ? "," : "") + std::string(name);
    }
    std::printf("thinned: %s\n", thinned.c_str());
    std::printf("unsigned golden: %s\n", unsigned_golden(c, report).c_str());
    fatpte_signature_report_free(report);
    fatpte_close(c);
  }
  fatpte_trust_free(trust);
  fatpte_device_free(device);
  return rc;
}
