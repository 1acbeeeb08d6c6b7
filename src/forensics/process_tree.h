// The job's processes as the kernel sees them in /proc: who descends from whom, which are still
// alive, and when a process started (a pid with its start time names one process for good).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

namespace gputriage::forensics {

/// The processes (thread-group leaders) below `ancestor` by parent pid (/proc/PID/stat), in
/// no particular order: children, theirs, and orphans reparented to `ancestor` when it is a child
/// subreaper. Zombies are left out (they have exited), and so are the subtrees of `skip`. Empty
/// when /proc cannot be read.
std::vector<int> LiveDescendants(int ancestor, const std::set<int>& skip = {});

/// True while `pid` exists and has not exited (a zombie has).
bool IsLive(int pid);

/// Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot; nullopt when
/// it is gone (or /proc/PID/stat cannot be parsed).
std::optional<uint64_t> ProcessStartTime(int pid);

}  // namespace gputriage::forensics
