// The kernel log during a supervised run: /dev/kmsg opened at job start and positioned at its
// end, so exactly the records written while the job runs are read (the ring buffer may wrap on
// a long job, so the supervisor drains it as records arrive, not only at the end). Records are
// correlated with the job by the pids they name.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"
#include "kmsg/kmsg.h"

namespace gputriage::forensics {

class KmsgWatch {
 public:
  KmsgWatch() = default;
  ~KmsgWatch();
  KmsgWatch(const KmsgWatch&) = delete;
  KmsgWatch& operator=(const KmsgWatch&) = delete;

  /// Opens `path` (normally /dev/kmsg) non-blocking and seeks to its end. Fails with the
  /// reason (EPERM: kernel.dmesg_restrict and no CAP_SYSLOG) — the caller notes the kernel log
  /// as not collected and runs the job anyway.
  core::Result<void> Open(const std::string& path = "/dev/kmsg");

  /// Opens `path` non-blocking at the oldest record the ring buffer still holds; Drain() then
  /// keeps only the records stamped at or after `since_monotonic_us` (microseconds since boot):
  /// `capture`'s view of the kernel log since the captured process started. Fails as Open does.
  core::Result<void> OpenSince(const std::string& path, uint64_t since_monotonic_us);

  /// The descriptor to poll() for new records; -1 when not open.
  int fd() const { return fd_; }

  /// Reads every record available now. Records lost to a wrapping ring buffer (EPIPE) are
  /// counted in lost().
  void Drain();

  const std::vector<kmsg::Record>& records() const { return records_; }
  /// The records read so far, handed over and forgotten (with the raw lines): a reader that
  /// runs for days keeps nothing it has passed on.
  std::vector<kmsg::Record> TakeRecords();
  /// The raw record lines as read (the bundle's kmsg.log), one per record.
  const std::string& raw() const { return raw_; }
  size_t lost() const { return lost_; }

 private:
  int fd_ = -1;
  uint64_t since_us_ = 0;  // records stamped earlier are skipped (OpenSince)
  std::vector<kmsg::Record> records_;
  std::string raw_;
  size_t lost_ = 0;
};

/// The process ids a kernel-log message names: NVIDIA Xid "pid=1234", amdgpu VM faults
/// "for process python3 pid 1234 thread python3 pid 1240", the OOM killer "Killed process 1234
/// (python3)" and "oom-kill:...,pid=1234,...". Empty when it names none.
std::vector<int> PidsInMessage(std::string_view message);

/// A kernel-log record with what ties it to the job.
struct CorrelatedRecord {
  kmsg::Record record;
  std::string log_class;        ///< kmsg::LogClassName, "" when not GPU-related
  std::optional<int> job_pid;   ///< a pid of the job's process tree the record names
  bool other_process = false;   ///< names pids, none of them the job's: another process's event
  std::optional<uint32_t> xid;  ///< NVIDIA Xid code, when it is an Xid line
  bool oom_kill = false;        ///< the OOM killer killed `job_pid`
};

/// Correlates records with the pids of the job's process tree.
std::vector<CorrelatedRecord> Correlate(const std::vector<kmsg::Record>& records, const std::set<int>& job_pids);

}  // namespace gputriage::forensics
