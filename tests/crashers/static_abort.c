// A statically linked program that aborts: LD_PRELOAD cannot load anything into it, so
// `run --record` must say that nothing was recorded and why, and the job must run unharmed.
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  puts("static job started");
  fflush(stdout);
  abort();
}
