// GPU-aware failure signatures. For a GPU failure the host stack is useless as a key (every frame
// is inside libcuda or libamdhip64), so the signature is what the GPU side says: the runtime's
// error code (canonical name from the CUDA/HIP error tables), the kernel that failed, the GPU
// architecture and the component versions. Two runs with the same signature are the same
// failure; `run --repeat` and `analyze` group by it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catalog/error_codes.h"
#include "core/category.h"
#include "core/model.h"

namespace gputriage::forensics {

using catalog::ErrorCode;

struct GpuSignature {
  std::string error;                             ///< "cudaErrorIllegalAddress", "Xid 31", "HSA_STATUS_ERROR_..."
  std::optional<core::Category> error_category;  ///< from the error table, for a runtime code
  std::string kernel;                            ///< the failing kernel, without its argument list
  std::vector<std::string> archs;                ///< from the snapshot: "sm_90", "gfx90a"
  std::vector<std::pair<std::string, std::string>> versions;  ///< from the snapshot
  /// "cudaErrorIllegalAddress in indexFuncSmallIndex on sm_90 (torch 2.11.0, cuda 13.0)";
  /// empty when no GPU error was seen.
  std::string Key() const;
  bool empty() const { return error.empty(); }
};

/// Reads log lines for the GPU side of a failure: the first runtime error code — or the first
/// sticky one after a non-sticky one (an out-of-memory that was caught, then an illegal address
/// that killed the context; after a sticky error every call returns it, so the first sticky one
/// is the cause) — the first kernel named by a
/// device assert, compute-sanitizer or the HIP runtime's log, and failing kernel-log events.
class SignatureScanner {
 public:
  /// Reads error codes through `errors` (which must outlive the scanner).
  explicit SignatureScanner(const catalog::ErrorCodes& errors) : errors_(&errors) {}

  /// An RE2 pattern that matches every line that could still teach the scanner something; empty
  /// when it has all it looks for (for a prefilter).
  std::string WantedPattern() const;

  /// Looks at one line (without its newline). True when it learned something.
  bool Line(std::string_view line);

  /// The signature, with the machine's GPU architectures and component versions (from its
  /// snapshot; empty when there is none).
  GpuSignature Finish(const std::vector<std::string>& archs,
                      const std::vector<std::pair<std::string, std::string>>& versions) const;

  const ErrorCode* first_code() const { return code_; }

 private:
  const catalog::ErrorCodes* errors_;
  const ErrorCode* code_ = nullptr;
  std::string other_error_;  // an error without a table code (HSA status, Xid, amdgpu fault)
  std::string kernel_;
};

/// "void at::native::foo<float>(int, float*)+0x8d0" -> "at::native::foo<float>".
std::string KernelName(std::string_view text);

/// Normalises a log line into a signature: ANSI codes, timestamps, pids, addresses, hex
/// numbers, sizes, shapes and other numbers blanked, so recurring failures compare equal.
std::string NormalizeLine(std::string_view line);

}  // namespace gputriage::forensics
