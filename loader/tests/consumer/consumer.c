/* consumer FILE ROWS COLS V...: open the container, choose and load its entry for this machine,
 * run its `forward` once on a float32 tensor of ROWS x COLS values, and print the entry chosen and
 * the first output, one value per line. A consumer of the installed C API (consumer/CMakeLists.txt). */
#include <stdio.h>
#include <stdlib.h>

#include "fatpte/fatpte.h"

static int fail(const char* what) {
  fprintf(stderr, "consumer: %s: %s\n", what, fatpte_last_message());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: consumer FILE ROWS COLS V...\n");
    return 2;
  }
  const int64_t shape[2] = {atoll(argv[2]), atoll(argv[3])};
  const int count = argc - 4;
  float* values = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
  for (int i = 0; i < count; ++i) values[i] = strtof(argv[4 + i], NULL);

  fatpte_error err;
  fatpte_container* c = NULL;
  fatpte_selection* s = NULL;
  fatpte_loaded* l = NULL;
  int rc = 1;
  if (fatpte_open_file(argv[1], &c, &err) != FATPTE_OK) return fail("open");
  if (fatpte_select(c, NULL, NULL, 0, NULL, 0, &s, &err) != FATPTE_OK) {
    rc = fail("select");
  } else if (fatpte_load_with(c, s, NULL, &l, &err) != FATPTE_OK) {
    rc = fail("load");
  } else {
    const fatpte_tensor input = {FATPTE_DTYPE_FLOAT32, 2, shape, values, sizeof(float) * (uint64_t)count};
    uint32_t entry = 0;
    const char* name = "";
    fatpte_loaded_entry(l, &entry);
    fatpte_entry_name(c, entry, &name);
    if (fatpte_execute(l, &input, 1, &err) != FATPTE_OK) {
      rc = fail("execute");
    } else {
      fatpte_tensor out;
      fatpte_output(l, 0, &out);
      printf("entry %s\n", name);
      for (uint64_t i = 0; i < out.nbytes / sizeof(float); ++i) printf("%.9g\n", (double)((const float*)out.data)[i]);
      rc = 0;
    }
  }
  fatpte_unload(l);
  fatpte_selection_free(s);
  fatpte_close(c);
  free(values);
  return rc;
}
