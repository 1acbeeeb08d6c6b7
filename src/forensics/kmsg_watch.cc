#include "forensics/kmsg_watch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <re2/re2.h>

#include "kmsg/classify.h"

namespace gputriage::forensics {

KmsgWatch::~KmsgWatch() {
  if (fd_ >= 0) close(fd_);
}

core::Result<void> KmsgWatch::Open(const std::string& path) {
  fd_ = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) return core::MakeError("{}: {}", path, std::strerror(errno));
  if (lseek(fd_, 0, SEEK_END) < 0) {
    int err = errno;
    close(fd_);
    fd_ = -1;
    return core::MakeError("{}: cannot seek to the end: {}", path, std::strerror(err));
  }
  return {};
}

core::Result<void> KmsgWatch::OpenSince(const std::string& path, uint64_t since_monotonic_us) {
  fd_ = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) return core::MakeError("{}: {}", path, std::strerror(errno));
  since_us_ = since_monotonic_us;
  return {};
}

void KmsgWatch::Drain() {
  if (fd_ < 0) return;
  // One read() returns one record; /dev/kmsg records are at most 8 KiB (PRINTK_MESSAGE_MAX
  // plus the header).
  char buffer[16384];
  for (int i = 0; i < 100000; ++i) {
    ssize_t n = read(fd_, buffer, sizeof buffer);
    if (n < 0 && errno == EPIPE) {
      ++lost_;  // overwritten before we read it; the next read continues with the oldest left
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EAGAIN: nothing more now
    std::string_view bytes(buffer, static_cast<size_t>(n));
    std::optional<kmsg::Record> record = kmsg::ParseKmsgRecord(bytes);
    if (since_us_ > 0 && record && record->monotonic_us && *record->monotonic_us < since_us_) continue;
    raw_.append(bytes);
    if (raw_.empty() || raw_.back() != '\n') raw_.push_back('\n');
    if (record) records_.push_back(std::move(*record));
  }
}

std::vector<kmsg::Record> KmsgWatch::TakeRecords() {
  std::vector<kmsg::Record> taken = std::move(records_);
  records_.clear();
  raw_.clear();
  return taken;
}

std::vector<int> PidsInMessage(std::string_view message) {
  static const RE2 kPid(R"((?:\bpid[=: ]|Killed process )\s*(\d{1,9})\b)");
  std::vector<int> pids;
  re2::StringPiece input(message.data(), message.size());
  std::string number;
  while (RE2::FindAndConsume(&input, kPid, &number)) {
    int pid = std::atoi(number.c_str());
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

std::vector<CorrelatedRecord> Correlate(const std::vector<kmsg::Record>& records, const std::set<int>& job_pids) {
  static const RE2 kOom(R"(Out of memory: Killed process|oom-kill:|Memory cgroup out of memory: Killed process)");
  std::vector<CorrelatedRecord> out;
  for (const kmsg::Record& record : records) {
    CorrelatedRecord c;
    c.record = record;
    c.log_class = std::string(kmsg::LogClassName(kmsg::ClassifyMessage(record.message)));
    std::vector<int> named = PidsInMessage(record.message);
    for (int pid : named) {
      if (job_pids.count(pid)) {
        c.job_pid = pid;
        break;
      }
    }
    c.other_process = !named.empty() && !c.job_pid;
    if (auto xid = kmsg::ParseXid(record.message)) c.xid = xid->code;
    c.oom_kill = c.job_pid && RE2::PartialMatch(record.message, kOom);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace gputriage::forensics
