// A multi-threaded job that hangs in known functions, for `gputriage capture PID`.
// Usage: hung_job [THREADS]        THREADS workers blocked in hung_worker_wait (default 3); the
//                                  main thread answers each line on stdin with "pong N\n" on stdout
//        hung_job traced-child     forks a child that does PTRACE_TRACEME and hangs; prints
//                                  "child PID\n" and waits for it (the parent is the child's tracer)
// Prints "ready PID\n" once every worker is blocked. Every function named here is noinline so
// the stacks name it.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_never = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_started_cond = PTHREAD_COND_INITIALIZER;
static int g_started = 0;

// Where every worker waits, for good: a condition nobody signals.
NOINLINE void hung_worker_wait(void) {
  pthread_mutex_lock(&g_lock);
  ++g_started;
  pthread_cond_broadcast(&g_started_cond);
  for (;;) pthread_cond_wait(&g_never, &g_lock);
}

static void* worker(void* arg) {
  (void)arg;
  hung_worker_wait();
  return NULL;
}

// The main thread: blocked reading stdin, answering each line.
NOINLINE int hung_main_serve(void) {
  char line[256];
  int n = 0;
  while (fgets(line, sizeof line, stdin) != NULL) {
    printf("pong %d\n", ++n);
    fflush(stdout);
  }
  return 0;
}

static int traced_child(void) {
  pid_t child = fork();
  if (child == 0) {
    if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) {
      perror("hung_job: PTRACE_TRACEME");
      _exit(2);
    }
    for (;;) pause();
  }
  printf("child %d\n", (int)child);
  fflush(stdout);
  int status = 0;
  while (waitpid(child, &status, 0) > 0) {
    if (WIFEXITED(status) || WIFSIGNALED(status)) break;
    ptrace(PTRACE_CONT, child, NULL, NULL);  // a signal stop: let it go on
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "traced-child") == 0) return traced_child();
  int threads = argc > 1 ? atoi(argv[1]) : 3;
  if (threads < 0 || threads > 256) threads = 3;
  for (int i = 0; i < threads; ++i) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) {
      perror("hung_job: pthread_create");
      return 2;
    }
  }
  pthread_mutex_lock(&g_lock);
  while (g_started < threads) pthread_cond_wait(&g_started_cond, &g_lock);
  pthread_mutex_unlock(&g_lock);
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  return hung_main_serve();
}
