// A plugin that uses HIP (tests/gpu/hip_reload.c loads and unloads it): its hipMalloc is resolved
// in the global scope, so under `run --record` it reaches the recorder's definition, which calls
// the libamdhip64 this plugin brought in. Without an AMD GPU the call fails with its real code.
#include <hip/hip_runtime.h>

extern "C" int plugin_malloc(void) {
  void* p = nullptr;
  return static_cast<int>(hipMalloc(&p, 4096));
}
