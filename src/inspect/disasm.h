// `inspect --disasm`: GPU kernels disassembled by the vendor's tool (cuobjdump for NVIDIA SASS,
// llvm-objdump for amdgcn). We find the kernels and the tool; the tool does the work and writes
// straight to our standard output.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gputriage::inspect {

/// Where a disassembler is looked for: the directories of PATH, then /usr/local/cuda/bin,
/// /opt/rocm/llvm/bin, /usr/bin, /usr/local/bin (where toolkits install without touching PATH).
const std::vector<std::string>& DefaultToolDirs();

/// The disassembler for `vendor`'s code objects: "nvidia" cuobjdump, "amd" llvm-objdump (then
/// llvm-objdump-15, llvm-objdump-14), the first name found as an executable in `dirs` (each name
/// tried in every directory before the next name). Fails, saying what to install, when none is
/// there; fails for another vendor.
core::Result<std::string> FindDisassembler(std::string_view vendor,
                                           const std::vector<std::string>& dirs = DefaultToolDirs());

/// Disassembles, in each of `paths`, the kernels whose symbol or name contains `kernel` (at
/// most 20 per file) with the vendor's tool, looked up in `tool_dirs`. The tool inherits this
/// process's standard output and error (stdout is flushed before it starts). Each file that
/// cannot be done (unreadable, no GPU code, no kernel matches, an AMD bundle or host binary
/// rather than a standalone code object, a tool that fails or cannot start) is reported
/// through `error` and the next file is tried; a missing tool is reported and stops at once.
/// True when every file was disassembled.
bool DisassembleKernels(const std::vector<std::string>& paths, const std::string& kernel,
                        const std::function<void(const std::string& message)>& error,
                        const std::vector<std::string>& tool_dirs = DefaultToolDirs());

}  // namespace gputriage::inspect
