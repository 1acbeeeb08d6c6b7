// A two-rank job launched the way torchrun launches one: the launcher starts one worker process
// per rank with RANK, LOCAL_RANK and WORLD_SIZE in its environment (each worker execs this
// program again, so /proc/PID/environ holds them) and waits for all of them. Rank 1 fails first
// with a SIGSEGV; rank 0 waits for it, as a rank waits in a collective for a peer that never
// arrives.
// Usage: ranks hang|abort
//   hang:  rank 0 waits forever (the job hangs until `run --timeout` stops it)
//   abort: rank 0 gives up after 1 s and aborts (a watchdog's abort, later than rank 1's fault)
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

// Where rank 0 sits: the stack of its hang dump names this function.
__attribute__((noinline)) static void wait_for_peer(const char* mode) {
  if (strcmp(mode, "abort") == 0) {
    sleep_ms(1000);
    fprintf(stderr, "[rank0]: peer rank 1 did not arrive within 1 s, aborting\n");
    abort();
  }
  for (;;) pause();
}

__attribute__((noinline)) static void rank1_step(void) {
  sleep_ms(200);
  volatile int* volatile p = NULL;
  *p = 1;  // SIGSEGV at address 0
}

static int worker(int rank, const char* mode) {
  if (rank == 1) rank1_step();
  wait_for_peer(mode);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "worker") != 0) {
    fprintf(stderr, "usage: ranks hang|abort\n");
    return 2;
  }
  if (argc == 3) {
    const char* rank = getenv("RANK");
    return worker(rank ? atoi(rank) : -1, argv[2]);
  }
  if (argc != 2 || (strcmp(argv[1], "hang") != 0 && strcmp(argv[1], "abort") != 0)) {
    fprintf(stderr, "usage: ranks hang|abort\n");
    return 2;
  }
  pid_t workers[2];
  for (int rank = 0; rank < 2; ++rank) {
    workers[rank] = fork();
    if (workers[rank] < 0) return 2;
    if (workers[rank] == 0) {
      char value[16];
      snprintf(value, sizeof value, "%d", rank);
      setenv("RANK", value, 1);
      setenv("LOCAL_RANK", value, 1);
      setenv("WORLD_SIZE", "2", 1);
      execl("/proc/self/exe", argv[0], "worker", argv[1], (char*)NULL);
      _exit(127);
    }
  }
  int first_failure = 0;
  for (int done = 0; done < 2; ++done) {
    int status = 0;
    if (wait(&status) < 0) break;
    if (first_failure == 0 && WIFSIGNALED(status)) first_failure = 128 + WTERMSIG(status);
  }
  return first_failure == 0 ? 0 : 1;
}
