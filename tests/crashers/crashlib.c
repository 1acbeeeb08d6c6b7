#include "crashlib.h"

#include <time.h>

__attribute__((noinline)) void crashlib_store(int* target, int value) {
  *(volatile int*)target = value;
}

void* crashlib_spin(void* arg) {
  int millis = *(int*)arg;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  volatile unsigned long x = 0;
  do {
    for (int i = 0; i < 100000; ++i) x += (unsigned long)i * 2654435761u;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < millis);
  return 0;
}
