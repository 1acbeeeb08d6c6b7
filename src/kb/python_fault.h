// Python's faulthandler report in a log. When a Python process dies of SIGSEGV, SIGFPE, SIGABRT,
// SIGBUS or SIGILL with faulthandler on (`python -X faulthandler`, PYTHONFAULTHANDLER=1, which
// `gputriage run` sets), CPython writes to stderr, before the process dies:
//
//   Fatal Python error: Segmentation fault
//
//   Thread 0x00007f3a1b7fe640 (most recent call first):
//     File "/usr/lib/python3.11/threading.py", line 320 in wait
//     ...
//
//   Current thread 0x00007f3a2c3ba740 (most recent call first):
//     File "/opt/venv/lib/python3.11/site-packages/torch/nn/functional.py", line 2264 in embedding
//     File "train.py", line 41 in forward
//
//   Extension modules: numpy.core._multiarray_umath, torch._C, ... (total: 42)
//
// (Python/traceback.c: _Py_DumpTraceback, "  File \"%s\", line %d in %s"; Python/pylifecycle.c:
// fatal_error, "Fatal Python error: "). The current thread's Python stack says which Python line
// went into the native code that crashed; this assembles it from the lines as they come.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"

namespace gputriage::kb {

struct PythonFrame {
  std::string file;
  uint64_t line = 0;
  std::string function;
};

struct PythonFault {
  std::string error;                ///< after "Fatal Python error: " ("Segmentation fault", "Aborted", ...)
  std::string thread;               ///< the current thread's id as printed ("0x00007f3a2c3ba740"); "" when not seen
  std::vector<PythonFrame> frames;  ///< the current thread's stack, innermost first (the first kMaxFrames)
  uint64_t frames_dropped = 0;
  int other_threads = 0;     ///< "Thread 0x..." blocks besides the current one
  uint64_t line_number = 0;  ///< of the "Fatal Python error" line
  std::string input;

  /// "Fatal Python error: Segmentation fault; Python was in string_at (ctypes/__init__.py:519),
  /// called from f (<string>:4)".
  std::string Describe() const;
};

core::Json ToJson(const PythonFault& fault);

/// Feed it every stderr line in order; keeps the first report.
class PythonFaultAssembler {
 public:
  static constexpr size_t kMaxFrames = 64;

  /// Looks at one line; true when it belonged to a report.
  bool Line(std::string_view line, uint64_t line_number, std::string_view input);

  /// True while a report is being read (its next lines must still be seen).
  bool open() const { return state_ != State::kIdle; }

  /// True once a report was read (later ones are not kept).
  bool done() const { return done_; }

  /// The report, once one was seen.
  const std::optional<PythonFault>& fault() const { return fault_; }

  /// The pattern of the line that starts a report (for a prefilter).
  static const char* StartPattern() { return "Fatal Python error: "; }

 private:
  enum class State { kIdle, kBetween, kCurrentThread, kOtherThread };
  State state_ = State::kIdle;
  bool done_ = false;
  std::optional<PythonFault> fault_;
};

}  // namespace gputriage::kb
