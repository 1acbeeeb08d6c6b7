#include "collect/kernel_log/kernel_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/klog.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <utility>

#include "core/clock.h"
#include "core/scoped_fd.h"
#include "core/text.h"
#include "kmsg/classify.h"
#include "kmsg/kmsg.h"

namespace gputriage::kernel_log {
using kmsg::ClassifyMessage;
using kmsg::kLogClassCount;
using kmsg::LogClass;
using kmsg::LogClassName;
using kmsg::ParseAnyBuffer;
using kmsg::ParseKmsgRecord;
using kmsg::ParseStats;
using kmsg::ParseSyslogBuffer;
using kmsg::ParseXid;
using kmsg::Record;
using kmsg::XidInfo;
namespace {

using core::Json;

constexpr std::string_view kKmsgPath = "/dev/kmsg";
constexpr std::string_view kStatPath = "/proc/stat";
constexpr std::string_view kDmesgRestrictPath = "/proc/sys/kernel/dmesg_restrict";
// A captured dev/kmsg of a 32 MiB log_buf_len (the largest common setting) stays below this.
constexpr size_t kMaxKmsgFileBytes = 64u << 20;
// One read() of /dev/kmsg returns one record and fails with EINVAL when the buffer is smaller
// than the record; records are at most CONSOLE_EXT_LOG_MAX (8 KiB).
constexpr size_t kKmsgReadBytes = 16u << 10;
// A flood of new records could keep the reader busy forever; a 32 MiB buffer holds ~300k.
constexpr size_t kMaxLiveRecords = 1u << 20;
// syslog(2) actions (include/linux/syslog.h; glibc does not define them).
constexpr int kSyslogActionReadAll = 3;
constexpr int kSyslogActionSizeBuffer = 10;
// 9999-12-31T23:59:59Z: later times come from garbage timestamps and are not printed.
constexpr uint64_t kMaxEpochSeconds = 253402300799ull;

/// A failed open/read with its errno, and a message naming the object.
struct IoFailure {
  int error_number = 0;
  std::string message;
};

struct KeptRecord {
  Record record;
  LogClass log_class;
  std::optional<uint64_t> realtime_us;  ///< the journal's wall-clock time of the record
};

/// Filters records by time, classifies them, counts them and keeps the newest GPU ones.
class Accumulator {
 public:
  /// `newest_first`: records arrive newest first (the journal, read backwards); the first
  /// max_records GPU ones are kept, in time order.
  Accumulator(size_t max_records, std::optional<uint64_t> since_monotonic_us, bool newest_first = false)
      : max_records_(max_records), since_monotonic_us_(since_monotonic_us), newest_first_(newest_first) {}

  void Add(Record&& record, std::optional<uint64_t> realtime_us = std::nullopt) {
    if (since_monotonic_us_ && (!record.monotonic_us || *record.monotonic_us < *since_monotonic_us_)) {
      return;
    }
    ++records_total_;
    LogClass log_class = ClassifyMessage(record.message);
    if (log_class == LogClass::kNone) return;
    ++gpu_records_total_;
    ++counts_[static_cast<size_t>(log_class)];
    if (max_records_ == 0) return;
    if (newest_first_) {
      if (kept_.size() < max_records_) kept_.push_front({std::move(record), log_class, realtime_us});
      return;
    }
    if (kept_.size() == max_records_) kept_.pop_front();
    kept_.push_back({std::move(record), log_class, realtime_us});
  }

  void AddStats(const ParseStats& stats) { malformed_ += stats.malformed; }
  void AddMalformed() { ++malformed_; }
  /// Not every record was read (a time budget ran out): `truncated` whatever was kept.
  void MarkIncomplete() { incomplete_ = true; }
  /// The records are of the previous boot `boot_id`: each says so (`boot`, `boot_id`).
  void MarkPreviousBoot(std::string boot_id) { previous_boot_id_ = std::move(boot_id); }

  /// The "kernel_log" data; `boot_s` (epoch seconds) gives wall-clock times when known.
  Json ToJson(std::string_view source, std::optional<uint64_t> boot_s) const;

 private:
  size_t max_records_;
  std::optional<uint64_t> since_monotonic_us_;
  bool newest_first_;
  bool incomplete_ = false;
  std::string previous_boot_id_;
  size_t records_total_ = 0;
  size_t gpu_records_total_ = 0;
  size_t malformed_ = 0;
  std::array<size_t, kLogClassCount> counts_{};
  std::deque<KeptRecord> kept_;
};

/// "2026-12-02T10:46:06.123Z" for boot + monotonic, computed in integers (no rounding drift);
/// "" when it would overflow or leave year 9999.
std::string FormatRecordTime(uint64_t boot_s, uint64_t monotonic_us) {
  uint64_t seconds = boot_s + monotonic_us / 1000000;
  if (boot_s > kMaxEpochSeconds || seconds > kMaxEpochSeconds) return "";
  std::string text = core::FormatUtcIso(static_cast<double>(seconds));
  if (text.empty() || text.back() != 'Z') return "";
  text.pop_back();
  return text + fmt::format(".{:03}Z", (monotonic_us % 1000000) / 1000);
}

Json XidJson(const XidInfo& xid) {
  Json out = {{"code", xid.code}, {"pci", xid.pci}};
  core::SetIf(out, "pid", xid.pid);
  if (xid.process) out["process"] = core::SanitizeUtf8(*xid.process);
  return out;
}

Json RecordJson(const KeptRecord& kept, std::optional<uint64_t> boot_s, const std::string& previous_boot_id) {
  const Record& record = kept.record;
  Json out = Json::object();
  core::SetIf(out, "seq", record.seq);
  if (kept.realtime_us) {
    std::string time = FormatRealtimeUs(*kept.realtime_us);
    if (!time.empty()) out["time"] = std::move(time);
  }
  if (record.monotonic_us) {
    out["monotonic_s"] = static_cast<double>(*record.monotonic_us) / 1e6;
    if (boot_s && !kept.realtime_us) {
      std::string time = FormatRecordTime(*boot_s, *record.monotonic_us);
      if (!time.empty()) out["time"] = std::move(time);
    }
  }
  out["priority"] = record.priority;
  out["facility"] = record.facility;
  out["class"] = LogClassName(kept.log_class);
  out["message"] = core::SanitizeUtf8(record.message);
  if (kept.log_class == LogClass::kNvidiaXid) {
    if (std::optional<XidInfo> xid = ParseXid(record.message)) out["xid"] = XidJson(*xid);
  }
  if (!previous_boot_id.empty()) {
    out["boot"] = "previous";
    out["boot_id"] = previous_boot_id;
  }
  return out;
}

Json Accumulator::ToJson(std::string_view source, std::optional<uint64_t> boot_s) const {
  Json data = Json::object();
  data["source"] = source;
  if (boot_s && *boot_s <= kMaxEpochSeconds) {
    data["boot_time"] = core::FormatUtcIso(static_cast<double>(*boot_s));
  }
  if (since_monotonic_us_) {
    data["since_monotonic_s"] = static_cast<double>(*since_monotonic_us_) / 1e6;
  }
  data["records_total"] = records_total_;
  data["gpu_records_total"] = gpu_records_total_;
  data["malformed_records"] = malformed_;
  data["truncated"] = incomplete_ || gpu_records_total_ > kept_.size();
  Json counts = Json::object();
  for (size_t i = 0; i < kLogClassCount; ++i) {
    if (counts_[i] != 0) counts[std::string(LogClassName(static_cast<LogClass>(i)))] = counts_[i];
  }
  data["counts"] = std::move(counts);
  Json records = Json::array();
  for (const KeptRecord& kept : kept_) records.push_back(RecordJson(kept, boot_s, previous_boot_id_));
  data["records"] = std::move(records);
  return data;
}

/// Reads the live /dev/kmsg without blocking: one record per read() until EAGAIN. EPIPE means
/// the kernel overwrote records we had not read yet; reading goes on with the oldest left.
/// Returns the failure when the device cannot be opened; a read error midway keeps the records
/// read before it and is noted in `section`.
std::optional<IoFailure> ReadLiveKmsg(const std::string& path, Accumulator& accumulator, core::Section& section) {
  core::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) {
    return IoFailure{errno, fmt::format("{}: {}", path, std::strerror(errno))};
  }
  std::string buffer(kKmsgReadBytes, '\0');
  for (size_t reads = 0; reads < kMaxLiveRecords;) {
    ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n > 0) {
      ++reads;
      std::optional<Record> record = ParseKmsgRecord(std::string_view(buffer.data(), static_cast<size_t>(n)));
      if (record) {
        accumulator.Add(std::move(*record));
      } else {
        accumulator.AddMalformed();
      }
      continue;
    }
    if (n == 0 || errno == EAGAIN) break;
    if (errno == EINTR || errno == EPIPE) continue;
    section.NoteMissing("kernel_log",
                        fmt::format("{}: read failed after {} records: {}", path, reads, std::strerror(errno)));
    break;
  }
  return std::nullopt;
}

/// Reads the whole syslog(2) buffer, what dmesg falls back to without /dev/kmsg.
std::optional<IoFailure> ReadSyslogBuffer(Accumulator& accumulator) {
  int size = ::klogctl(kSyslogActionSizeBuffer, nullptr, 0);
  if (size < 0) {
    return IoFailure{errno, fmt::format("syslog(SYSLOG_ACTION_SIZE_BUFFER): {}", std::strerror(errno))};
  }
  std::string buffer(static_cast<size_t>(size), '\0');
  int n = ::klogctl(kSyslogActionReadAll, buffer.data(), size);
  if (n < 0) {
    return IoFailure{errno, fmt::format("syslog(SYSLOG_ACTION_READ_ALL, {} bytes): {}", size, std::strerror(errno))};
  }
  buffer.resize(static_cast<size_t>(n));
  accumulator.AddStats(ParseSyslogBuffer(buffer, [&](Record&& r) { accumulator.Add(std::move(r)); }));
  return std::nullopt;
}

bool IsPermissionError(int error_number) { return error_number == EPERM || error_number == EACCES; }

/// Why neither /dev/kmsg nor syslog(2) could be read, in the user's terms.
std::string DescribeLiveFailure(const core::OsView& os, const IoFailure& kmsg, const IoFailure& syslog) {
  if (IsPermissionError(kmsg.error_number) || IsPermissionError(syslog.error_number)) {
    std::string restrict = os.ReadTrimmed(kDmesgRestrictPath).value_or("unknown");
    return fmt::format("no permission to read /dev/kmsg or the syslog buffer (dmesg_restrict={}): run as root",
                       restrict);
  }
  return kmsg.message + "; " + syslog.message;
}

/// btime of /proc/stat: the boot time in seconds since the epoch. Record times are btime plus
/// the printk clock, which stops during suspend while btime accounts for it: on a machine that
/// was suspended, records written after the resume come out early by the time spent asleep.
core::Result<uint64_t> TryReadBootTime(const core::OsView& os) {
  core::Result<std::string> stat = os.TryReadFile(kStatPath);
  if (!stat.ok()) return stat.error();
  for (std::string_view line : core::SplitLines(*stat)) {
    if (!core::StartsWith(line, "btime ")) continue;
    if (std::optional<uint64_t> btime = core::ParseU64(line.substr(6), 10)) return *btime;
    return core::MakeError("{}: bad btime line '{}'", os.Resolve(kStatPath), core::SanitizeUtf8(line));
  }
  return core::MakeError("{}: no btime line", os.Resolve(kStatPath));
}

/// Reads the log of the live machine into `accumulator`; the source name, or nullopt with a
/// not_collected note in `section`.
std::optional<std::string_view> ReadLive(const core::OsView& os, Accumulator& accumulator, core::Section& section) {
  std::optional<IoFailure> kmsg = ReadLiveKmsg(os.Resolve(kKmsgPath), accumulator, section);
  if (!kmsg) return "/dev/kmsg";
  std::optional<IoFailure> syslog = ReadSyslogBuffer(accumulator);
  if (!syslog) return "syslog";
  section.NoteMissing("kernel_log", DescribeLiveFailure(os, *kmsg, *syslog));
  return std::nullopt;
}

/// Reads dev/kmsg of a captured tree (a regular file of records, or syslog(2) text).
std::optional<std::string_view> ReadCaptured(const core::OsView& os, Accumulator& accumulator, core::Section& section) {
  core::Result<std::string> content = os.TryReadFile(kKmsgPath, kMaxKmsgFileBytes);
  if (!content.ok()) {
    section.NoteMissing("kernel_log", content.error().message);
    return std::nullopt;
  }
  accumulator.AddStats(ParseAnyBuffer(*content, [&](Record&& r) { accumulator.Add(std::move(r)); }));
  return "file";
}

/// This boot's records: /dev/kmsg (or syslog(2)), a captured tree's dev/kmsg.
void CollectCurrentBoot(const core::OsView& os, const Options& options, core::Section& section) {
  Accumulator accumulator(options.max_records, options.since_monotonic_us);
  std::optional<std::string_view> source =
      os.live() ? ReadLive(os, accumulator, section) : ReadCaptured(os, accumulator, section);
  if (!source) return;
  std::optional<uint64_t> boot_s;
  if (core::Result<uint64_t> btime = TryReadBootTime(os); btime.ok()) {
    boot_s = *btime;
  } else {
    section.NoteMissing("kernel_log.boot_time", btime.error().message + " (records have monotonic times only)");
  }
  section.data = accumulator.ToJson(*source, boot_s);
}

constexpr std::string_view kPreviousBootItem = "kernel_log.previous_boot";

/// The previous boot's records from the journal, through the same classifier, into
/// `previous_boot`; why there are none goes into not_collected.
void CollectPreviousBoot(const core::OsView& os, const Options& options, core::Section& section) {
  Accumulator accumulator(options.max_records, std::nullopt, /*newest_first=*/true);
  core::Result<PreviousBoot> boot = ReadPreviousBootKernelLog(
      os, *options.previous_boot, [&](JournalRecord&& r) { accumulator.Add(std::move(r.record), r.realtime_us); });
  if (!boot.ok()) {
    section.NoteMissing(std::string(kPreviousBootItem), boot.error().message);
    return;
  }
  for (std::string& note : boot->notes) section.NoteMissing(std::string(kPreviousBootItem), std::move(note));
  if (!boot->incomplete.empty()) {
    accumulator.MarkIncomplete();
    section.NoteMissing(std::string(kPreviousBootItem),
                        fmt::format("truncated: previous boot {}: {}; its older records were not read", boot->boot_id,
                                    boot->incomplete));
  }
  if (boot->kernel_entries == 0 && boot->incomplete.empty()) {
    // Every boot logs kernel messages; journald copies them unless ReadKMsg=no.
    section.NoteMissing(std::string(kPreviousBootItem),
                        fmt::format("the journal holds no kernel message of the previous boot ({}): journald did not "
                                    "read the kernel log then (ReadKMsg=no), or the journal is damaged",
                                    boot->boot_id));
  }
  accumulator.AddStats(ParseStats{.records = 0, .malformed = boot->malformed_entries});
  accumulator.MarkPreviousBoot(boot->boot_id);
  Json data = accumulator.ToJson("journal", std::nullopt);
  data["journal"] = boot->journal;
  data["boot_id"] = boot->boot_id;
  if (boot->first_realtime_us) data["first_entry_time"] = FormatRealtimeUs(*boot->first_realtime_us);
  if (boot->last_realtime_us) data["last_entry_time"] = FormatRealtimeUs(*boot->last_realtime_us);
  section.data["previous_boot"] = std::move(data);
}

}  // namespace

core::Section Collect(const core::OsView& os, const Options& options) {
  core::Section section;
  CollectCurrentBoot(os, options, section);
  if (options.previous_boot) CollectPreviousBoot(os, options, section);
  return section;
}

}  // namespace gputriage::kernel_log
