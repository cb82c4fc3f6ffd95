// fatpte_bench [--min-seconds S] [--min-batches N] [--batch K] FILE...: times, for each container,
// the whole load path a runtime takes through the public C API (include/fatpte/fatpte.h):
//
//   fatpte_open_file   map the file read-only; header, whole table and placement of every region
//   fatpte_select      the host's profile against the manifest: manifest CRC32C, identifier and
//                      flatbuffers verifier, then the selection rules
//   fatpte_entry_payload  the chosen entry's payload pointer (zero-copy; no payload byte is read)
//   fatpte_close / fatpte_selection_free
//
// Payload checksums are not part of it (fatpte_validate does those): issue 7's target is "open +
// table and manifest validation + select + payload pointer", under 100 us and the same for a 1 MiB
// and a 4 GiB container within 10%. The host is probed once, before timing, and its profile JSON
// is passed to every fatpte_select: a runtime probes its device once, and the probe (cpuid, a
// dlopen of the CUDA driver) says nothing about the container.
//
// Timing: steady_clock around batches of K iterations (K chosen per container so that a batch
// takes about 1 ms, unless --batch is given). Batches alternate between the containers given
// (A, B, A, B, ...) so that drift of the shared machine hits them alike, until --min-seconds per
// container have passed and each ran at least --min-batches; median and min are of the
// per-iteration time of each batch.
//
// Output (bench/op_loader.py parses it; one line per container, then one summary line):
//   container entries=16 size=1048576 chosen=e00 iterations=123456 batches=200 median_us=12.345 min_us=11.002 path=FILE
//   ratio last/first median=1.012 min=1.004
// The path comes last so that it may contain spaces. Exit 0, 1 when a container fails to open or
// select (the error on stderr), 2 on a usage error.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fatpte/fatpte.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  double min_seconds = 0.5;
  long min_batches = 20;
  long batch = 0;  // 0: calibrate
  std::vector<const char*> files;
};

struct Figures {
  std::uint32_t entries = 0;
  std::uint64_t size = 0;
  std::string chosen;
  long iterations = 0;
  long batches = 0;
  double median_us = 0;
  double min_us = 0;
};

// Kept so the compiler cannot drop the payload lookup as unused.
volatile std::uintptr_t g_sink = 0;

int usage(FILE* to) {
  std::fprintf(to, "usage: fatpte_bench [--min-seconds S] [--min-batches N] [--batch K] FILE...\n");
  return to == stdout ? 0 : 2;
}

bool parse_number(const char* text, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= 0)) return false;
  *out = v;
  return true;
}

// One pass of the load path. Returns FATPTE_OK, or the first failing status with `err` filled.
fatpte_status load_once(const char* path, const char* device_json, fatpte_error* err, uint32_t* chosen_out) {
  fatpte_container* c = nullptr;
  fatpte_status s = fatpte_open_file(path, &c, err);
  if (s != FATPTE_OK) return s;
  fatpte_selection* sel = nullptr;
  s = fatpte_select(c, device_json, nullptr, 0, nullptr, 0, &sel, err);
  if (s == FATPTE_OK) {
    uint32_t chosen = 0;
    s = fatpte_selection_chosen(sel, &chosen);
    const void* data = nullptr;
    uint64_t size = 0;
    if (s == FATPTE_OK) s = fatpte_entry_payload(c, chosen, &data, &size);
    if (s == FATPTE_OK) {
      g_sink = g_sink + reinterpret_cast<std::uintptr_t>(data) + size;
      if (chosen_out != nullptr) *chosen_out = chosen;
    } else {
      std::snprintf(err->message, sizeof err->message, "%s after select", fatpte_status_message(s));
    }
  }
  fatpte_selection_free(sel);
  fatpte_close(c);
  return s;
}

// Spaces, bytes outside printable ASCII and `\` as `\xNN`, so the name stays one word of the line.
std::string printable(const char* text) {
  std::string out;
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(text); *p != 0; ++p) {
    if (*p > 0x20 && *p < 0x7f && *p != '\\') {
      out += static_cast<char>(*p);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", *p);
      out += hex;
    }
  }
  return out;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool prepare(const Options& opt, const char* path, const std::string& device_json, Figures* fig, long* batch_out) {
  fatpte_error err{};
  uint32_t chosen = 0;
  // First pass: check it works and learn what it chose; also warms the page cache.
  fatpte_status s = load_once(path, device_json.c_str(), &err, &chosen);
  if (s != FATPTE_OK) {
    std::fprintf(stderr, "%s: %s\n", path, err.message);
    return false;
  }
  fatpte_container* c = nullptr;
  if (fatpte_open_file(path, &c, &err) == FATPTE_OK) {
    const char* name = nullptr;
    fatpte_entry_count(c, &fig->entries);
    if (fatpte_entry_name(c, chosen, &name) == FATPTE_OK && name != nullptr) fig->chosen = printable(name);
    fatpte_close(c);
  }
  if (FILE* f = std::fopen(path, "rb")) {
    if (std::fseek(f, 0, SEEK_END) == 0) {
      const long end = std::ftell(f);
      if (end >= 0) fig->size = static_cast<std::uint64_t>(end);
    }
    std::fclose(f);
  }
  if (fig->chosen.empty()) fig->chosen = "-";

  long batch = opt.batch;
  if (batch <= 0) {
    // Calibrate: double the batch until one takes at least 1 ms (steady_clock's overhead is then
    // far below the figure); the cap bounds calibration should a load ever be near-free.
    batch = 1;
    for (;;) {
      const auto t0 = Clock::now();
      for (long i = 0; i < batch; ++i) load_once(path, device_json.c_str(), &err, nullptr);
      if (seconds_since(t0) >= 1e-3 || batch >= (1L << 16)) break;
      batch *= 2;
    }
  }
  *batch_out = batch;
  return true;
}

// One batch of `batch` loads; false (the error on stderr) when a load fails.
bool time_batch(const char* path, const std::string& device_json, long batch, std::vector<double>* per_iteration) {
  fatpte_error err{};
  const auto t0 = Clock::now();
  for (long i = 0; i < batch; ++i) {
    if (load_once(path, device_json.c_str(), &err, nullptr) != FATPTE_OK) {
      std::fprintf(stderr, "%s: %s\n", path, err.message);
      return false;
    }
  }
  per_iteration->push_back(seconds_since(t0) * 1e6 / static_cast<double>(batch));
  return true;
}

void summarize(const std::vector<double>& per_iteration, long batch, Figures* fig) {
  std::vector<double> sorted = per_iteration;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  fig->median_us = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  fig->min_us = sorted.front();
  fig->batches = static_cast<long>(n);
  fig->iterations = fig->batches * batch;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    double v = 0;
    if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) return usage(stdout);
    if (std::strcmp(a, "--min-seconds") == 0 || std::strcmp(a, "--min-batches") == 0 ||
        std::strcmp(a, "--batch") == 0) {
      if (i + 1 >= argc || !parse_number(argv[i + 1], &v)) {
        std::fprintf(stderr, "fatpte_bench: %s needs a non-negative number\n", a);
        return usage(stderr);
      }
      ++i;
      if (std::strcmp(a, "--min-seconds") == 0) {
        opt.min_seconds = v;
      } else if (std::strcmp(a, "--min-batches") == 0) {
        opt.min_batches = std::max(1L, static_cast<long>(v));
      } else {
        opt.batch = static_cast<long>(v);
      }
      continue;
    }
    if (a[0] == '-' && a[1] == '-') {
      std::fprintf(stderr, "fatpte_bench: unknown option %s\n", a);
      return usage(stderr);
    }
    opt.files.push_back(a);
  }
  if (opt.files.empty()) return usage(stderr);

  size_t length = 0;
  fatpte_device_host_json(nullptr, 0, &length);
  std::string device_json(length + 1, '\0');
  if (fatpte_device_host_json(device_json.data(), device_json.size(), &length) != FATPTE_OK) {
    std::fprintf(stderr, "fatpte_bench: the host probe failed\n");
    return 1;
  }
  device_json.resize(length);

  // Batches alternate between the containers (A, B, A, B, ...) so that the shared machine's drift
  // hits all of them alike and their ratio means something.
  const std::size_t n = opt.files.size();
  std::vector<Figures> all(n);
  std::vector<long> batch(n, 1);
  std::vector<std::vector<double>> per_iteration(n);
  for (std::size_t k = 0; k < n; ++k) {
    if (!prepare(opt, opt.files[k], device_json, &all[k], &batch[k])) return 1;
  }
  const auto start = Clock::now();
  while (static_cast<long>(per_iteration[0].size()) < opt.min_batches ||
         seconds_since(start) < opt.min_seconds * static_cast<double>(n)) {
    for (std::size_t k = 0; k < n; ++k) {
      if (!time_batch(opt.files[k], device_json, batch[k], &per_iteration[k])) return 1;
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    Figures& fig = all[k];
    summarize(per_iteration[k], batch[k], &fig);
    std::printf("container entries=%" PRIu32 " size=%" PRIu64 " chosen=%s iterations=%ld batches=%ld "
                "median_us=%.3f min_us=%.3f path=%s\n",
                fig.entries, fig.size, fig.chosen.c_str(), fig.iterations, fig.batches, fig.median_us, fig.min_us,
                opt.files[k]);
  }
  if (all.size() >= 2 && all.front().median_us > 0 && all.front().min_us > 0) {
    std::printf("ratio last/first median=%.3f min=%.3f\n", all.back().median_us / all.front().median_us,
                all.back().min_us / all.front().min_us);
  }
  return 0;
}
