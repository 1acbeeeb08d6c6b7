// core::Disassembly (Capstone) around a faulting program counter, and the ISA-extension check that
// tells "built for a newer CPU" from a deliberate trap.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/process.h"

namespace gputriage::forensics {

/// Reads up to `length` bytes of the target's memory at `address`; returns what it could read
/// from `address` on (possibly fewer bytes), empty when nothing there is readable.
using MemoryReader = std::function<std::vector<uint8_t>(uint64_t address, size_t length)>;

/// The flags of the first "flags" (x86) or "Features" (arm64) line of /proc/cpuinfo text.
std::set<std::string> ParseCpuFlags(std::string_view cpuinfo);

/// This machine's CPU flags: ParseCpuFlags of /proc/cpuinfo (read up to 16 MiB, ~1.5 KB per CPU);
/// empty when it cannot be read.
std::set<std::string> HostCpuFlags();

/// The /proc/cpuinfo flag for a Capstone x86 group name ("avx512" -> "avx512f", "sse41" ->
/// "sse4_1"); empty for groups that are not ISA extensions ("jump", "mode64").
std::string CpuFlagForGroup(std::string_view capstone_group);

/// Options for DisassembleAround.
struct DisassemblyWindow {
  size_t before = 12;  ///< instructions shown before the faulting one, at most
  size_t after = 6;    ///< instructions shown after it, at most
  /// Decode from the function start when the PC is at most this far into the function
  /// (x86 cannot be decoded backwards reliably); else decode from the PC only.
  uint64_t max_function_prefix = 4096;
};

/// Disassembles the instructions around `pc` for `arch` ("x86_64" or "aarch64"), marking the
/// one at `pc` as faulting. `function_start` (from the symbol table) lets it show the
/// instructions before the PC. The faulting instruction's ISA extensions are listed and
/// compared with `cpu_flags`. Never fails: what cannot be shown is explained in `note`.
core::Disassembly DisassembleAround(const MemoryReader& read, std::string_view arch, uint64_t pc,
                                    std::optional<uint64_t> function_start, const std::set<std::string>& cpu_flags,
                                    const DisassemblyWindow& window = {});

/// The architecture this binary runs on, in DisassembleAround's words.
std::string_view HostArch();

}  // namespace gputriage::forensics
