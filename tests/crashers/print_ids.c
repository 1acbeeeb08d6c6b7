// Prints the real and effective user and group ids it runs with, for the test that runs a
// setuid copy of it under `gputriage run` (the kernel drops set-user-ID on exec under ptrace
// unless the tracer has CAP_SYS_PTRACE). Usage: print_ids
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("uid=%d euid=%d gid=%d egid=%d\n", (int)getuid(), (int)geteuid(), (int)getgid(), (int)getegid());
  return geteuid() == getuid() ? 1 : 0;  // 0: the set-user-ID bit took effect
}
