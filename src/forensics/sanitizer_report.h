// compute-sanitizer's memcheck report (and cuda-memcheck's, its predecessor) read into typed
// errors: what the access was, in which kernel (and file:line when the code has -lineinfo), by
// which thread and block, at which address, and where that address lies against the nearest
// allocation. The text is the tool's own lines, each prefixed "========= ".
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "core/gpu_calls.h"

namespace gputriage::forensics {

struct SanitizerReport {
  std::vector<core::SanitizerError> errors;
  std::optional<int64_t> errors_reported;  ///< "ERROR SUMMARY: N errors"
};

/// Every error block of `text` (other lines, the job's own output among them, are skipped).
SanitizerReport ParseSanitizerReport(std::string_view text);

/// The kernel's base name for compute-sanitizer's `--kernel-name kns=` filter: the identifier
/// before the parameter list, without return type, namespace or template arguments
/// ("void ns::scale<float>(float*, int)" -> "scale").
std::string KernelBaseName(std::string_view kernel);

}  // namespace gputriage::forensics
