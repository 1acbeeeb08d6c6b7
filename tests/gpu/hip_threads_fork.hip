// Many threads and a fork without exec, each making HIP calls: the recorder must keep every
// call without a lock, and the forked child (which shares the parent's record mapping) must be
// recorded under its own pid. Without an AMD GPU every call fails; the program exits 0.
#include <hip/hip_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1000;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([] {
      void* p = nullptr;
      (void)hipMalloc(&p, 4096);
      (void)hipFree(p);
    });
  }
  for (auto& t : pool) t.join();
  pid_t child = fork();
  if (child == 0) {
    (void)hipDeviceSynchronize();
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("threads %d, child %d\n", threads, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
