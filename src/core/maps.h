// /proc/PID/maps: the memory map of a process, and where a fault address falls in it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/process.h"

namespace gputriage::core {

/// Parses one line of /proc/PID/maps (or a map line of /proc/PID/smaps): "start-end perms
/// offset dev inode   path", fields separated by spaces. Nullopt when the line is not one: a
/// range that is not "hex-hex" or ends before it starts, perms not four characters, an offset
/// that is not hex, a dev without ':', an inode that is not decimal. The path is everything
/// after the inode's spaces, embedded spaces and a " (deleted)" suffix included; empty for
/// anonymous memory.
std::optional<Mapping> ParseMapsLine(std::string_view line);

/// Parses /proc/PID/maps text, one ParseMapsLine per line. Lines that do not parse are skipped
/// and counted in `*malformed` when given; empty lines are neither.
std::vector<Mapping> ParseMaps(std::string_view text, size_t* malformed = nullptr);

/// The mapping that contains `address`, or nullptr.
const Mapping* FindMapping(const std::vector<Mapping>& maps, uint64_t address);

/// Lowest address user space may map (vm.mmap_min_addr's usual 65536): below it, a fault is a
/// null-pointer dereference (possibly plus a field offset).
inline constexpr uint64_t kNullPageLimit = 65536;

/// Where `fault_address` falls: "null-page" (below kNullPageLimit), "stack-guard" (unmapped or
/// a no-access guard mapping within `stack_slack` bytes of the stack pointer, or just below the
/// [stack] mapping — the usual sign of a stack overflow), "mapped" (inside a mapping: a
/// permission problem, or SIGBUS on a file), "unmapped" (a wild pointer).
FaultLocation LocateFault(uint64_t fault_address, const std::vector<Mapping>& maps,
                          std::optional<uint64_t> stack_pointer, uint64_t stack_slack = 256 * 1024);

}  // namespace gputriage::core
