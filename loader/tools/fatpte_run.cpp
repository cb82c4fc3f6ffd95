// fatpte-run: the loader's command line. `fatpte-run --help` prints the text below (kHelp); the
// run mode goes through the C API end to end (open, select, load, execute), so the tests of
// fatpte-run exercise the interface a C caller uses.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.hpp"
#include "common/output_file.hpp"
#include "common/text.hpp"
#include "device/host_match.hpp"
#include "fatpte/device.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/fatpte.h"
#include "fatpte/fatpte.hpp"
#include "fatpte/profile.hpp"
#include "fatpte/select.hpp"
#include "fatpte/signature.h"
#include "fatpte/tensor.hpp"

// Under AddressSanitizer the run mode ends as any program does, so that leaks and errors in
// tearing down ExecuTorch's method, the mapping and the libraries are still caught by the tests.
#if defined(__SANITIZE_ADDRESS__)
#define FATPTE_RUN_TEARDOWN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FATPTE_RUN_TEARDOWN 1
#endif
#endif

namespace {

const char kHelp[] = R"(usage: fatpte-run FILE --inputs CALLS.json [options]  select, load and run the entry for this device
       fatpte-run FILE --self-test [--inputs CALLS.json] [options]  the same, each entry checked by its golden calls first
       fatpte-run FILE --golden-report [--entry NAME] [--save-outputs DIR] [options]  run the golden calls and report
       fatpte-run FILE --select-only [--device D] [--with-executorch [--backend-path DIR]...] [--prefer W]...
                  [--exclude W]... [--explain] [--json]
       fatpte-run --device-json [--with-executorch [--backend-path DIR]...] [--vendor-runtime NAME=PATH]...
                  print this machine's device profile
       fatpte-run --check-profile PROFILE.json...  only read device profiles
       fatpte-run --help

Run mode: choose the entry of the NFAT container FILE for the device (specs/nfat-manifest.md
section 6), load it, falling back to the next eligible entry when it cannot be loaded, and run
its method on each call of --inputs in order, on one loaded method (state such as a mutable
buffer or a KV cache carries from one call to the next). ExecuTorch programs (payload kind ET12)
run on ExecuTorch's runtime with the backend libraries their delegates need, loaded at run time;
other payloads run through fatpte's example backend ABI (libfatpte_backend_<ID>.so).

  --device host|NAME|PROFILE.json  the device to choose for: this machine (default), a named
                          profile ($FATPTE_DEVICES_DIR, else specs/devices/ for the build tree's
                          fatpte-run, the prefix's share/fatpte/devices/ for an installed one),
                          or a profile file. A profile of another architecture or OS than this
                          machine's (raspberry-pi-5 on x86-64) makes the run a dry run of the
                          choice: `dry run of the choice: WHY`, then `chosen: NAME [ID]`; nothing
                          is loaded and no call is made (exit 0; 3 when no entry fits); --json
                          says it in "dry_run" (specs/run-report.md)
  --method NAME           the program's method to load (default forward)
  --inputs CALLS.json     the calls (required, or --input): a JSON list of {"inputs": [tensor, ...]}, each tensor
                          {"dtype": "float32", "shape": [2, 3], "values": [...]} (the `calls` of
                          tests/fixtures/executorch/fixtures.json; other keys are ignored)
  --input VALUES.txt      one call with one float32 tensor: whitespace-separated numbers
  --backend-lib ID=PATH   the library of ExecuTorch backend ID (XnnpackBackend, ...) or of the
                          operators (kernels, kernels_*): a file name searched in the backend
                          path, or a path; ID= withholds it (repeatable). For a program
                          whose delegates are fat delegates (FatpteBackend), every library
                          named here is loaded so that the fat delegate can choose it
  --vendor-runtime NAME=PATH  the library of vendor runtime NAME (openvino: OpenVINO's
                          libopenvino_c.so.*), looked at first; then its variable
                          (OPENVINO_LIB_PATH), the openvino package of $VIRTUAL_ENV, then
                          $CONDA_PREFIX, then the system's library search; NAME= withholds it:
                          entries whose backend needs it (OpenvinoBackend) fall back, and
                          --device-json lists none of its devices (repeatable;
                          specs/device-profile.md 9.1). --explain says where it was found, or
                          every place looked
  --backend-map MAP.json  {"search_path": [...], "libraries": {"ID": "PATH", ...}}
  --backend-path DIR      search DIR for backend libraries (repeatable); then FATPTE_BACKEND_PATH
                          (':'-separated), then the default folders: the SDK's and the build
                          folder for the build tree's fatpte-run; an installed one's bin/, lib/
                          and its libexecutorch.so's folder, never the build tree's
  --no-default-backends   neither search the default folders nor load ExecuTorch's CPU
                          kernels unless --backend-lib kernels=PATH names them
  --prefer W, --exclude W entry names or backend ids to prefer or leave out (repeatable, or
                          comma-separated)
  --no-fallback           try only the chosen entry: when it cannot be loaded, that is the error
                          (by default each eligible entry is tried in rank order until one loads)
  --entry NAME            try only the entry NAME (it must be eligible on the device)
  --self-test             before serving an entry, run its golden calls (specs/nfat-manifest.md
                          section 11) and compare each output with the golden one: a mismatch is a
                          failed load, so the next eligible entry is tried, the reason (E1401) in
                          --explain and --json; without --inputs, only that
  --golden-report         load the entry (no self-test), run its golden calls of the method and
                          print every figure: `golden: SUMMARY` (with --json, "golden": {...}:
                          per call and output max_abs, max_rel, atol, rtol, bound, passed); exit
                          6 when an output is outside its tolerance or a call cannot run
  --save-outputs DIR      write each output to DIR/call-K-output-J.bin (its bytes, row-major),
                          K counting the calls made (with --golden-report, in the order of the
                          report's calls); --json then gives each output's dtype, shape and
                          file, not its values. Each is written whole to a temporary file in
                          DIR, then renamed into place; an existing file there that is not a
                          regular file (a symbolic link, a directory, a FIFO, a device) is
                          refused (E0811, exit 4), never written through
  --isolate               qualify each entry in a child process before loading it here (a
                          fatpte-run beside libfatpte, or --qualifier PATH, run with a fixed
                          argument vector and environment): it loads the entry and runs its
                          golden calls (or, with none, the first call of --inputs); a crash (any
                          signal: SIGSEGV, SIGILL...), a non-zero exit or a timeout demotes the
                          entry with that reason and the next eligible entry is tried
  --isolate-timeout MS    the child's time limit (default 30000 ms); past it, it is killed
  --isolate-launcher WORD a word before the child program (repeatable), e.g. qemu-aarch64
  --isolate-env NAME      a variable of the environment the child gets (repeatable; none else)
  --qualifier PATH        the child program (default: fatpte-run beside libfatpte)
  --check-finite          an output holding NaN or an infinity fails the call: the entry falls
                          back (below)
  --call-deadline MS      a call running past MS fails: the entry falls back (below). The call
                          runs on a worker thread, abandoned with its entry at the deadline
                          (one thread and one loaded entry leak per abandoned call)
                          Fallback after load (unless --no-fallback): a call the entry fails (an
                          execute error, or as the two flags above say; not inputs that do not
                          fit the method) loads the next eligible entry, its state initialised
                          from its own program, and retries the call once on it: a line
                          `fallback: call K: NAME [ID] failed (REASON): ...` (stdout), and in
                          --json "fallbacks": [{"call", "from", "to", "reason", "detail"}]
  --explain               print the selection and every loading step first: the profile's file,
                          where libraries were searched, in order, and each one's path
  --json                  print {"chosen": NAME, "backend_id": ID, "method": M, "dispatch":
                          [lines], "calls": [{"outputs": [tensor, ...]}, ...], "golden": ...,
                          "error": null} instead of text; whatever ends the run, the same, its
                          "error" {"code": "E0702", "message": ...} (the error stderr says);
                          when no entry loads, "chosen": null and every attempt;
                          "vendor_runtimes": where each vendor runtime the probe looked
                          for was found, or every place looked (specs/run-report.md)
  --executorch-log        also print ExecuTorch's own log lines (stderr)
  --require-signature     verify the container's signature against the --trusted-key keys before
                          selection (specs/nfat-signature.md steps 1 to 8) and hash each entry's
                          payload and named data after its backends are found and before it is
                          loaded, a fallback included (steps 9 and 10): nothing unverified
                          reaches a backend (exit 5)
  --trusted-key PUBLIC.pem  a trusted public key (PEM; repeatable; needs --require-signature)
  --refuse-downgrade      with --require-signature: refuse a container from which the entry this
                          device would get among the signed entries was thinned away (step 11;
                          off by default: specs/nfat-signature.md section 6)
  --receipt FILE          append the load's receipt to FILE, one line of JSON (specs/receipts.md):
                          the entry chosen, why each other one was not, the self-test, the
                          verdict store's hits, the device and the runtime; no input data and no
                          path but the container's file name
  --receipt-details       with --receipt: each reason's words too (they can name library paths)
  --verdicts DIR          remember each entry's verdict in DIR/fatpte-run.verdicts.json
                          (specs/verdicts.md): an entry that crashed or failed its golden calls
                          is skipped without being tried; one that passed them is served
                          without running them again (with --self-test); any change of the
                          container, the device or a library it loads makes it tried again

Text output: `ran: NAME [BACKEND_ID]`, then `call N: output K: DTYPE [SHAPE] VALUES...` per
output (with --input: `output: VALUES...`). An empty list of calls (`[]`) loads the entry and
runs nothing.

--device-json --with-executorch also lists, as executorch_backends, the ExecuTorch backends this
runtime provides: every libexecutorch_backend_*.so of the backend path (--backend-path, then
FATPTE_BACKEND_PATH, then the default folders of --backend-path; a file name once) is loaded, and the backends registered and available in
ExecuTorch's registry are listed. --select-only --with-executorch selects for this machine with
those backends, as `fatpte select --device host` does when it finds this fatpte-run.

For a program whose delegates are fat delegates (FatpteBackend, found beside libfatpte by
default), the libraries of the backends its entries run on are loaded too, as for any program's
backends; --explain and --json say which inner entry the fat delegate runs and why not the others.

A method's planned memory (what its MethodMeta declares) is reserved, not committed: pages count
once the program writes them. A method declaring more than half this machine's memory (at most
64 GiB) is skipped with the reason, and the next eligible entry tried.

A backend id without --backend-lib is looked up as ExecuTorch names its libraries
(XnnpackBackend -> libexecutorch_backend_xnnpack.so); `kernels` defaults to
libexecutorch_kernels_optimized.so. Libraries are never taken from the container.

Exit codes as the Python CLI: 0 ok, 1 invalid container, 2 usage (a call that does not fit the
method), 3 no specialization fits or none that fits could be loaded (with --self-test: none
passed its golden calls), 4 I/O error, 5 not verified (--require-signature), 6 an entry disagrees
with its golden calls (--golden-report).
)";

int usage(const std::string& why) {
  // The synopsis: kHelp up to its first blank line.
  const std::string help = kHelp;
  std::fprintf(stderr, "fatpte-run: %s\n%s\n", why.c_str(), help.substr(0, help.find("\n\n") + 1).c_str());
  return 2;
}

// The exit code of an error's category, as the Python CLI maps them.
int exit_code(fatpte::Error code) { return fatpte::exit_status(code); }

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
  // The whole message: a failed load lists every entry tried, past the 511 bytes of err.message.
  const char* full = fatpte_last_message();
  std::fprintf(stderr, "%s\n", fatpte::terminal_safe(file + ": " + (full[0] != '\0' ? full : err.message)).c_str());
  return exit_code(static_cast<fatpte::Error>(err.code));
}

int fail_with(const std::string& file, const fatpte::Status& s) {
  std::fprintf(stderr, "%s\n", fatpte::terminal_safe(file + ": " + s.describe()).c_str());
  return exit_code(s.code());
}

struct RunArgs {
  std::string file;
  std::string device = "host";
  std::string method;
  std::string inputs_json;
  std::string input_text;
  std::vector<std::string> prefer, exclude, dirs, libraries, maps, trusted_keys, vendor_runtimes;
  std::string entry;
  std::string save_outputs;
  std::string verdicts;
  std::string receipt;
  bool receipt_details = false;
  bool self_test = false;
  bool golden_report = false;
  bool explain = false;
  bool json = false;
  bool defaults = true;
  bool fallback = true;
  bool with_executorch = false;
  bool refuse_downgrade = false;
  bool select = false;
  bool executorch_log = false;
  bool require_signature = false;
  // Issue 38: isolated qualification and fallback after load.
  bool isolate = false;
  bool check_finite = false;
  std::string isolate_timeout, call_deadline, qualifier;
  std::vector<std::string> launcher, pass_env;
};

// --input: one float32 tensor from whitespace-separated numbers.
fatpte::Result<std::vector<fatpte::Call>> text_call(const std::string& path) {
  // A regular file of at most 64 MiB (16 M values), read without blocking on a FIFO.
  auto text = fatpte::json::read_file(path, std::uint64_t{64} << 20, "the input");
  if (!text.ok()) return text.error();
  std::istringstream in(text.value());
  std::vector<float> values;
  for (float v; in >> v;) values.push_back(v);
  if (!in.eof()) {
    return fatpte::fail(fatpte::Error::INVALID_ARGUMENT, fatpte::kNoOffset, "--input",
                        "the input %s is not whitespace-separated numbers", path.c_str());
  }
  fatpte::Tensor t;
  t.dtype = fatpte::DType::kFloat32;
  t.shape = {static_cast<std::int64_t>(values.size())};
  t.data.resize(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return std::vector<fatpte::Call>{fatpte::Call{{t}}};
}

fatpte::Tensor from_c(const fatpte_tensor& c) {
  fatpte::Tensor t;
  if (c.dtype == FATPTE_DTYPE_NONE) {
    t.none = true;
    return t;
  }
  t.dtype = static_cast<fatpte::DType>(c.dtype);
  t.shape.assign(c.shape, c.shape + c.rank);
  const auto* bytes = static_cast<const std::uint8_t*>(c.data);
  t.data.assign(bytes, bytes + c.nbytes);
  return t;
}

std::vector<std::string> lines_of(const std::string& text);

// --save-outputs: one output's bytes to DIR/call-K-output-J.bin (a name of fatpte-run's, never
// one from the container), by the rule of every output (common/output_file.hpp): only a regular
// file is replaced, never through a link, and whole or not at all.
fatpte::Status save_output(const std::string& dir, std::size_t call, std::size_t output, const fatpte::Tensor& t,
                           std::string& name) {
  name = "call-" + std::to_string(call) + "-output-" + std::to_string(output) + ".bin";
  return fatpte::write_output_file(dir + "/" + name, t.data.data(), t.data.size());
}

// An output as --json gives it: its values, or with --save-outputs its file.
std::string output_json(const fatpte::Tensor& t, const std::string& file) {
  if (file.empty() || t.none) return fatpte::tensor_json(t);
  std::string shape;
  for (std::size_t d = 0; d < t.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(t.shape[d]);
  return std::string("{\"dtype\": ") + fatpte::detail::json_quote(fatpte::dtype_name(t.dtype)) + ", \"shape\": [" +
         shape + "], \"file\": " + fatpte::detail::json_quote(file) + "}";
}

// The lines of an explanation as the items of a JSON list, each without its indent.
std::string json_lines(const std::string& text) {
  std::string out;
  for (const std::string& line : lines_of(text)) {
    const std::size_t first = line.find_first_not_of(' ');
    out += (out.empty() ? "\n    " : ",\n    ") + fatpte::detail::json_quote(first == std::string::npos ? "" : line.substr(first));
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::string line;
  for (char ch : text) {
    if (ch == '\n') {
      out.push_back(line);
      line.clear();
    } else {
      line += ch;
    }
  }
  if (!line.empty()) out.push_back(line);
  return out;
}

// The run mode's --json report (specs/run-report.md, specs/run_report.schema.json): one document
// for every outcome, printed once at the end, its `error` the code and message of the error the
// run ended with (stderr says the same), or null.
struct RunReport {
  std::string chosen = "null";
  std::string backend_id = "null";
  std::string grade = "null";  // how the entry serving fits: specs/nfat-manifest.md 6.3
  std::string method;
  std::string dispatch;  // the items of a JSON list
  std::string calls;     // the items of a JSON list
  std::string golden = "null";
  std::string fallbacks;  // the items of a JSON list
  std::string error = "null";
  std::string dry_run = "null";
  std::string vendor_runtimes = "[]";  // a JSON list: where the load looked for each vendor runtime
};

std::string report_json(const RunReport& r) {
  return "{\n  \"chosen\": " + r.chosen + ",\n  \"backend_id\": " + r.backend_id + ",\n  \"grade\": " + r.grade +
         ",\n  \"method\": " +
         fatpte::detail::json_quote(r.method) + ",\n  \"dispatch\": [" + r.dispatch + "\n  ],\n  \"calls\": [" +
         r.calls + "],\n  \"golden\": " + r.golden + ",\n  \"fallbacks\": [" + r.fallbacks + "],\n  \"error\": " + r.error +
         ",\n  \"dry_run\": " + r.dry_run +
         ",\n  \"vendor_runtimes\": " + r.vendor_runtimes + "\n}\n";
}

// The report's `grade` of an entry: its grade as a JSON string, null when the load graded none.
std::string grade_json(const fatpte_loaded* loaded, uint32_t entry) {
  const std::string grade = fatpte_loaded_grade(loaded, entry);
  return grade.empty() ? "null" : fatpte::detail::json_quote(grade);
}

// Records the error the run ends with; returns its exit status.
int record(RunReport& r, fatpte::Error code, const std::string& message) {
  r.error = std::string("{\"code\": \"") + fatpte::error_tag(code) + "\", \"message\": " +
            fatpte::detail::json_quote(message) + "}";
  return exit_code(code);
}

int fail_with(RunReport& r, const std::string& file, const fatpte_error& err) {
  const char* full = fatpte_last_message();
  record(r, static_cast<fatpte::Error>(err.code), file + ": " + (full[0] != '\0' ? full : err.message));
  return fail_with(file, err);
}

int fail_with(RunReport& r, const std::string& file, const fatpte::Status& s) {
  record(r, s.code(), file + ": " + s.describe());
  return fail_with(file, s);
}

int usage(RunReport& r, const std::string& why) {
  record(r, fatpte::Error::INVALID_ARGUMENT, why);
  return usage(why);
}

constexpr int kGoOn = -1;  // a step of the run mode went well: the next one follows

// Everything the caller gave is read before the container is touched.
int read_calls(const RunArgs& a, std::vector<fatpte::Call>& calls, RunReport& r) {
  const bool text_mode = !a.input_text.empty();
  if (a.inputs_json.empty() && !text_mode) return kGoOn;
  auto c = text_mode ? text_call(a.input_text) : fatpte::calls_from_file(a.inputs_json);
  if (!c.ok()) return fail_with(r, text_mode ? a.input_text : a.inputs_json, c.error());
  calls = std::move(c).value();
  return kGoOn;
}

using Options = std::unique_ptr<fatpte_load_options, void (*)(fatpte_load_options*)>;

// --receipt FILE: each receipt appended as one line in one writev(2) to FILE opened O_APPEND, so
// lines of concurrent runs do not interleave; a crash leaves every line written whole but perhaps
// the last, which then lacks its newline (readers skip it: specs/receipts.md). Appending is the
// point of the file, so it is not written whole to a temporary file and renamed as outputs are.
int g_receipt_fd = -1;

bool write_all(const char* p, std::size_t left) {
  while (left > 0) {
    const ssize_t n = ::write(g_receipt_fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

// The line and its newline in one writev, not copied into one string first; what a short write
// left, written after it.
void append_receipt(const char* line, size_t size, void*) {
  char newline = '\n';
  struct iovec parts[2] = {{const_cast<char*>(line), size}, {&newline, 1}};
  ssize_t n;
  do {
    n = ::writev(g_receipt_fd, parts, 2);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return;
  const std::size_t done = static_cast<std::size_t>(n);
  if (done <= size && write_all(line + done, size - done)) write_all(&newline, 1);
}

int open_receipts(const RunArgs& a, fatpte_load_options* options, RunReport& r) {
  if (a.receipt.empty()) return kGoOn;
  // Opened first and then looked at (no race between a check and the open): a symbolic link
  // (ELOOP), a FIFO without a reader (ENXIO: O_NONBLOCK never waits for one), or anything else
  // that fstat says is not a regular file is refused.
  g_receipt_fd = ::open(a.receipt.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
  const int open_errno = g_receipt_fd < 0 ? errno : 0;  // errno read on failure only: no binding otherwise
  struct stat sb;
  const bool regular = g_receipt_fd >= 0 && ::fstat(g_receipt_fd, &sb) == 0 && S_ISREG(sb.st_mode);
  if (!regular && (g_receipt_fd >= 0 || open_errno == ELOOP || open_errno == ENXIO || open_errno == EISDIR)) {
    if (g_receipt_fd >= 0) ::close(g_receipt_fd);
    g_receipt_fd = -1;
    return fail_with(r, a.receipt, fatpte::fail(fatpte::Error::NOT_A_FILE, fatpte::kNoOffset, "--receipt",
                                                "receipts are appended to a regular file only"));
  }
  if (g_receipt_fd < 0) {
    return fail_with(r, a.receipt, fatpte::fail(fatpte::Error::IO_ERROR, fatpte::kNoOffset, "--receipt",
                                                "cannot open it to append: %s", std::strerror(open_errno)));
  }
  const std::size_t slash = a.file.rfind('/');
  fatpte_load_options_set_receipt(options, append_receipt, nullptr,
                                  (slash == std::string::npos ? a.file : a.file.substr(slash + 1)).c_str(),
                                  a.receipt_details ? 1 : 0);
  return kGoOn;
}

// The load options the flags name: maps, search path, libraries, method, policy, trusted keys.
int set_options(const RunArgs& a, fatpte_load_options* options, RunReport& r) {
  fatpte_error err;
  for (const std::string& m : a.maps) {
    if (fatpte_load_options_read_map(options, m.c_str(), &err) != FATPTE_OK) return fail_with(r, m, err);
  }
  for (const std::string& d : a.dirs) fatpte_load_options_add_search_dir(options, d.c_str());
  for (const std::string& lib : a.libraries) {
    const std::size_t eq = lib.find('=');
    const std::string id = eq == std::string::npos ? lib : lib.substr(0, eq);
    const std::string path = eq == std::string::npos ? "" : lib.substr(eq + 1);
    if (eq == std::string::npos || fatpte_load_options_set_library(options, id.c_str(), path.c_str()) != FATPTE_OK) {
      return usage(r, "--backend-lib takes ID=PATH (an ExecuTorch backend id such as XnnpackBackend, or kernels), or "
                      "ID= to withhold it; got '" + lib + "'");
    }
  }
  for (const std::string& v : a.vendor_runtimes) {
    const std::size_t eq = v.find('=');
    if (eq == std::string::npos || fatpte_load_options_set_vendor_runtime(options, v.substr(0, eq).c_str(),
                                                                          v.substr(eq + 1).c_str()) != FATPTE_OK) {
      return usage(r, "--vendor-runtime takes NAME=PATH (openvino=/path/libopenvino_c.so.2640), or NAME= to withhold "
                      "it; got '" + v + "'");
    }
  }
  if (!a.method.empty()) fatpte_load_options_set_method(options, a.method.c_str());
  fatpte_load_options_set_defaults(options, a.defaults ? 1 : 0, 1);
  fatpte_load_options_set_command_line(options, 1);
  fatpte_load_options_set_fallback(options, a.fallback ? 1 : 0);
  fatpte_load_options_set_self_test(options, a.self_test ? 1 : 0);
  if (!a.verdicts.empty()) fatpte_load_options_set_verdicts(options, a.verdicts.c_str(), "fatpte-run");
  if (const int rc = open_receipts(a, options, r); rc != kGoOn) return rc;
  if (!a.trusted_keys.empty()) {
    const auto keys = c_strings(a.trusted_keys);
    fatpte_trust* trust = nullptr;
    if (fatpte_trust_load(keys.data(), keys.size(), &trust, &err) != FATPTE_OK) return fail_with(r, "fatpte-run", err);
    fatpte_load_options_require_signature(options, trust);
    fatpte_load_options_refuse_downgrade(options, a.refuse_downgrade ? 1 : 0);
    fatpte_trust_free(trust);
  }
  return kGoOn;
}

// A number of milliseconds a flag gives (1 to 2^32 - 1).
bool milliseconds(const std::string& text, uint32_t& out) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  const unsigned long long v = std::stoull(text);
  if (v == 0 || v > 0xFFFFFFFFull) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

// Issue 38's options: isolated qualification (its one call: the first of --inputs) and what fails
// a call after load.
int set_field_options(const RunArgs& a, const std::vector<fatpte::Call>& calls, fatpte_load_options* options,
                      RunReport& r) {
  uint32_t timeout = 0, deadline = 0;
  if (!a.isolate_timeout.empty() && !milliseconds(a.isolate_timeout, timeout)) {
    return usage(r, "--isolate-timeout takes a number of milliseconds, at least 1; got '" + a.isolate_timeout + "'");
  }
  if (!a.call_deadline.empty() && !milliseconds(a.call_deadline, deadline)) {
    return usage(r, "--call-deadline takes a number of milliseconds, at least 1; got '" + a.call_deadline + "'");
  }
  fatpte_load_options_set_isolate(options, a.isolate ? 1 : 0, timeout);
  if (!a.qualifier.empty()) fatpte_load_options_set_qualifier(options, a.qualifier.c_str());
  for (const std::string& w : a.launcher) fatpte_load_options_add_isolate_launcher(options, w.c_str());
  for (const std::string& n : a.pass_env) {
    if (fatpte_load_options_pass_environment(options, n.c_str()) != FATPTE_OK) {
      return usage(r, "--isolate-env takes a variable's name; got '" + n + "'");
    }
  }
  if (a.isolate && !calls.empty()) {
    const auto& inputs = calls[0].inputs;
    std::vector<fatpte_tensor> in(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      in[i] = fatpte_tensor{static_cast<int32_t>(inputs[i].dtype), static_cast<uint32_t>(inputs[i].shape.size()),
                            inputs[i].shape.data(), inputs[i].data.data(), inputs[i].data.size()};
    }
    fatpte_load_options_set_isolate_inputs(options, in.data(), in.size());
  }
  fatpte_load_options_set_check_finite(options, a.check_finite ? 1 : 0);
  fatpte_load_options_set_call_deadline(options, deadline);
  return kGoOn;
}

// --entry NAME: that entry, by its index.
int set_entry(const RunArgs& a, fatpte_container* c, fatpte_load_options* options, RunReport& r) {
  if (a.entry.empty()) return kGoOn;
  uint32_t index = 0;
  if (fatpte_find_entry(c, a.entry.c_str(), &index) != FATPTE_OK) {
    return fail_with(r, a.file, fatpte::fail(fatpte::Error::ENTRY_NOT_FOUND, fatpte::kNoOffset, "entry",
                                             "the container has no entry named '%s'", a.entry.c_str()));
  }
  fatpte_load_options_set_entry(options, index);
  return kGoOn;
}

using Loaded = std::unique_ptr<fatpte_loaded, void (*)(fatpte_loaded*)>;

// --explain: the file a named or given device profile was read from (where an installed
// fatpte-run finds its profiles: docs/cpp.md, "Install trees"), after the selection, whose text
// is Python's explain() word for word.
void explain_profile(const RunArgs& a) {
  if (!a.explain || a.json || a.device == "host") return;
  std::printf("device profile: %s\n", fatpte::terminal_safe(fatpte::profile_path(a.device)).c_str());
}

// The library's load policy: signature, selection, then each eligible entry in turn.
int load(const RunArgs& a, fatpte_container* c, fatpte_device* device, const fatpte_load_options* options,
         Loaded& out, RunReport& r) {
  fatpte_error err;
  const auto p = c_strings(a.prefer), x = c_strings(a.exclude);
  fatpte_loaded* loaded = nullptr;
  fatpte_load_report* report = nullptr;
  const fatpte_status st = fatpte_load_for(c, device, p.data(), p.size(), x.data(), x.size(), options, &loaded,
                                           a.explain || a.json ? &report : nullptr, &err);
  std::unique_ptr<fatpte_load_report, void (*)(fatpte_load_report*)> own_report(report, fatpte_load_report_free);
  if (report != nullptr) r.vendor_runtimes = fatpte_load_report_vendor_runtimes(report);
  if (a.explain && !a.json) {
    const std::string selection = fatpte_load_report_selection(report);
    // A failure's attempts are in its message (stderr), as a success's are printed below.
    if (!selection.empty()) std::printf("%s\n", fatpte::terminal_safe(selection).c_str());
    explain_profile(a);
  }
  if (st != FATPTE_OK) {
    // --json: every attempt and its reason, `chosen` null; the error follows on stderr.
    if (a.json) r.dispatch = json_lines(fatpte_load_report_dispatch(report));
    return fail_with(r, a.file, err);
  }
  out.reset(loaded);
  if (a.explain && !a.json) std::printf("%s\n", fatpte::terminal_safe(fatpte_loaded_explain(loaded)).c_str());
  uint32_t index = 0;
  const char* name = "";
  const char* backend = "";
  fatpte_loaded_entry(loaded, &index);
  fatpte_entry_name(c, index, &name);
  fatpte_entry_backend_id(c, index, &backend);
  if (!a.json) std::printf("ran: %s [%s]\n", fatpte::printable(name).c_str(), fatpte::printable(backend).c_str());
  r.chosen = fatpte::detail::json_quote(name);
  r.backend_id = fatpte::detail::json_quote(backend);
  r.grade = grade_json(loaded, index);
  r.method = fatpte_loaded_method(loaded);
  return kGoOn;
}

// --golden-report: the entry's golden calls, every figure; their outputs saved when asked. Exit 6
// (its error recorded) when an output is outside its tolerance or a call cannot run.
int golden_report(const RunArgs& a, fatpte_container* c, fatpte_loaded* loaded, RunReport& r) {
  fatpte_error err;
  fatpte_self_test_report* report = nullptr;
  const fatpte_status gst = fatpte_self_test(c, loaded, a.save_outputs.empty() ? 0 : 1, &report, &err);
  std::unique_ptr<fatpte_self_test_report, void (*)(fatpte_self_test_report*)> own_golden(report,
                                                                                          fatpte_self_test_report_free);
  if (report == nullptr) return fail_with(r, a.file, err);
  r.golden = fatpte_self_test_report_json(report);
  const std::string summary = fatpte_self_test_report_summary(report);
  if (!a.json) std::printf("golden: %s\n", fatpte::terminal_safe(summary).c_str());
  std::size_t made = 0;
  fatpte_self_test_report_call_count(report, &made);
  for (std::size_t k = 0; k < made && !a.save_outputs.empty(); ++k) {
    fatpte_tensor out;
    for (std::size_t o = 0; fatpte_self_test_report_output(report, k, o, &out) == FATPTE_OK; ++o) {
      std::string file;
      // K counts the calls made, in the order of the report's "calls".
      const fatpte::Status saved = save_output(a.save_outputs, k, o, from_c(out), file);
      if (!saved.ok()) return fail_with(r, "fatpte-run", saved);
    }
  }
  return gst == FATPTE_OK ? kGoOn : record(r, static_cast<fatpte::Error>(gst), a.file + ": " + summary);
}

// One call's outputs: saved when asked, into the report, printed as text without --json.
int print_outputs(const RunArgs& a, fatpte_loaded* loaded, std::size_t k, RunReport& r) {
  std::size_t count = 0;
  fatpte_output_count(loaded, &count);
  r.calls += std::string(k ? ", " : "") + "{\"outputs\": [";
  for (std::size_t o = 0; o < count; ++o) {
    fatpte_tensor out;
    fatpte_output(loaded, o, &out);
    const fatpte::Tensor t = from_c(out);
    std::string file;
    if (!a.save_outputs.empty()) {
      const fatpte::Status saved = save_output(a.save_outputs, k, o, t, file);
      if (!saved.ok()) return fail_with(r, "fatpte-run", saved);
    }
    r.calls += (o ? ", " : "") + output_json(t, file);
    if (a.json) continue;
    if (!a.input_text.empty()) {
      std::printf("output:");
      for (std::size_t i = 0; i < t.data.size() / sizeof(float); ++i) std::printf(" %.9g", t.as_double(i));
      std::printf("\n");
    } else {
      std::printf("call %zu: output %zu: %s\n", k, o, fatpte::tensor_text(t).c_str());
    }
  }
  r.calls += "]}";
  return kGoOn;
}

// The fallbacks after load from event `seen` on: a line each (text) and the report's items; the
// entry that serves now becomes the report's `chosen`.
void report_fallbacks(const RunArgs& a, fatpte_container* c, fatpte_loaded* loaded, std::size_t& seen, RunReport& r) {
  std::size_t count = 0;
  fatpte_loaded_fallback_count(loaded, &count);
  for (; seen < count; ++seen) {
    fatpte_fallback_event e;
    fatpte_loaded_fallback(loaded, seen, &e);
    const char* from = "";
    const char* to = "";
    fatpte_entry_name(c, e.from_entry, &from);
    if (e.has_to_entry) fatpte_entry_name(c, e.to_entry, &to);
    const std::string quoted_to = e.has_to_entry ? fatpte::detail::json_quote(to) : "null";
    r.fallbacks += std::string(seen ? ", " : "") + "{\"call\": " + std::to_string(e.call) + ", \"from\": " +
                   fatpte::detail::json_quote(from) + ", \"to\": " + quoted_to + ", \"reason\": " +
                   fatpte::detail::json_quote(e.reason) + ", \"detail\": " + fatpte::detail::json_quote(e.detail) + "}";
    r.chosen = quoted_to;
    r.grade = e.has_to_entry ? grade_json(loaded, e.to_entry) : "null";
    r.backend_id = "null";
    const char* backend = "";
    if (e.has_to_entry && fatpte_entry_backend_id(c, e.to_entry, &backend) == FATPTE_OK) {
      r.backend_id = fatpte::detail::json_quote(backend);
    }
    if (a.json) continue;
    const std::string then = e.has_to_entry ? "retried once on " + fatpte::printable(to) + " [" +
                                                  fatpte::printable(backend) + "], its state initialised from its program"
                                            : "no eligible entry remained";
    std::printf("fallback: call %llu: %s failed (%s): %s; %s\n", static_cast<unsigned long long>(e.call),
                fatpte::printable(from).c_str(), e.reason, fatpte::terminal_safe(e.detail).c_str(), then.c_str());
  }
}

// The calls of --inputs (or --input), in order, on the one loaded method.
int execute(const RunArgs& a, fatpte_container* c, fatpte_loaded* loaded, const std::vector<fatpte::Call>& calls,
            RunReport& r) {
  fatpte_error err;
  std::size_t seen = 0;
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const auto& inputs = calls[k].inputs;
    std::vector<fatpte_tensor> in(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      in[i] = fatpte_tensor{static_cast<int32_t>(inputs[i].dtype), static_cast<uint32_t>(inputs[i].shape.size()),
                            inputs[i].shape.data(), inputs[i].data.data(), inputs[i].data.size()};
    }
    const fatpte_status st = fatpte_execute(loaded, in.data(), in.size(), &err);
    const std::string full = st != FATPTE_OK ? fatpte_last_message() : "";
    report_fallbacks(a, c, loaded, seen, r);
    if (st != FATPTE_OK) {
      const std::string message = a.file + ": call " + std::to_string(k) + ": " + (!full.empty() ? full : std::string(err.message));
      std::fprintf(stderr, "%s\n", fatpte::terminal_safe(message).c_str());
      return record(r, static_cast<fatpte::Error>(err.code), message);
    }
    if (const int rc = print_outputs(a, loaded, k, r); rc != kGoOn) return rc;
  }
  return kGoOn;
}

// --device of another architecture or OS than this host's (device/host_match.hpp): the choice
// alone, said as a dry run; 0 when an entry is chosen. kGoOn for a device of this host's kind.
int dry_run(const RunArgs& a, RunReport& r) {
  if (a.device == "host") return kGoOn;
  auto profile = fatpte::load_profile(a.device);
  if (!profile.ok()) return fail_with(r, "fatpte-run", profile.error());  // fatpte_device_load read it already
  const std::string why = fatpte::detail::foreign_to_host(profile.value());
  if (why.empty()) return kGoOn;
  auto opened = fatpte::Container::open_file(a.file);
  if (!opened.ok()) return fail_with(r, a.file, opened.error());
  const fatpte::Container& c = *opened.value();
  auto sel = fatpte::select(c, profile.value(), a.prefer, a.exclude);
  std::string chosen = "null", backend_id = "null";
  if (sel.ok()) {
    const fatpte::Entry& e = c.entries()[sel.value().chosen];
    chosen = fatpte::detail::json_quote(e.name);
    backend_id = fatpte::detail::json_quote(e.backend_id);
    r.dispatch = json_lines(fatpte::explain(c, sel.value()));
  }
  const std::string said = why + "; nothing is loaded or run";
  r.dry_run = "{\"reason\": " + fatpte::detail::json_quote(said) + ", \"chosen\": " + chosen + ", \"backend_id\": " +
              backend_id + "}";
  if (!a.json) std::printf("dry run of the choice: %s\n", fatpte::terminal_safe(said).c_str());
  if (!sel.ok()) return fail_with(r, a.file, sel.error());
  if (a.json) return 0;
  if (a.explain) std::printf("%s\n", fatpte::terminal_safe(fatpte::explain(c, sel.value())).c_str());
  const fatpte::Entry& e = c.entries()[sel.value().chosen];
  std::printf("chosen: %s [%s]\n", fatpte::printable(e.name).c_str(), fatpte::printable(e.backend_id).c_str());
  return 0;
}

// Read the calls, set the options, open the container, load an entry, run: each step's failure
// ends the run with its error recorded in `r`.
int run_with_c_api(const RunArgs& a, RunReport& r) {
  std::vector<fatpte::Call> calls;
  if (const int rc = read_calls(a, calls, r); rc != kGoOn) return rc;
  fatpte_error err;
  // The device is parsed once and handed over as a handle; none: this machine, probed for what
  // the container's entries read.
  fatpte_device* device = nullptr;
  if (a.device != "host" && fatpte_device_load(a.device.c_str(), &device, &err) != FATPTE_OK) {
    return fail_with(r, "fatpte-run", err);
  }
  std::unique_ptr<fatpte_device, void (*)(fatpte_device*)> own_device(device, fatpte_device_free);
  if (const int rc = dry_run(a, r); rc != kGoOn) return rc;
  fatpte_load_options* options = nullptr;
  fatpte_load_options_new(&options);
  const Options own_options(options, fatpte_load_options_free);
  if (const int rc = set_options(a, options, r); rc != kGoOn) return rc;
  if (const int rc = set_field_options(a, calls, options, r); rc != kGoOn) return rc;
  fatpte_container* c = nullptr;
  if (fatpte_open_file(a.file.c_str(), &c, &err) != FATPTE_OK) return fail_with(r, a.file, err);
  std::unique_ptr<fatpte_container, void (*)(fatpte_container*)> own_container(c, fatpte_close);
  if (const int rc = set_entry(a, c, options, r); rc != kGoOn) return rc;
  Loaded loaded(nullptr, fatpte_unload);
  if (const int rc = load(a, c, device, options, loaded, r); rc != kGoOn) return rc;
  // --golden-report takes no calls (main refuses --inputs with it): the report is the run.
  int rc = a.golden_report ? golden_report(a, c, loaded.get(), r) : kGoOn;
  if (rc == kGoOn) rc = execute(a, c, loaded.get(), calls, r);
  // The steps as they stand once the calls are made, as the report has always given them.
  r.dispatch = json_lines(fatpte_loaded_explain(loaded.get()));
  return rc == kGoOn ? 0 : rc;
}

// The run mode: the run, then with --json its report, whatever the outcome.
int run_mode(const RunArgs& a) {
  RunReport r;
  r.method = a.method.empty() ? "forward" : a.method;
  const int rc = run_with_c_api(a, r);
  if (a.json) std::fputs(report_json(r).c_str(), stdout);
  return std::fflush(stdout) == 0 ? rc : 4;
}

// This machine, probed for `scope`'s facts with the options' vendor runtimes, and with
// `with_executorch` the backends its ExecuTorch registry provides once the options' libraries are
// loaded: the probe's search of each vendor runtime is handed to those backends, so each is
// searched once (--select-only --device host, --device-json).
fatpte::DeviceProfile probe_this_machine(fatpte::ProbeScope scope, const fatpte::LoadOptions& options,
                                         bool with_executorch) {
  scope.vendor_runtimes = options.vendor_runtimes;
  std::vector<fatpte::VendorRuntimeSearch> searched;
  fatpte::DeviceProfile profile = fatpte::probe_host(scope, &searched);
  if (with_executorch) profile.executorch_backends = fatpte::runtime_backends(options, searched);
  return profile;
}

int select_only(const RunArgs& a) {
  fatpte::Result<fatpte::DeviceProfile> profile = fatpte::DeviceProfile{};
  if (a.device != "host") {
    profile = fatpte::load_profile(a.device);
    if (!profile.ok()) return fail_with("fatpte-run", profile.error());
  }
  auto opened = fatpte::Container::open_file(a.file);
  if (!opened.ok()) return fail_with(a.file, opened.error());
  const fatpte::Container& c = *opened.value();
  // This machine: only what the entries' requirements read, as fatpte_select(NULL) probes it;
  // with --with-executorch, and the backends its ExecuTorch runtime provides, as Python's
  // `--device host` has them when it finds this fatpte-run (specs/device-profile.md 5.1).
  if (a.device == "host") {
    fatpte::ProbeScope scope = fatpte::probe_scope(c);
    fatpte::LoadOptions options;
    options.search_path = a.dirs;
    for (const std::string& v : a.vendor_runtimes) {
      if (!fatpte::set_vendor_runtime(options, v).ok()) return usage("--vendor-runtime takes NAME=PATH or NAME=; got '" + v + "'");
    }
    profile = probe_this_machine(scope, options, a.with_executorch);
  }
  auto sel = fatpte::select(c, profile.value(), a.prefer, a.exclude);
  if (!sel.ok()) {
    if (a.json && sel.error().code() == fatpte::Error::NO_SPECIALIZATION_FITS) {
      // As `fatpte select --json`: every verdict on stdout, `chosen` null; the error follows.
      auto assessed = fatpte::assess(c, profile.value(), a.prefer, a.exclude);
      if (assessed.ok()) std::fputs(fatpte::selection_json(c, assessed.value()).c_str(), stdout);
    }
    return fail_with(a.file, sel.error());
  }
  if (a.json) {
    std::fputs(fatpte::selection_json(c, sel.value()).c_str(), stdout);
  } else if (a.explain) {
    std::printf("%s\n", fatpte::terminal_safe(fatpte::explain(c, sel.value())).c_str());
  } else {
    const fatpte::Entry& e = c.entries()[sel.value().chosen];
    std::printf("%s [%s]\n", fatpte::printable(e.name).c_str(), fatpte::printable(e.backend_id).c_str());
  }
  return std::fflush(stdout) == 0 ? 0 : 4;
}

int check_profiles(int argc, char** argv) {
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
    for (unsigned char ch : p.error().field()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", ch);
      field += ch >= 0x20 && ch < 0x7F && ch != '\\' ? std::string(1, static_cast<char>(ch)) : std::string(hex);
    }
    std::printf("%s %s\n", fatpte::error_tag(p.error().code()), field.empty() ? "-" : field.c_str());
    std::fprintf(stderr, "fatpte-run: %s\n", fatpte::terminal_safe(p.error().describe()).c_str());
    if (rc == 0) rc = exit_code(p.error().code());
  }
  return std::fflush(stdout) == 0 ? rc : 4;
}

// `--device-json [--with-executorch [--backend-path DIR]...]`: the host's profile, with the
// backends of this process's ExecuTorch registry once the backend path's libraries are loaded.
int device_json(int argc, char** argv) {
  bool with_executorch = false;
  fatpte::LoadOptions options;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--with-executorch") == 0) {
      with_executorch = true;
    } else if (std::strcmp(argv[i], "--vendor-runtime") == 0 && i + 1 < argc) {
      const fatpte::Status st = fatpte::set_vendor_runtime(options, argv[++i]);
      if (!st.ok()) return usage(st.message());
    } else if (std::strcmp(argv[i], "--backend-path") == 0 && i + 1 < argc) {
      options.search_path.push_back(argv[++i]);
    } else {
      return usage(std::string("unexpected argument '") + argv[i] + "' after --device-json");
    }
  }
  if (!options.search_path.empty() && !with_executorch) return usage("--backend-path goes with --with-executorch");
  if (with_executorch && !fatpte::has_executorch()) {
    return usage("--with-executorch: this fatpte-run was built without the ExecuTorch SDK");
  }
  const std::string json = fatpte::canonical_json(probe_this_machine(fatpte::ProbeScope{}, options, with_executorch));
  std::fwrite(json.data(), 1, json.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 4;
}

// Each flag of the run and --select-only modes, named once: a switch sets its field, an option
// takes the next argument. Looked up by length first and then bytes (string_view): the chain of
// std::string comparisons this replaces made each argument cost up to 45 libstdc++ calls, which
// `--receipt`, the last but one, paid all of (callgrind, issue 38).
struct Switch {
  std::string_view name;
  bool RunArgs::*field;
  bool value;
};
constexpr Switch kSwitches[] = {
    {"--select-only", &RunArgs::select, true},        {"--explain", &RunArgs::explain, true},
    {"--json", &RunArgs::json, true},                 {"--no-default-backends", &RunArgs::defaults, false},
    {"--no-fallback", &RunArgs::fallback, false},     {"--receipt-details", &RunArgs::receipt_details, true},
    {"--self-test", &RunArgs::self_test, true},       {"--golden-report", &RunArgs::golden_report, true},
    {"--with-executorch", &RunArgs::with_executorch, true},
    {"--refuse-downgrade", &RunArgs::refuse_downgrade, true},
    {"--executorch-log", &RunArgs::executorch_log, true},
    {"--require-signature", &RunArgs::require_signature, true},
    {"--isolate", &RunArgs::isolate, true},           {"--check-finite", &RunArgs::check_finite, true},
};

struct Option {
  std::string_view name;
  void (*take)(RunArgs&, const char*);
};
constexpr Option kOptions[] = {
    {"--isolate-timeout", [](RunArgs& a, const char* v) { a.isolate_timeout = v; }},
    {"--isolate-launcher", [](RunArgs& a, const char* v) { a.launcher.emplace_back(v); }},
    {"--isolate-env", [](RunArgs& a, const char* v) { a.pass_env.emplace_back(v); }},
    {"--qualifier", [](RunArgs& a, const char* v) { a.qualifier = v; }},
    {"--call-deadline", [](RunArgs& a, const char* v) { a.call_deadline = v; }},
    {"--trusted-key", [](RunArgs& a, const char* v) { a.trusted_keys.emplace_back(v); }},
    {"--backend-path", [](RunArgs& a, const char* v) { a.dirs.emplace_back(v); }},
    {"--input", [](RunArgs& a, const char* v) { a.input_text = v; }},
    {"--inputs", [](RunArgs& a, const char* v) { a.inputs_json = v; }},
    {"--method", [](RunArgs& a, const char* v) { a.method = v; }},
    {"--backend-lib", [](RunArgs& a, const char* v) { a.libraries.emplace_back(v); }},
    {"--vendor-runtime", [](RunArgs& a, const char* v) { a.vendor_runtimes.emplace_back(v); }},
    {"--backend-map", [](RunArgs& a, const char* v) { a.maps.emplace_back(v); }},
    {"--device", [](RunArgs& a, const char* v) { a.device = v; }},
    {"--entry", [](RunArgs& a, const char* v) { a.entry = v; }},
    {"--save-outputs", [](RunArgs& a, const char* v) { a.save_outputs = v; }},
    {"--verdicts", [](RunArgs& a, const char* v) { a.verdicts = v; }},
    {"--receipt", [](RunArgs& a, const char* v) { a.receipt = v; }},
    {"--prefer", [](RunArgs& a, const char* v) { split_into(v, a.prefer); }},
    {"--exclude", [](RunArgs& a, const char* v) { split_into(v, a.exclude); }},
};

// The flags of the run and --select-only modes into `a` (usage and exit 2 on one it does not know,
// or an option without its value).
int parse_args(int argc, char** argv, RunArgs& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto named = [&](const auto& k) { return k.name == arg; };
    const Switch* s = std::find_if(std::begin(kSwitches), std::end(kSwitches), named);
    if (s != std::end(kSwitches)) {
      a.*(s->field) = s->value;
      continue;
    }
    const Option* o = std::find_if(std::begin(kOptions), std::end(kOptions), named);
    if (o != std::end(kOptions) && i + 1 < argc) {
      o->take(a, argv[++i]);
    } else if (o == std::end(kOptions) && !arg.empty() && arg[0] != '-' && a.file.empty()) {
      a.file = arg;
    } else {
      const char* why = o != std::end(kOptions) ? ": it takes a value" : "";
      return usage("unexpected argument '" + std::string(arg) + "'" + why);
    }
  }
  return kGoOn;
}

// The flags that do not go together, and what each mode needs.
int check_args(const RunArgs& a) {
  if (a.file.empty()) return usage("no container given");
  if (a.require_signature != !a.trusted_keys.empty()) {
    return usage("--require-signature needs --trusted-key PUBLIC.pem, and --trusted-key needs --require-signature");
  }
  if (a.refuse_downgrade && !a.require_signature) return usage("--refuse-downgrade goes with --require-signature");
  if (a.require_signature && a.select) {
    return usage("--require-signature verifies what is run: it does not go with --select-only");
  }
  if (a.with_executorch && !a.select) return usage("--with-executorch goes with --select-only (or --device-json)");
  if (a.with_executorch && !fatpte::has_executorch()) {
    return usage("--with-executorch: this fatpte-run was built without the ExecuTorch SDK");
  }
  if (a.select) return kGoOn;  // the rest is the run mode's
  if (!a.isolate && (!a.isolate_timeout.empty() || !a.launcher.empty() || !a.pass_env.empty() || !a.qualifier.empty())) {
    return usage("--isolate-timeout, --isolate-launcher, --isolate-env and --qualifier go with --isolate");
  }
  if (a.golden_report && (a.self_test || !a.input_text.empty() || !a.inputs_json.empty())) {
    return usage("--golden-report runs the golden calls alone: it takes no --self-test, --inputs or --input");
  }
  if (!a.input_text.empty() && !a.inputs_json.empty()) {
    return usage("give the calls with --inputs CALLS.json or --input VALUES.txt, not both");
  }
  if (a.input_text.empty() && a.inputs_json.empty() && !a.self_test && !a.golden_report) {
    return usage("give the calls with --inputs CALLS.json (or one float32 input with --input VALUES.txt), or "
                 "--self-test or --golden-report");
  }
  if (!a.save_outputs.empty() && !a.input_text.empty()) return usage("--save-outputs goes with --inputs or --golden-report");
  return kGoOn;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
      std::fputs(kHelp, stdout);
      return std::fflush(stdout) == 0 ? 0 : 4;
    }
    if (argc >= 2 && std::strcmp(argv[1], "--device-json") == 0) return device_json(argc, argv);
    if (argc >= 3 && std::strcmp(argv[1], "--check-profile") == 0) return check_profiles(argc, argv);
    RunArgs a;
    if (const int rc = parse_args(argc, argv, a); rc != kGoOn) return rc;
    if (const int rc = check_args(a); rc != kGoOn) return rc;
    if (a.select) return select_only(a);
    fatpte::set_executorch_log(a.executorch_log);
    const int rc = run_mode(a);
#ifndef FATPTE_RUN_TEARDOWN
    // The run's own objects are released (run_with_c_api has returned); what is left is the
    // process-wide teardown of the libraries it loaded: ExecuTorch's kernel registry and
    // XNNPACK's thread pool (its threads joined), their static destructors and exit handlers,
    // about 2% of a small model's whole run (docs/performance.md). The process ends without
    // them, its output flushed, as the kernel reclaims the same memory, mappings and threads.
    if (std::fflush(nullptr) != 0 && rc == 0) _exit(4);
    _exit(rc);
#else
    return rc;
#endif
  } catch (const std::exception& exc) {
    std::fprintf(stderr, "fatpte-run: %s\n", exc.what());
    return 4;
  }
}
