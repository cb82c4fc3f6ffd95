// fatpte-validate FILE...: every rule of the spec over each file, printing one line per file on
// stdout, `OK` or the first error as `E0203 <offset> <field>` (decimal offset, `-` when the error
// has no offset or no field), and the full message on stderr. Exit 0 when every file is valid,
// 1 when one is not, 2 on a usage error.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "fatpte/fatpte.h"
#include "fatpte/fatpte.hpp"

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(argc < 2 ? stderr : stdout, "usage: fatpte-validate FILE...\n");
    return argc < 2 ? 2 : 0;
  }
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    fatpte_error err;
    const fatpte_status s = fatpte_validate_file(argv[i], &err);
    if (s == FATPTE_OK) {
      std::printf("OK\n");
      continue;
    }
    rc = 1;
    std::printf("%s ", fatpte_status_tag(s));
    if (err.offset == FATPTE_NO_OFFSET) {
      std::printf("-");
    } else {
      std::printf("%" PRIu64, err.offset);
    }
    std::printf(" %s\n", err.field[0] != '\0' ? fatpte::printable(err.field).c_str() : "-");
    std::fprintf(stderr, "%s\n", fatpte::terminal_safe(std::string(argv[i]) + ": " + err.message).c_str());
  }
  return rc;
}
