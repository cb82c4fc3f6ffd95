/* bench/empty_library.c: a shared library with nothing in it (bench/op_fat_delegate.py). Loaded
 * beside a program by et_module_runner --lib, it measures what loading one more library costs a
 * process on this machine before any of its code runs: the floor under any backend library's
 * row, the fat delegate's included. */
int fatpte_bench_empty_library(void) { return 0; }
