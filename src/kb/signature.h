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

#include "core/model.h"
#include "kb/matcher.h"

namespace gputriage::kb {

/// One row of kb/tables/cuda-errors.yaml or kb/tables/hip-errors.yaml.
struct ErrorCode {
  std::string vendor;  ///< "cuda" or "hip"
  int value = 0;
  std::string name;    ///< cudaErrorIllegalAddress, hipErrorNoBinaryForGpu
  std::string driver_name;  ///< CUDA_ERROR_ILLEGAL_ADDRESS (CUDA only, when there is one)
  std::string message;      ///< what cudaGetErrorString/hipGetErrorString returns
  std::string category;     ///< the category the code usually points to
  /// The error leaves the context unusable: every later call returns it (CUDA's table marks
  /// these; a HIP code is sticky when its CUDA twin is).
  bool sticky = false;
};

/// The error code called `name` (cudaError*, CUDA_ERROR_*, hipError*), or null.
const ErrorCode* FindErrorByName(std::string_view name);

/// The error code whose message is `message` ("an illegal memory access was encountered"),
/// for the vendor ("cuda" or "hip"), or null. Case and surrounding space do not matter.
const ErrorCode* FindErrorByMessage(std::string_view vendor, std::string_view message);

/// Problems loading the embedded error tables; empty in a correct build (tested).
const std::vector<std::string>& ErrorTableProblems();

struct GpuSignature {
  std::string error;           ///< "cudaErrorIllegalAddress", "Xid 31", "HSA_STATUS_ERROR_..."
  std::string error_category;  ///< from the error table, when the error is a runtime code
  std::string kernel;          ///< the failing kernel, without its argument list
  std::vector<std::string> archs;  ///< from the snapshot: "sm_90", "gfx90a"
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
  /// An RE2 pattern that matches every line that could still teach the scanner something; empty
  /// when it has all it looks for (for a prefilter).
  std::string WantedPattern() const;

  /// Looks at one line (without its newline). True when it learned something.
  bool Line(std::string_view line);

  /// The signature, with architecture and versions from `facts` when there are any.
  GpuSignature Finish(const Facts* facts) const;

  const ErrorCode* first_code() const { return code_; }

 private:
  const ErrorCode* code_ = nullptr;
  std::string other_error_;  // an error without a table code (HSA status, Xid, amdgpu fault)
  std::string kernel_;
};

/// "void at::native::foo<float>(int, float*)+0x8d0" -> "at::native::foo<float>".
std::string KernelName(std::string_view text);

}  // namespace gputriage::kb
