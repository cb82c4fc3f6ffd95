// calls_reader: fatpte::calls_from_json, what `fatpte-run --inputs` reads, over many documents in
// one process, for fuzz/fuzz_calls.py (the calls.json differential target) and its tests. Reads
// from stdin documents each led by its size (u32, little-endian) and writes one line per document
// to stdout: `OK`, or `CODE OFFSET FIELD` (the error's code as a number, its offset or `-`, its
// field or `-`). Ends at the end of stdin.
#include <cstdint>
#include <cstdio>
#include <string>

#include "fatpte/status.hpp"
#include "fatpte/tensor.hpp"

int main() {
  for (;;) {
    unsigned char size[4];
    if (std::fread(size, 1, 4, stdin) != 4) return 0;
    const std::uint32_t n = static_cast<std::uint32_t>(size[0]) | static_cast<std::uint32_t>(size[1]) << 8 |
                            static_cast<std::uint32_t>(size[2]) << 16 | static_cast<std::uint32_t>(size[3]) << 24;
    std::string text(n, '\0');
    if (n != 0 && std::fread(&text[0], 1, n, stdin) != n) return 1;
    const auto calls = fatpte::calls_from_json(text, "calls.json");
    if (calls.ok()) {
      std::printf("OK\n");
    } else {
      const fatpte::Status& s = calls.error();
      const std::string offset = s.offset() == fatpte::kNoOffset ? "-" : std::to_string(s.offset());
      std::printf("%d %s %s\n", static_cast<int>(s.code()), offset.c_str(), s.field().empty() ? "-" : s.field().c_str());
    }
    std::fflush(stdout);
  }
}
