// libFuzzer target for the C++ loader: fatpte_open_memory on any bytes, then every entry query
// and a read of each payload's first and last byte (so AddressSanitizer sees any payload bounds
// the loader got wrong), then fatpte_validate on the open container and fatpte_validate_memory
// on the raw bytes. Built by `make fuzz` with clang -fsanitize=fuzzer,address,undefined over the
// loader's sources (fuzz/README.md); any sanitizer report or crash is a finding.
#include <cstddef>
#include <cstdint>

#include "fatpte/fatpte.h"

namespace {

void touch(const void* data, uint64_t size) {
  if (size == 0) return;
  const volatile uint8_t* bytes = static_cast<const uint8_t*>(data);
  (void)bytes[0];
  (void)bytes[size - 1];
}

void query_entries(fatpte_container* c) {
  uint32_t count = 0;
  if (fatpte_entry_count(c, &count) != FATPTE_OK) return;
  for (uint32_t i = 0; i <= count; ++i) {  // one past the end: must be refused, not read
    const char* name = nullptr;
    const char* backend = nullptr;
    uint64_t offset = 0, size = 0;
    uint32_t alignment = 0, checksum = 0, found = 0;
    int32_t priority = 0;
    int has_checksum = 0;
    const void* payload = nullptr;
    fatpte_entry_backend_id(c, i, &backend);
    fatpte_entry_offset(c, i, &offset);
    fatpte_entry_size(c, i, &size);
    fatpte_entry_alignment(c, i, &alignment);
    fatpte_entry_checksum(c, i, &checksum, &has_checksum);
    fatpte_entry_priority(c, i, &priority);
    if (fatpte_entry_payload(c, i, &payload, &size) == FATPTE_OK) touch(payload, size);
    if (fatpte_entry_name(c, i, &name) == FATPTE_OK) fatpte_find_entry(c, name, &found);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fatpte_error error;
  fatpte_container* c = nullptr;
  if (fatpte_open_memory(data, size, &c, &error) == FATPTE_OK) {
    uint32_t version = 0;
    fatpte_version(c, &version);
    query_entries(c);
    fatpte_validate(c, &error);
    fatpte_close(c);
  }
  fatpte_validate_memory(data, size, &error);
  return 0;
}
