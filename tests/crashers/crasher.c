// Real programs that fail in one specific way each, for `gputriage run` and `analyze` tests.
// Usage: crasher MODE [ARG]. Every failing function is noinline so the stack names it.
#define _GNU_SOURCE
#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crashlib.h"

#define NOINLINE __attribute__((noinline))

// Read from memory so the compiler cannot fold the store into an absolute-address form (a
// store to the absolute address 0 does not fault on every hypervisor; one via a register does).
int* volatile g_null_pointer = NULL;

NOINLINE void null_deref(void) { *g_null_pointer = 42; }

NOINLINE void wild_write(void) {
  // Canonical, user-space, and far from anything the loader maps.
  volatile int* p = (volatile int*)(uintptr_t)0x7f0000dead00ULL;
  *p = 42;
}

#pragma GCC diagnostic ignored "-Winfinite-recursion"
NOINLINE int recurse(int depth) {
  volatile char frame[512];
  frame[0] = (char)depth;
  return recurse(depth + 1) + frame[0];  // not a tail call: the add comes after
}

NOINLINE void touch_truncated(const char* path) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, 2 * 4096) != 0) {
    perror(path);
    exit(2);
  }
  volatile char* map = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  map[0] = 1;
  if (ftruncate(fd, 4096) != 0) exit(2);  // the second page no longer has a file behind it
  map[4096 + 16] = 1;
}

NOINLINE void use_tbm(void) {
  // BLCFILL is AMD's TBM extension (Piledriver only): #UD on every other x86-64 CPU.
  int out = 0;
  __asm__ volatile("blcfill %1, %0" : "=r"(out) : "r"(7));
  printf("%d\n", out);
}

NOINLINE void trap_here(void) { __builtin_trap(); }

NOINLINE int divide(int a, int b) { return a / b; }

NOINLINE void breakpoint_here(void) { __asm__ volatile("int3"); }

NOINLINE void check_count(int count) { assert(count == 3); }

NOINLINE void* worker_crash(void* arg) {
  (void)arg;
  null_deref();
  return NULL;
}

NOINLINE void wait_forever(void) {
  for (;;) pause();
}

static int wait_status_to_exit(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

NOINLINE void spin_threads(int threads, int millis) {
  // CPU-bound work on several threads (the overhead benchmark).
  pthread_t tids[64];
  if (threads > 64) threads = 64;
  for (int i = 0; i < threads; ++i) pthread_create(&tids[i], NULL, crashlib_spin, &millis);
  for (int i = 0; i < threads; ++i) pthread_join(tids[i], NULL);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: crasher MODE [ARG]\n");
    return 2;
  }
  const char* mode = argv[1];
  setvbuf(stdout, NULL, _IONBF, 0);
  if (strcmp(mode, "echo") != 0 && strcmp(mode, "spin") != 0) {
    // Markers the tests compare byte for byte with what `gputriage run` passes through.
    printf("crasher %s: stdout\n", mode);
    fprintf(stderr, "crasher %s: stderr\n", mode);
  }
  if (!strcmp(mode, "null")) null_deref();
  if (!strcmp(mode, "wild")) wild_write();
  if (!strcmp(mode, "stack")) return recurse(0);
  if (!strcmp(mode, "sigbus")) touch_truncated(argc > 2 ? argv[2] : "crasher.sigbus");
  if (!strcmp(mode, "isa")) use_tbm();
  if (!strcmp(mode, "ud2")) trap_here();
  if (!strcmp(mode, "fpe")) return divide(argc, argc > 99 ? 1 : 0);
  if (!strcmp(mode, "assert")) check_count(argc);
  if (!strcmp(mode, "lib")) crashlib_store(NULL, 7);
  if (!strcmp(mode, "thread")) {
    pthread_t t;
    pthread_create(&t, NULL, worker_crash, NULL);
    pthread_join(t, NULL);
  }
  if (!strcmp(mode, "fork")) {
    pid_t child = fork();
    if (child == 0) null_deref();
    int status = 0;
    waitpid(child, &status, 0);
    return wait_status_to_exit(status);
  }
  if (!strcmp(mode, "exec")) {
    // job -> child -> grandchild, which execs `crasher null`.
    pid_t child = fork();
    if (child == 0) {
      pid_t grandchild = fork();
      if (grandchild == 0) {
        execl("/proc/self/exe", argv[0], "null", (char*)NULL);
        _exit(126);
      }
      int status = 0;
      waitpid(grandchild, &status, 0);
      _exit(wait_status_to_exit(status));
    }
    int status = 0;
    waitpid(child, &status, 0);
    return wait_status_to_exit(status);
  }
  if (!strcmp(mode, "int3")) breakpoint_here();
  if (!strcmp(mode, "raise")) raise(SIGSEGV);              // tgkill to itself: SI_TKILL
  if (!strcmp(mode, "selfkill")) kill(getpid(), SIGSEGV);  // kill to itself: SI_USER
  if (!strcmp(mode, "vfork")) {
    // vfork + exec, as posix_spawn and Python's subprocess do.
    pid_t child = vfork();
    if (child == 0) {
      execl("/proc/self/exe", argv[0], "null", (char*)NULL);
      _exit(126);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return wait_status_to_exit(status);
  }
  if (!strcmp(mode, "hang")) {
    printf("pid %d waiting\n", (int)getpid());
    wait_forever();
  }
  if (!strcmp(mode, "echo")) {
    // Every byte value on stdout, a marker on stderr, then stdin copied to stdout.
    unsigned char all[256];
    for (int i = 0; i < 256; ++i) all[i] = (unsigned char)i;
    fwrite(all, 1, sizeof all, stdout);
    fputs("to stderr \x01\xff\n", stderr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) fwrite(buf, 1, n, stdout);
    return 3;
  }
  if (!strcmp(mode, "spin")) {
    spin_threads(argc > 2 ? atoi(argv[2]) : 2, argc > 3 ? atoi(argv[3]) : 1000);
    return 0;
  }
  if (!strcmp(mode, "alloc")) {
    // Touch memory until something stops us (a memory cgroup's OOM killer, in the tests).
    for (size_t total = 0; total < ((size_t)64 << 30); total += (size_t)16 << 20) {
      char* block = malloc((size_t)16 << 20);
      if (!block) return 1;
      memset(block, 1, (size_t)16 << 20);
    }
    return 0;
  }
  if (!strcmp(mode, "exit")) return argc > 2 ? atoi(argv[2]) : 0;
  fprintf(stderr, "crasher: unknown mode %s\n", mode);
  return 2;
}
