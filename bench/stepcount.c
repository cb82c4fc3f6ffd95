/* stepcount ARGV...: runs ARGV with its main thread single-stepped under ptrace and prints the
 * number of instructions it executed (a REP-prefixed string instruction counts once per
 * iteration, as callgrind counts it). The instructions run natively, on this CPU's own
 * extensions: callgrind's virtual CPU lacks some (x86's SHA extensions: code that picks them by
 * CPUID runs another path under valgrind), so bench/op_verdicts.py counts a receipt both ways.
 * Threads the command starts are not counted. Exits with the command's status. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: stepcount ARGV...\n");
    return 2;
  }
  const pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) _exit(127);
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFSTOPPED(status)) return 2; /* stopped at its exec */
  ptrace(PTRACE_SETOPTIONS, child, NULL, (void*)(long)PTRACE_O_EXITKILL);
  unsigned long long steps = 0;
  int deliver = 0;
  for (;;) {
    if (ptrace(PTRACE_SINGLESTEP, child, NULL, (void*)(long)deliver) != 0) return 2;
    if (waitpid(child, &status, 0) != child) return 2;
    if (WIFEXITED(status) || WIFSIGNALED(status)) break;
    ++steps;
    deliver = WIFSTOPPED(status) && WSTOPSIG(status) != SIGTRAP ? WSTOPSIG(status) : 0;
  }
  printf("%llu\n", steps);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
