// Leaks one block, built with -fsanitize=leak: LeakSanitizer checks at exit, and it stops the
// process's threads with ptrace to do so, which fails when the process is already traced
// ("LeakSanitizer has encountered a fatal error"). Usage: leak
#include <stdio.h>
#include <stdlib.h>

void* volatile g_sink;

int main(void) {
  g_sink = malloc(42);
  g_sink = NULL;  // the only pointer to the block is gone
  puts("leak: leaked 42 bytes");
  return 0;
}
