/* libgputriage-audit.so: the loader's audit interface (rtld-audit(7)) for `gputriage libs
 * --trace`. Loaded by ld.so through LD_AUDIT; writes one line per event to the file named by
 * GPUTRIAGE_AUDIT_OUT (opened O_APPEND, each line one write(2), so the program's threads and
 * children can share it):
 *   <pid> S <flag> <name> \t <requester>   la_objsearch: a name or path the loader is about to try
 *   <pid> O <lmid> <path>                  la_objopen: an object loaded (link-map namespace)
 * Fields are separated by tabs. libc only; nothing is allocated. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int out_fd = -1;

static void emit(const char* line, size_t len) {
  if (out_fd >= 0) {
    ssize_t unused = write(out_fd, line, len);
    (void)unused;
  }
}

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version) {
  const char* path = getenv("GPUTRIAGE_AUDIT_OUT");
  if (path && *path && out_fd < 0) out_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

static const char* search_flag(unsigned int flag) {
  switch (flag) {
    case LA_SER_ORIG: return "orig";
    case LA_SER_LIBPATH: return "ld_library_path";
    case LA_SER_RUNPATH: return "runpath";
    case LA_SER_CONFIG: return "config";
    case LA_SER_DEFAULT: return "default";
    case LA_SER_SECURE: return "secure";
    default: return "other";
  }
}

__attribute__((visibility("default"))) char* la_objsearch(const char* name, uintptr_t* cookie, unsigned int flag) {
  const struct link_map* requester = cookie ? (const struct link_map*)*cookie : NULL;
  const char* by = requester && requester->l_name ? requester->l_name : "";
  char line[8192];
  int n = snprintf(line, sizeof(line), "%d\tS\t%s\t%s\t%s\n", (int)getpid(), search_flag(flag), name, by);
  if (n > 0) emit(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
  return (char*)name;
}

__attribute__((visibility("default"))) unsigned int la_objopen(struct link_map* map, Lmid_t lmid, uintptr_t* cookie) {
  if (cookie) *cookie = (uintptr_t)map;
  char line[8192];
  int n = snprintf(line, sizeof(line), "%d\tO\t%ld\t%s\n", (int)getpid(), (long)lmid, map && map->l_name ? map->l_name : "");
  if (n > 0) emit(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
  return 0; /* no symbol-binding callbacks: they would slow every call */
}
