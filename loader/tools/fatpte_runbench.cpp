// fatpte_runbench: the measurements of the runner benchmark (bench/op_runtime.py) that need to be
// inside a process or to look at the page cache.
//
//   fatpte_runbench evict FILE
//       fdatasync and posix_fadvise(DONTNEED) the file: none of its pages stays in the page cache
//   fatpte_runbench residency FILE
//       for the metadata (header, tables, manifest), each entry payload and each named-data segment
//       of the container, how many of its bytes are in the page cache (mincore over a fresh
//       mapping before anything reads the file): one line
//       `region KIND INDEX NAME OFFSET SIZE RESIDENT`, each followed by `run START LENGTH` for each
//       run of its resident bytes
//   fatpte_runbench load FILE CALLS.json [--backend-lib ID=PATH]...
//       read the calls, open, probe the host, select, load and run the first call, as fatpte-run
//       does, then print `load_us=N calls_us=N open_us=N probe_us=N select_us=N entry_us=N
//       call_us=N mapping_rss=BYTES mapping_size=BYTES chosen=NAME`: open + select + load + call
//       and each part, and how much of the container's mapping this process has resident (Rss of
//       the mapping in /proc/self/smaps)
//   fatpte_runbench calls FILE CALLS.json N
//       open, select and load as `load` does, then make the first call N times on the loaded entry
//       and print `call_us_median=X call_us_min=Y chosen=NAME`: the time of one call through the
//       method type (its input policy, a signature adapter's conversions included)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fatpte/device.hpp"
#include "fatpte/dispatch.hpp"
#include "fatpte/fatpte.hpp"
#include "fatpte/select.hpp"
#include "fatpte/tensor.hpp"

namespace {

int evict(const char* path) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return std::perror(path), 1;
  const int rc = fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 ? 0 : 1;
  close(fd);
  return rc;
}

// The bytes of [offset, offset + size) in resident pages, and those bytes as runs (start, length).
std::uint64_t resident(std::uint64_t offset, std::uint64_t size, const unsigned char* vec, std::uint64_t page,
                       std::vector<std::pair<std::uint64_t, std::uint64_t>>& runs) {
  std::uint64_t n = 0;
  for (std::uint64_t p = offset / page; size != 0 && p <= (offset + size - 1) / page; ++p) {
    if (vec[p] & 1) {
      const std::uint64_t lo = std::max(offset, p * page), hi = std::min(offset + size, (p + 1) * page);
      n += hi - lo;
      if (!runs.empty() && runs.back().first + runs.back().second == lo) {
        runs.back().second += hi - lo;
      } else {
        runs.emplace_back(lo, hi - lo);
      }
    }
  }
  return n;
}

void print_region(const char* kind, std::uint32_t index, const std::string& name, std::uint64_t offset,
                  std::uint64_t size, const unsigned char* vec, std::uint64_t page) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;
  const std::uint64_t n = resident(offset, size, vec, page, runs);
  std::printf("region %s %u %s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", kind, index, name.c_str(), offset, size, n);
  for (const auto& r : runs) std::printf("run %" PRIu64 " %" PRIu64 "\n", r.first, r.second);
}

int residency(const char* path) {
  // mincore first, over a mapping of our own that nothing reads; only then is the container
  // opened for its layout (opening reads the header and tables, and the kernel would read around
  // them).
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return std::perror(path), 1;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || sb.st_size == 0) return close(fd), 1;
  const auto size = static_cast<std::uint64_t>(sb.st_size);
  void* map = mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return std::perror("mmap"), 1;
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((size + page - 1) / page);
  const int rc = mincore(map, static_cast<std::size_t>(size), vec.data());
  munmap(map, static_cast<std::size_t>(size));
  if (rc != 0) return std::perror("mincore"), 1;
  auto opened = fatpte::Container::open_file(path);
  if (!opened.ok()) return std::fprintf(stderr, "%s\n", opened.error().describe().c_str()), 1;
  const fatpte::Container& c = *opened.value();
  // The header, the tables and the manifest: what opening and selection read.
  const fatpte::Header& h = c.header();
  const std::uint64_t meta_end = std::max(h.table_end, h.manifest_size ? h.manifest_offset + h.manifest_size : 0);
  print_region("metadata", 0, "-", 0, meta_end, vec.data(), page);
  for (const fatpte::Entry& e : c.entries()) print_region("entry", e.index, e.name, e.offset, e.size, vec.data(), page);
  for (const fatpte::Segment& s : c.segments()) print_region("segment", s.index, "-", s.offset, s.size, vec.data(), page);
  return 0;
}

std::uint64_t mapping_rss(const void* at) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const auto addr = reinterpret_cast<std::uintptr_t>(at);
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = addr >= lo && addr < hi;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::stoull(line.substr(4)) * 1024;
    }
  }
  return 0;
}

int load(int argc, char** argv) {
  fatpte::LoadOptions options;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--backend-lib") != 0 || !fatpte::set_backend_library(options, argv[i + 1]).ok()) {
      return std::fprintf(stderr, "unexpected argument %s\n", argv[i]), 2;
    }
  }
  fatpte::set_executorch_log(false);
  using Clock = std::chrono::steady_clock;
  auto us = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
  const auto t0 = Clock::now();
  auto calls = fatpte::calls_from_file(argv[3]);
  if (!calls.ok() || calls.value().empty()) return std::fprintf(stderr, "no calls in %s\n", argv[3]), 2;
  const auto t1 = Clock::now();
  // As fatpte_select(NULL) does: open, then probe what the entries' requirements read.
  auto opened = fatpte::Container::open_file(argv[2]);
  if (!opened.ok()) return std::fprintf(stderr, "%s\n", opened.error().describe().c_str()), 1;
  const fatpte::Container& c = *opened.value();
  const auto t2 = Clock::now();
  const fatpte::DeviceProfile host = fatpte::probe_host(fatpte::probe_scope(c));
  const auto t3 = Clock::now();
  auto selection = fatpte::select(c, host, {}, {});
  if (!selection.ok()) return std::fprintf(stderr, "%s\n", selection.error().describe().c_str()), 3;
  const auto selected = Clock::now();
  auto dispatch = fatpte::load(c, selection.value(), host, options);
  if (!dispatch.ok()) return std::fprintf(stderr, "%s\n", dispatch.error().describe().c_str()), 3;
  const auto loaded = Clock::now();
  auto outputs = dispatch.value().loaded->run(calls.value()[0].inputs);
  if (!outputs.ok()) return std::fprintf(stderr, "%s\n", outputs.error().describe().c_str()), 1;
  const auto done = Clock::now();
  // load_us: open, select, load and the call; the host probe and reading the calls apart.
  std::printf("load_us=%.1f calls_us=%.1f open_us=%.1f probe_us=%.1f select_us=%.1f entry_us=%.1f call_us=%.1f "
              "mapping_rss=%" PRIu64 " mapping_size=%" PRIu64 " chosen=%s\n",
              us(t1, t2) + us(t3, done), us(t0, t1), us(t1, t2), us(t2, t3), us(t3, selected), us(selected, loaded),
              us(loaded, done), mapping_rss(c.bytes().data), c.bytes().size,
              c.entries()[dispatch.value().loaded->index()].name.c_str());
  return 0;
}

int calls(char** argv) {
  const long n = std::strtol(argv[4], nullptr, 10);
  if (n < 1 || n > 10000000) return std::fprintf(stderr, "N must be 1 to 10000000\n"), 2;
  fatpte::set_executorch_log(false);
  auto given = fatpte::calls_from_file(argv[3]);
  if (!given.ok() || given.value().empty()) return std::fprintf(stderr, "no calls in %s\n", argv[3]), 2;
  auto opened = fatpte::Container::open_file(argv[2]);
  if (!opened.ok()) return std::fprintf(stderr, "%s\n", opened.error().describe().c_str()), 1;
  const fatpte::Container& c = *opened.value();
  const fatpte::DeviceProfile host = fatpte::probe_host(fatpte::probe_scope(c));
  auto selection = fatpte::select(c, host, {}, {});
  if (!selection.ok()) return std::fprintf(stderr, "%s\n", selection.error().describe().c_str()), 3;
  auto dispatch = fatpte::load(c, selection.value(), host, fatpte::LoadOptions{});
  if (!dispatch.ok()) return std::fprintf(stderr, "%s\n", dispatch.error().describe().c_str()), 3;
  using Clock = std::chrono::steady_clock;
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(n));
  for (long i = 0; i < n; ++i) {
    const auto a = Clock::now();
    auto outputs = dispatch.value().loaded->run(given.value()[0].inputs);
    const auto b = Clock::now();
    if (!outputs.ok()) return std::fprintf(stderr, "%s\n", outputs.error().describe().c_str()), 1;
    times.push_back(std::chrono::duration<double, std::micro>(b - a).count());
  }
  std::sort(times.begin(), times.end());
  std::printf("call_us_median=%.3f call_us_min=%.3f chosen=%s\n", times[times.size() / 2], times.front(),
              c.entries()[dispatch.value().loaded->index()].name.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "evict") == 0) return evict(argv[2]);
  if (argc == 3 && std::strcmp(argv[1], "residency") == 0) return residency(argv[2]);
  if (argc >= 4 && std::strcmp(argv[1], "load") == 0) return load(argc, argv);
  if (argc == 5 && std::strcmp(argv[1], "calls") == 0) return calls(argv);
  std::fprintf(stderr,
               "usage: fatpte_runbench evict FILE | residency FILE | load FILE CALLS.json [--backend-lib ID=PATH]... | "
               "calls FILE CALLS.json N\n");
  return 2;
}
