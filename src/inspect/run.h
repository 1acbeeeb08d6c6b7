// `gputriage inspect` over a list of files as one library call: each file's code objects
// decoded, filtered by kernel name and written out as they come (JSON or text), the findings of
// every file gathered, and the coverage against the machine's GPUs. The command line only
// chooses the files and the GPUs, and renders the findings.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "inspect/findings.h"
#include "inspect/model.h"
#include "inspect/ranking.h"

namespace gputriage::inspect {

/// Every distinct file mapped into process `pid` (its executable and shared libraries), in the
/// order of their first mapping: /proc/PID/maps read whole (core::ReadFile, at most 64 MiB) and
/// parsed by core::ParseMaps; only mappings whose path starts with '/', and none whose file was
/// deleted (" (deleted)"). Fails naming /proc/PID/maps: "...: cannot read (no such process, or
/// no permission)" when it cannot be opened, ReadFile's message otherwise (too large, a read
/// error).
core::Result<std::vector<std::string>> MappedFiles(int pid);

/// True when `filter` is empty or a part of the kernel's symbol or of its demangled name.
bool KernelMatches(const Kernel& kernel, std::string_view filter);

/// For --low-memory: decoding buffers go back to the system as soon as they are freed (glibc's
/// M_MMAP_THRESHOLD fixed at 1 MiB, for the whole process and for good). Less peak memory on a
/// large library; slower (page faults).
void ReturnFreedBuffersToTheSystem();

/// Where InspectFiles is, for a progress display.
struct InspectProgress {
  size_t file_index = 0;  ///< 0-based, of `files`
  size_t files = 0;
  std::string_view path;
  uint64_t bytes_done = 0, bytes_total = 0;  ///< of this file (InspectOptions::progress)
  size_t code_objects = 0;                   ///< of this file, so far
};

/// What to inspect and how to write it.
struct InspectRequest {
  std::vector<std::string> paths;
  /// The paths are a process's mappings (--pid): a file that is not GPU code (most of them) is
  /// passed over silently, and a readable one without code objects gets no text.
  bool from_process = false;
  std::string kernel;  ///< only kernels whose name contains this are listed; empty: all
  bool json = false;
  unsigned threads = 0;  ///< decoding threads (InspectOptions::threads)
  /// The GPUs to check coverage against (none: no coverage findings) and the
  /// HSA_OVERRIDE_GFX_VERSION the runtime would see.
  std::vector<MachineGpu> gpus;
  std::optional<std::string> hsa_override;
  bool check_coverage = true;  ///< text: say so when `gpus` is empty ("none found")
  bool snapshot_used = false;  ///< JSON: "snapshot_used"
  /// Receives the message of a file that could not be inspected (for a process's files only when
  /// it is damaged), and "PATH: N of M GPU code object(s) damaged, K problem(s): ..." for a file
  /// read with damage. May be null.
  std::function<void(const std::string& message)> error;
  /// Called at the start of each file and as it is read (at most once per code object or
  /// offload bundle), on the calling thread. The library prints nothing itself. May be null.
  std::function<void(const InspectProgress& progress)> progress;
};

/// What the files amount to.
struct InspectOutcome {
  std::vector<core::Finding> findings;  ///< every file's, in file order
  /// The same findings in reading order (RankFindings): what the user can change first, facts
  /// about a known GPU library's own kernels last and folded.
  std::vector<RankedFinding> ranked;
  bool file_failed = false;  ///< some file could not be read or is no GPU code
  /// Some file could not be read fully: truncated, a damaged section-header table
  /// (ErrorCode::kDataLoss), problems in its GPU code sections, or a code object with an error.
  /// Counted for a process's files too.
  bool file_damaged = false;
};

/// Inspects `request.paths` in order and writes to `out` as it goes, flushing at the end.
/// JSON: {"schema_version": 1, "files": [{path, code_objects: [...], kind, error, problems,
/// binary_archs, ptx_archs}], findings (in reading order, ToJson(RankedFinding)), snapshot_used,
/// tool_version, gpus} on one line; a file's
/// code objects are written as they are decoded, never all held. Text: per file its kind and
/// code objects per architecture and format, its problems and, with a kernel filter, the
/// matching kernels with their resources and occupancy (at most 4 MiB of those per file); then
/// this machine's GPUs. The findings are returned, not written, in text mode: the caller renders
/// them. Never fails: a file that cannot be inspected is reported through `request.error` and
/// in the JSON, and counted in `file_failed`.
InspectOutcome InspectFiles(const InspectRequest& request, std::FILE* out);

}  // namespace gputriage::inspect
