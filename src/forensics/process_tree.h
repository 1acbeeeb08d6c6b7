// The job's processes as the kernel sees them in /proc: who descends from whom, which are still
// alive, and when a process started (a pid with its start time names one process for good).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gputriage::forensics {

/// What /proc/PID/stat says of a process (or thread).
struct ProcStat {
  std::string comm;  ///< field 2, without the parentheses
  char state = '?';  ///< R, S, D, T (stopped), t (tracing stop), Z (zombie), X (dead)...
  int ppid = 0;
  uint64_t flags = 0;       ///< field 9: PF_* (PF_KTHREAD 0x00200000: a kernel thread)
  uint64_t start_time = 0;  ///< field 22: clock ticks since boot
};

/// /proc/PID/stat of `pid`; nullopt when it is gone or cannot be parsed.
std::optional<ProcStat> ReadProcStat(int pid);

/// The thread ids of process `tgid` (/proc/TGID/task), sorted; empty when it is gone.
std::vector<int> ThreadsOf(int tgid);

/// The processes (thread-group leaders) below `ancestor` by parent pid (/proc/PID/stat), in
/// no particular order: children, theirs, and orphans reparented to `ancestor` when it is a child
/// subreaper. Zombies are left out (they have exited), and so are the subtrees of `skip`. Empty
/// when /proc cannot be read.
std::vector<int> LiveDescendants(int ancestor, const std::set<int>& skip = {});

/// True while `pid` exists and has not exited (a zombie has).
bool IsLive(int pid);

/// A member of /proc/PID/status ("Tgid", "TracerPid", "SigIgn", ...; also /proc/TID/status of
/// a thread): the text after "KEY:", trimmed; nullopt when the process or the member is not there.
std::optional<std::string> ProcStatusField(int pid, std::string_view key);

/// Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot; nullopt when
/// it is gone (or /proc/PID/stat cannot be parsed).
std::optional<uint64_t> ProcessStartTime(int pid);

}  // namespace gputriage::forensics
