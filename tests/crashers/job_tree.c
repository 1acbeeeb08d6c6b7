// A job whose processes do not all stop on SIGTERM, for the `run --timeout` and signal-forwarding
// tests: the main process (default SIGTERM action) forks a child that ignores SIGTERM, and a
// grandchild that detaches the way daemons and leaked GPU workers do (double fork + setsid, so
// its parent is gone and it is in a session of its own) and ignores SIGTERM too.
// Usage: job_tree PIDFILE. Writes "CHILD GRANDCHILD\n" to PIDFILE (atomically, through a rename)
// once both run, then waits forever.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void wait_forever(void) {
  for (;;) pause();
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: job_tree PIDFILE\n");
    return 2;
  }
  pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    signal(SIGTERM, SIG_IGN);
    wait_forever();
  }
  int fds[2];
  if (pipe(fds) != 0) return 2;
  pid_t middle = fork();
  if (middle < 0) return 2;
  if (middle == 0) {
    pid_t grandchild = fork();
    if (grandchild == 0) {
      setsid();
      signal(SIGTERM, SIG_IGN);
      close(fds[0]);
      close(fds[1]);
      wait_forever();
    }
    if (write(fds[1], &grandchild, sizeof grandchild) != (ssize_t)sizeof grandchild) _exit(2);
    _exit(0);  // the grandchild is now an orphan
  }
  close(fds[1]);
  pid_t grandchild = 0;
  if (read(fds[0], &grandchild, sizeof grandchild) != (ssize_t)sizeof grandchild) return 2;
  waitpid(middle, NULL, 0);

  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
  FILE* out = fopen(tmp, "w");
  if (!out) {
    perror(tmp);
    return 2;
  }
  fprintf(out, "%d %d\n", (int)child, (int)grandchild);
  if (fclose(out) != 0 || rename(tmp, argv[1]) != 0) {
    perror(argv[1]);
    return 2;
  }
  printf("job_tree: main %d, child %d, grandchild %d\n", (int)getpid(), (int)child, (int)grandchild);
  fflush(stdout);
  wait_forever();
}
