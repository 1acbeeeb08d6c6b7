/* Loads a HIP-using plugin (libhip_reload_plugin.so, next to this program), calls it, unloads it
 * (which can unload libamdhip64 with it: nothing else holds it) and does that three times: the
 * "job that unloads and reloads the HIP library" of issue 12. Prints each call's result and
 * whether libamdhip64 was still loaded after each dlclose; exits 0 unless the plugin is missing. */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 2;
  self[n] = '\0';
  char plugin[PATH_MAX + 32];
  snprintf(plugin, sizeof plugin, "%s/libhip_reload_plugin.so", dirname(self));
  for (int round = 0; round < 3; ++round) {
    void* h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
      fprintf(stderr, "hip_reload: %s\n", dlerror());
      return 2;
    }
    int (*call)(void) = (int (*)(void))dlsym(h, "plugin_malloc");
    int result = call ? call() : -1;
    dlclose(h);
    void* still = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_NOLOAD);
    printf("round %d: hipMalloc returned %d, libamdhip64 %s after dlclose\n", round, result,
           still ? "still loaded" : "unloaded");
    if (still) dlclose(still);
  }
  return 0;
}
