/* qemu_insn.so: a qemu TCG plugin that counts the guest instructions a program executes under
 * qemu-user (`qemu-aarch64 -plugin build/bench/qemu_insn.so,out=FILE PROGRAM ...`): each translated
 * block gets an inline add of its instruction count, run every time the block runs, and the total
 * is written at exit to FILE (a temporary file beside it, renamed into place) or, without `out=`,
 * to stderr. With `thread=main`, only the main thread's instructions are counted (qemu-user's
 * vCPU 0; a callback per block instead of the inline add, since 7.2's inline ops cannot tell
 * threads apart): what bench/stepcount.c counts natively, and free of the spinning of a thread
 * pool's workers, whose count follows the wall time. bench/op_verdicts.py counts aarch64 starts
 * with it.
 *
 * Debian's qemu-user 7.2 loads plugins but installs no qemu-plugin.h, so the few parts of its
 * plugin API (version 1) used here are declared below; their shapes are qemu 7.2's
 * include/qemu/qemu-plugin.h. What the count is: a block left early (a fault, a syscall that
 * ends the program) counts whole, and the inline adds are not atomic, so threads running at once
 * may lose some; a single-threaded program is counted within a few instructions per exit. */
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
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);
typedef void (*udata_cb)(qemu_plugin_id_t id, void* userdata);
typedef void (*vcpu_udata_cb)(unsigned int vcpu_index, void* userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op, void* ptr,
                                              uint64_t imm);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb* tb, vcpu_udata_cb cb, enum qemu_plugin_cb_flags flags,
                                          void* userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void* userdata);

EXPORTED int qemu_plugin_version = 1; /* the API this plugin was written against */

static uint64_t executed;
static const char* out_path; /* argv stays valid for the plugin's life */
static int main_only;

/* A block run by some thread: counted when that thread is the main one (vCPU 0: qemu-user creates
 * the main thread's vCPU first, and each thread's after it). */
static void on_block(unsigned int vcpu_index, void* insns) {
  if (vcpu_index == 0) executed += (uint64_t)(uintptr_t)insns;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  const size_t insns = qemu_plugin_tb_n_insns(tb);
  if (main_only) {
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, (void*)(uintptr_t)insns);
  } else {
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, insns);
  }
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
    } else if (strcmp(argv[i], "thread=main") == 0 || strcmp(argv[i], "thread=all") == 0) {
      main_only = argv[i][7] == 'm';
    } else {
      fprintf(stderr, "qemu_insn: unknown argument '%s' (the arguments are out=FILE and thread=main|all)\n",
              argv[i]);
      return 1;
    }
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_exit_, NULL);
  return 0;
}
