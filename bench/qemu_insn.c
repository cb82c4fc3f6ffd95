/* qemu_insn.so: a qemu TCG plugin that counts the guest instructions a program executes under
 * qemu-user (`qemu-aarch64 -plugin build/bench/qemu_insn.so,out=FILE PROGRAM ...`): each translated
 * block gets an inline add of its instruction count, run every time the block runs, and the total
 * is written at exit to FILE (a temporary file beside it, renamed into place) or, without `out=`,
 * to stderr. bench/op_verdicts.py counts aarch64 starts with it, as bench/stepcount.c counts x86.
 *
 * Debian's qemu-user 7.2 loads plugins but installs no qemu-plugin.h, so the few parts of its
 * plugin API (version 1) used here are declared below; their shapes are qemu 7.2's
 * include/qemu/qemu-plugin.h. What the count is: a block left early (a fault, a syscall that
 * ends the program) counts whole, and the adds are not atomic, so threads running at once may
 * lose some; a single-threaded program is counted within a few instructions per exit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORTED __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
struct qemu_info_t;    /* not read */
struct qemu_plugin_tb; /* a block being translated */
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);
typedef void (*udata_cb)(qemu_plugin_id_t id, void* userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op, void* ptr,
                                              uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void* userdata);

EXPORTED int qemu_plugin_version = 1; /* the API this plugin was written against */

static uint64_t executed;
static const char* out_path; /* argv stays valid for the plugin's life */

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, qemu_plugin_tb_n_insns(tb));
}

/* FILE's temporary sibling, written and renamed over FILE; 0 on success. */
static int write_count(const char* path, uint64_t count) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) return -1;
  const int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  char text[32];
  const int n = snprintf(text, sizeof text, "%llu\n", (unsigned long long)count);
  const int ok = write(fd, text, (size_t)n) == n;
  if (close(fd) != 0 || !ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

static void on_exit_(qemu_plugin_id_t id, void* userdata) {
  (void)id;
  (void)userdata;
  if (out_path == NULL) {
    fprintf(stderr, "qemu_insn: %llu instructions\n", (unsigned long long)executed);
  } else if (write_count(out_path, executed) != 0) {
    fprintf(stderr, "qemu_insn: cannot write the count to %s\n", out_path);
  }
}

EXPORTED int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t* info, int argc, char** argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) {
    if (strncmp(argv[i], "out=", 4) == 0 && argv[i][4] != '\0') {
      out_path = argv[i] + 4;
    } else {
      fprintf(stderr, "qemu_insn: unknown argument '%s' (the one argument is out=FILE)\n", argv[i]);
      return 1;
    }
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_exit_, NULL);
  return 0;
}
