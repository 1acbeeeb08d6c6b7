// Stack unwinding and symbolisation with elfutils' libdwfl, for a live process whose threads
// the caller holds in ptrace-stop, or for a core file. Symbol tables and DWARF are read lazily,
// module by module, only for the addresses that are asked about: a crash inside a process with
// a 1 GB libtorch loaded does not read libtorch's DWARF unless a frame lands there.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/process.h"
#include "core/result.h"

struct Dwfl;

namespace gputriage::forensics {

/// How far a walk goes.
struct UnwindLimits {
  size_t max_frames = 256;  ///< per thread; a stack overflow has hundreds of thousands
};

/// One libdwfl session over one process image. Not thread-safe; for a live process every call
/// must come from the thread that is the ptrace tracer.
class DwflSession {
 public:
  ~DwflSession();
  DwflSession(const DwflSession&) = delete;
  DwflSession& operator=(const DwflSession&) = delete;

  /// Reports the modules of live process `pid` (/proc/PID/maps) and attaches to it for
  /// unwinding, assuming the caller already holds its threads in ptrace-stop. Fails, naming
  /// the pid and libdwfl's message, when the maps cannot be read or attaching fails.
  static core::Result<std::unique_ptr<DwflSession>> AttachLive(int pid);

  /// Opens core file `core_path` (with `executable` when given, else the path the core
  /// names) for symbolisation and unwinding. Fails naming the path when it cannot be read or
  /// elfutils does not accept it as a core.
  static core::Result<std::unique_ptr<DwflSession>> AttachCore(const std::string& core_path,
                                                               const std::string& executable);

  /// The symbol, module and source line for `pc`. For a caller frame
  /// (`return_address` true) the lookup uses pc - 1, the call instruction itself.
  core::Frame Symbolize(uint64_t pc, bool return_address);

  /// The start address of the function containing `pc`, when a symbol covers it.
  std::optional<uint64_t> FunctionStart(uint64_t pc);

  /// The frames of thread `tid`, innermost first; stops after `limits.max_frames` (setting
  /// `truncated`). When the walk ends early with an error, the frames found so far are
  /// returned and `error` says why.
  std::vector<core::Frame> Unwind(int tid, const UnwindLimits& limits, bool* truncated,
                                  std::optional<std::string>* error);

  /// Thread ids the session knows (live: /proc/PID/task; core: its NT_PRSTATUS notes).
  std::vector<int> Threads();

 private:
  DwflSession() = default;
  ::Dwfl* dwfl_ = nullptr;
  int core_fd_ = -1;
  void* core_elf_ = nullptr;  // Elf*
};

}  // namespace gputriage::forensics
