// kb/tables/cuda-errors.yaml and kb/tables/hip-errors.yaml: every cudaError_t / CUresult and
// hipError_t value with its name, message, the category it usually points to, and whether it
// is sticky (leaves the context unusable).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/source.h"
#include "core/category.h"
#include "core/result.h"

namespace gputriage::catalog {

/// One row of the error tables.
struct ErrorCode {
  std::string vendor;  ///< "cuda" or "hip"
  int value = 0;
  std::string name;                                  ///< cudaErrorIllegalAddress, hipErrorNoBinaryForGpu
  std::string driver_name;                           ///< CUDA_ERROR_ILLEGAL_ADDRESS (CUDA only, when there is one)
  std::string message;                               ///< what cudaGetErrorString/hipGetErrorString returns
  core::Category category = core::Category::kOther;  ///< what the code usually points to
  /// Every later call returns it (CUDA's table marks these; a HIP code is sticky when its CUDA
  /// twin is).
  bool sticky = false;
};

/// The CUDA and HIP tables, looked up by name and by message.
class ErrorCodes {
 public:
  /// The code called `name` (cudaError*, CUDA_ERROR_*, hipError*, or an alias), or null.
  const ErrorCode* FindByName(std::string_view name) const;

  /// The code of `vendor` ("cuda" or "hip") whose message is `message`; case and surrounding
  /// space do not matter. Null when none.
  const ErrorCode* FindByMessage(std::string_view vendor, std::string_view message) const;

  /// The code of `vendor` ("cuda" or "hip") with numeric value `value` (cudaError_t and CUresult
  /// share their values), or null.
  const ErrorCode* FindByValue(std::string_view vendor, int value) const;

  const std::vector<ErrorCode>& codes() const { return codes_; }

 private:
  friend core::Result<ErrorCodes> ParseErrorTables(const SourceFile& cuda, const SourceFile& hip);
  std::vector<ErrorCode> codes_;
  std::map<std::string, size_t, std::less<>> by_name_;
  std::map<std::string, size_t, std::less<>> by_message_;  // "cuda:" / "hip:" + lower-case message
};

/// Parses both tables (CUDA first: HIP codes take `sticky` from their `cuda_name`). Fails naming
/// the file and entry for a row without name or category, or with an unknown category.
core::Result<ErrorCodes> ParseErrorTables(const SourceFile& cuda, const SourceFile& hip);

}  // namespace gputriage::catalog
