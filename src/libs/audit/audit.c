/* libgputriage-audit.so: the loader's audit interface (rtld-audit(7)) for `gputriage libs
 * --trace`. Loaded by ld.so through LD_AUDIT; writes one line per event to the file named by
 * GPUTRIAGE_AUDIT_OUT (opened O_APPEND, each line one write(2), so the program's threads and
 * children can share it):
 *   <pid> S <flag> <name> \t <requester>   la_objsearch: a name or path the loader is about to try
 *   <pid> O <lmid> <path>                  la_objopen: an object loaded (link-map namespace)
 * Fields are separated by tabs.
 *
 * The library needs nothing, not even libc (no DT_NEEDED): the loader loads an auditor and its
 * dependencies into a namespace of their own before the program, and an auditor that needed libc
 * made the loader search LD_LIBRARY_PATH and the RUNPATH directories' glibc-hwcaps and legacy
 * hwcaps subdirectories (glibc-hwcaps/x86-64-v4, tls/haswell/avx512_1/x86_64, ...) for it first.
 * The loader remembers which of those do not exist and never tries them again, so the program's
 * own searches went straight to the directories themselves and the trace lacked every
 * subdirectory that LD_DEBUG=libs shows without the auditor. With no dependency the program's
 * searches are the loader's ordinary ones, and each file it tries is reported (la_objsearch is
 * called for every subdirectory, in the loader's order). So: system calls made directly (x86-64
 * and AArch64; elsewhere libc's syscall(2), with the old behaviour), the environment read from
 * /proc/self/environ, numbers formatted by hand, nothing allocated. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
static long sys4(long n, long a, long b, long c, long d) {
  long r;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return r;
}
#elif defined(__aarch64__)
static long sys4(long n, long a, long b, long c, long d) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
}
#else
#include <unistd.h>
static long sys4(long n, long a, long b, long c, long d) {
  long r = syscall(n, a, b, c, d);
  return r < 0 ? -1 : r;
}
#endif

static int out_fd = -1;
static const char kOutVar[] = "GPUTRIAGE_AUDIT_OUT=";

static size_t text_length(const char* s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}

/* Opens GPUTRIAGE_AUDIT_OUT's file, read from the environment the process was started with. */
static void open_output(void) {
  static char env[1 << 16];
  long fd = sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/environ", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  size_t got = 0;
  for (;;) {
    long n = sys4(SYS_read, fd, (long)(env + got), (long)(sizeof(env) - 1 - got), 0);
    if (n <= 0) break;
    got += (size_t)n;
    if (got == sizeof(env) - 1) break;
  }
  sys4(SYS_close, fd, 0, 0, 0);
  env[got] = '\0';
  for (size_t i = 0; i < got; i += text_length(env + i) + 1) {
    size_t j = 0;
    while (kOutVar[j] && env[i + j] == kOutVar[j]) ++j;
    if (kOutVar[j] == '\0' && env[i + j] != '\0') {
      long out = sys4(SYS_openat, AT_FDCWD, (long)(env + i + j), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
      if (out >= 0) out_fd = (int)out;
      return;
    }
  }
}

/* One output line, built in place; what does not fit is cut (the newline is kept). */
struct line {
  char text[8192];
  size_t size;
};

static void add_text(struct line* l, const char* s) {
  while (s && *s && l->size < sizeof(l->text) - 1) l->text[l->size++] = *s++;
}

static void add_number(struct line* l, long long v) {
  char digits[24];
  size_t n = 0;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do {
    digits[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) digits[n++] = '-';
  while (n && l->size < sizeof(l->text) - 1) l->text[l->size++] = digits[--n];
}

static void emit(struct line* l) {
  l->text[l->size++] = '\n';
  if (out_fd >= 0) sys4(SYS_write, out_fd, (long)l->text, (long)l->size, 0);
}

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version) {
  if (out_fd < 0) open_output();
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
  struct line l;
  l.size = 0;
  add_number(&l, sys4(SYS_getpid, 0, 0, 0, 0));
  add_text(&l, "\tS\t");
  add_text(&l, search_flag(flag));
  add_text(&l, "\t");
  add_text(&l, name);
  add_text(&l, "\t");
  add_text(&l, requester ? requester->l_name : NULL);
  emit(&l);
  return (char*)name;
}

__attribute__((visibility("default"))) unsigned int la_objopen(struct link_map* map, Lmid_t lmid, uintptr_t* cookie) {
  if (cookie) *cookie = (uintptr_t)map;
  struct line l;
  l.size = 0;
  add_number(&l, sys4(SYS_getpid, 0, 0, 0, 0));
  add_text(&l, "\tO\t");
  add_number(&l, (long long)lmid);
  add_text(&l, "\t");
  add_text(&l, map ? map->l_name : NULL);
  emit(&l);
  return 0; /* no symbol-binding callbacks: they would slow every call */
}
