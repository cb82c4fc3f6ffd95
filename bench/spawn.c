/* bench/spawn: run one command and report its wall time and its own peak RSS (bench/harness.py).
 *
 *   spawn REPORT COMMAND [ARG...]
 *
 * Forks COMMAND from this small process, waits for it with wait4 and writes
 * "<nanoseconds> <peak RSS in KiB>\n" to REPORT; exits with the command's status (128 + the
 * signal when a signal ended it, 127 when it could not be started). The clock starts just before
 * the fork and stops when wait4 returns, so the figure holds the command's own start-up, run and
 * exit, and none of the harness's (Python's fork and exec of this helper). GNU time would give
 * the same RSS, but its own fork and exec (about 1 ms) would sit inside every timed run, which
 * flattens the ratio of two short commands. The RSS is the child's own: a child forked straight
 * from the harness would inherit the harness's high-water mark in ru_maxrss.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: spawn REPORT COMMAND [ARG...]\n");
    return 2;
  }
  const long long start = now_ns();
  const pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "spawn: fork: %s\n", strerror(errno));
    return 127;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    fprintf(stderr, "spawn: cannot run %s: %s\n", argv[2], strerror(errno));
    _exit(127);
  }
  int status = 0;
  struct rusage usage;
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) {
      fprintf(stderr, "spawn: wait4: %s\n", strerror(errno));
      return 127;
    }
  }
  const long long elapsed = now_ns() - start;
  FILE* report = fopen(argv[1], "w");
  if (report == NULL || fprintf(report, "%lld %ld\n", elapsed, usage.ru_maxrss) < 0 || fclose(report) != 0) {
    fprintf(stderr, "spawn: cannot write %s: %s\n", argv[1], strerror(errno));
    return 127;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
