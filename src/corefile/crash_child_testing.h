// Test-only helpers (included by *_test.cc only, never by the library): temporary directories,
// children that crash in a known function, and a libdwfl unwinder to check cores with.
#pragma once

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

// Where the children crash: not static and extern "C" so that unwinders name it plainly.
// The pointer comes from a volatile global so the compiler cannot see the null and turn the
// store into a trap (SIGILL) or clone the function. Not sanitized: UBSan would report the
// null store and exit instead of letting the fault happen.
extern "C" [[gnu::noinline]] __attribute__((no_sanitize("undefined", "address"))) inline void gt_corefile_test_crash(
    volatile int* target) {
  *target = 42;
  asm volatile("" ::: "memory");
}
inline volatile int* volatile gt_corefile_test_null = nullptr;

namespace gputriage::corefile::testing {

/// A fresh directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gt-corefile-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// What a crashing child tells its parent before it crashes.
struct Markers {
  uint64_t stack_address = 0;
  uint64_t heap_address = 0;
  uint64_t value = 0;  // at both addresses
};

constexpr uint64_t kMarkerValue = 0x5ca1ab1e0ddba115ull;

/// In the child: optionally become traced and stop, start `extra_threads` threads that block
/// forever, send the markers' addresses on `pipe_fd`, then dereference null in
/// gt_corefile_test_crash. Never returns.
[[noreturn]] inline void CrashInChild(const std::string& dir, int extra_threads, bool traceme, int pipe_fd) {
  signal(SIGSEGV, SIG_DFL);  // the sanitizers' handler would print and exit instead of dumping
  struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_CORE, &unlimited);
  prctl(PR_SET_DUMPABLE, 1);
  if (chdir(dir.c_str()) != 0) _exit(97);
  if (traceme) {
    if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) _exit(96);
    raise(SIGSTOP);
  }
  std::atomic<int> started{0};
  for (int i = 0; i < extra_threads; ++i) {
    std::thread([&started] {
      started.fetch_add(1);
      for (;;) pause();
    }).detach();
  }
  while (started.load() < extra_threads) usleep(1000);
  volatile uint64_t on_stack = kMarkerValue;
  auto* on_heap = new uint64_t(kMarkerValue);
  Markers markers{reinterpret_cast<uint64_t>(&on_stack), reinterpret_cast<uint64_t>(on_heap), kMarkerValue};
  if (write(pipe_fd, &markers, sizeof(markers)) != sizeof(markers)) _exit(95);
  gt_corefile_test_crash(gt_corefile_test_null);
  _exit(94);
}

/// The first `max_bytes` of a file (all of it by default); "" when it cannot be read.
inline std::string ReadWholeFile(const std::string& path, size_t max_bytes = SIZE_MAX) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  auto size = static_cast<size_t>(in.tellg());
  std::string bytes(std::min(size, max_bytes), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

inline std::string SelfExe() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

/// Function names (raw symbols, "" when none) of each thread's frames, unwound by libdwfl from
/// the core at `path`; `error` says what failed.
struct DwflThread {
  int tid = 0;
  std::vector<std::string> functions;
};

inline std::vector<DwflThread> UnwindWithDwfl(const std::string& path, std::string* error) {
  static char* debuginfo_path = nullptr;
  static const Dwfl_Callbacks callbacks = {dwfl_build_id_find_elf, dwfl_standard_find_debuginfo, nullptr,
                                           &debuginfo_path};
  std::vector<DwflThread> threads;
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  Elf* elf = fd < 0 ? nullptr : elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  Dwfl* dwfl = dwfl_begin(&callbacks);
  struct State {
    Dwfl* dwfl;
    std::vector<DwflThread>* threads;
  } state{dwfl, &threads};
  if (elf == nullptr) {
    *error = "cannot open the core";
  } else if (dwfl_core_file_report(dwfl, elf, nullptr) < 0) {
    *error = std::string("dwfl_core_file_report: ") + dwfl_errmsg(-1);
  } else if (dwfl_report_end(dwfl, nullptr, nullptr) != 0) {
    *error = std::string("dwfl_report_end: ") + dwfl_errmsg(-1);
  } else if (dwfl_core_file_attach(dwfl, elf) < 0) {
    *error = std::string("dwfl_core_file_attach: ") + dwfl_errmsg(-1);
  } else {
    int rc = dwfl_getthreads(
        dwfl,
        [](Dwfl_Thread* thread, void* arg) -> int {
          auto* state = static_cast<State*>(arg);
          state->threads->push_back({static_cast<int>(dwfl_thread_tid(thread)), {}});
          dwfl_thread_getframes(
              thread,
              [](Dwfl_Frame* frame, void* arg) -> int {
                auto* state = static_cast<State*>(arg);
                Dwarf_Addr pc = 0;
                bool activation = false;
                if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
                Dwarf_Addr lookup = activation ? pc : pc - 1;
                Dwfl_Module* module = dwfl_addrmodule(state->dwfl, lookup);
                const char* name = module ? dwfl_module_addrname(module, lookup) : nullptr;
                auto& functions = state->threads->back().functions;
                functions.push_back(name ? name : "");
                return functions.size() < 64 ? DWARF_CB_OK : DWARF_CB_ABORT;
              },
              arg);
          return DWARF_CB_OK;
        },
        &state);
    if (rc != 0 && threads.empty()) *error = std::string("dwfl_getthreads: ") + dwfl_errmsg(-1);
  }
  dwfl_end(dwfl);
  if (elf) elf_end(elf);
  if (fd >= 0) close(fd);
  return threads;
}

}  // namespace gputriage::corefile::testing
