/* Compiled as C: the public header is valid C, and the shared library exports the C API. */
#include <stdio.h>
#include <string.h>

#include "fatpte/fatpte.h"

int main(void) {
  static const unsigned char not_nfat[16] = {'N', 'O', 'P', 'E'};
  fatpte_container* c = NULL;
  fatpte_error err;
  fatpte_status s = fatpte_open_memory(not_nfat, sizeof not_nfat, &c, &err);
  if (s != FATPTE_E_BAD_MAGIC || c != NULL || err.offset != 0 || strcmp(err.field, "header.magic") != 0) {
    fprintf(stderr, "unexpected status %d (%s)\n", (int)s, err.message);
    return 1;
  }
  if (strcmp(fatpte_status_tag(s), "E0101") != 0) return 1;
  printf("%s\n", err.message);
  return 0;
}
