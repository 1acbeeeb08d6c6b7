#include "forensics/capture_running.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/file.h"
#include "core/fs.h"
#include "core/text.h"
#include "corefile/core_writer.h"
#include "forensics/capture.h"
#include "forensics/disasm.h"
#include "forensics/kmsg_watch.h"
#include "forensics/process_tree.h"
#include "forensics/run_series.h"
#include "forensics/supervisor.h"
#include "forensics/trace_effects.h"

namespace gputriage::forensics {
namespace {

constexpr size_t kMaxCmdlineBytes = 1u << 20;
constexpr uint64_t kPfKthread = 0x00200000;  // include/linux/sched.h

std::optional<int> StatusInt(int pid, std::string_view key) {
  std::optional<std::string> text = ProcStatusField(pid, key);
  if (!text) return std::nullopt;
  std::vector<std::string_view> words = core::SplitWhitespace(*text);
  if (words.empty()) return std::nullopt;
  std::optional<int64_t> value = core::ParseI64(words.front());
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

// "pid 123 (python3)", or "pid 123" when its name cannot be read.
std::string Named(int pid) {
  std::optional<ProcStat> stat = ReadProcStat(pid);
  return stat ? fmt::format("pid {} ({})", pid, stat->comm) : fmt::format("pid {}", pid);
}

std::vector<std::string> ReadArgv(int pid) {
  std::vector<std::string> argv;
  auto text = core::ReadFile(fmt::format("/proc/{}/cmdline", pid), kMaxCmdlineBytes);
  if (!text.ok()) return argv;
  for (std::string_view arg : core::Split(*text, '\0')) argv.emplace_back(arg);
  while (!argv.empty() && argv.back().empty()) argv.pop_back();
  return argv;
}

double TicksToSeconds(uint64_t ticks) {
  long hz = sysconf(_SC_CLK_TCK);
  return static_cast<double>(ticks) / static_cast<double>(hz > 0 ? hz : 100);
}

// The process `pid` names, checked before anything is attached.
core::Result<int> ResolveTarget(int pid, bool* was_thread) {
  if (pid <= 0) return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{} is not a process id", pid);
  std::optional<int> tgid = StatusInt(pid, "Tgid");
  if (!tgid) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound, "pid {}: no such process (/proc/{} does not exist)", pid,
                               pid);
  }
  *was_thread = *tgid != pid;
  if (*tgid == getpid()) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                               "pid {} is gputriage itself: a process cannot capture its own threads", pid);
  }
  if (*tgid == getppid()) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                               "{} is gputriage's parent, which is waiting for gputriage to finish: "
                               "capture it from another shell",
                               Named(*tgid));
  }
  std::optional<ProcStat> stat = ReadProcStat(*tgid);
  if (!stat) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound, "pid {}: no such process (it has just exited)", *tgid);
  }
  if (stat->state == 'Z' || stat->state == 'X') {
    return core::MakeErrorCode(core::ErrorCode::kNotFound,
                               "{} is a zombie: it has exited and waits for its parent ({}) to reap it; "
                               "it has no threads left to capture",
                               Named(*tgid), Named(stat->ppid));
  }
  if (stat->flags & kPfKthread) {
    return core::MakeErrorCode(core::ErrorCode::kUnsupported,
                               "{} is a kernel thread: it has no user-space stack to capture (its kernel stack is "
                               "in /proc/{}/stack, readable by root)",
                               Named(*tgid), *tgid);
  }
  if (std::optional<int> tracer = StatusInt(*tgid, "TracerPid"); tracer && *tracer > 0) {
    return core::MakeErrorCode(core::ErrorCode::kPermissionDenied, "cannot capture {}: {}", Named(*tgid),
                               PtraceRefusalReason(*tgid, EPERM));
  }
  return *tgid;
}

// One thread of the captured process.
struct Thread {
  bool stopped = false;
  int pending_signal = 0;  // stopped at a signal's delivery: given back at PTRACE_DETACH
};

// A process whose threads this process has seized; every seized thread is detached when it goes
// (and, should gputriage die first, the kernel detaches them as its tracer exits).
class SeizedProcess {
 public:
  explicit SeizedProcess(int tgid) : tgid_(tgid) {}
  ~SeizedProcess() { Detach(); }
  SeizedProcess(const SeizedProcess&) = delete;
  SeizedProcess& operator=(const SeizedProcess&) = delete;

  // Seizes and stops every thread, listing /proc/TGID/task again until no thread is new (a
  // stopped thread starts no others). Fails, naming the pid, when not even one thread could be
  // seized: the process is gone, or ptrace is refused.
  core::Result<void> StopAll(std::chrono::milliseconds wait);

  std::vector<int> Stopped() const {
    std::vector<int> tids;
    for (const auto& [tid, t] : threads_) {
      if (t.stopped) tids.push_back(tid);
    }
    return tids;
  }
  const std::vector<int>& not_stopped() const { return not_stopped_; }
  bool was_stopped() const { return was_stopped_; }
  size_t threads_exited() const { return exited_; }

  // Lets every thread go (PTRACE_DETACH, the signal it was stopped with, if any); returns what
  // could not be detached.
  std::vector<std::string> Detach();

 private:
  // Waits until each thread of `waiting` has stopped, exited, or `deadline` passed.
  void AwaitStops(std::vector<int> waiting, double deadline);

  int tgid_;
  std::map<int, Thread> threads_;
  std::set<int> gone_;  // exited during the capture
  std::vector<int> not_stopped_;
  bool was_stopped_ = false;
  size_t exited_ = 0;
  bool detached_ = false;
};

core::Result<void> SeizedProcess::StopAll(std::chrono::milliseconds wait) {
  for (int round = 0; round < 64; ++round) {
    std::vector<int> fresh;
    for (int tid : ThreadsOf(tgid_)) {
      if (!threads_.count(tid) && !gone_.count(tid)) fresh.push_back(tid);
    }
    if (fresh.empty()) break;
    std::vector<int> waiting;
    for (int tid : fresh) {
      // No options: no fork/clone/exec events, no system-call stops; the process runs on as before.
      if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
        int err = errno;
        if (err == ESRCH) {
          gone_.insert(tid);  // exited between the listing and now
          continue;
        }
        if (threads_.empty()) {
          return core::MakeErrorCode(core::ErrorCodeFromErrno(err), "cannot capture {}: {}", Named(tgid_),
                                     PtraceRefusalReason(tgid_, err));
        }
        not_stopped_.push_back(tid);
        gone_.insert(tid);
        continue;
      }
      threads_[tid];
      if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) == 0) waiting.push_back(tid);
    }
    AwaitStops(std::move(waiting), MonotonicSeconds() + static_cast<double>(wait.count()) / 1000.0);
  }
  if (threads_.empty()) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound,
                               "pid {}: no such process (it exited before it could be "
                               "captured)",
                               tgid_);
  }
  return {};
}

void SeizedProcess::AwaitStops(std::vector<int> waiting, double deadline) {
  while (!waiting.empty()) {
    for (auto it = waiting.begin(); it != waiting.end();) {
      int status = 0;
      pid_t got = waitpid(*it, &status, WNOHANG | __WALL);
      if (got == 0) {
        ++it;
        continue;
      }
      Thread& thread = threads_[*it];
      if (got > 0 && WIFSTOPPED(status)) {
        thread.stopped = true;
        const int sig = WSTOPSIG(status);
        if ((status >> 16) == PTRACE_EVENT_STOP) {
          // A group-stop reported to the tracer: the process was stopped (SIGSTOP) already.
          if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) was_stopped_ = true;
        } else if ((status >> 16) == 0) {
          thread.pending_signal = sig;  // a signal arrived first: it is delivered at detach
        }
      } else {
        // Exited (or reaped by someone else): nothing left to stop or to let go.
        threads_.erase(*it);
        gone_.insert(*it);
        ++exited_;
      }
      it = waiting.erase(it);
    }
    if (waiting.empty() || MonotonicSeconds() > deadline) break;
    usleep(1000);
  }
  for (int tid : waiting) not_stopped_.push_back(tid);
}

std::vector<std::string> SeizedProcess::Detach() {
  std::vector<std::string> problems;
  if (detached_) return problems;
  detached_ = true;
  for (auto& [tid, thread] : threads_) {
    if (!thread.stopped) {
      // Interrupted but not stopped yet (blocked in the kernel): it may have stopped since.
      int status = 0;
      pid_t got = waitpid(tid, &status, WNOHANG | __WALL);
      if (got > 0 && WIFSTOPPED(status)) {
        thread.stopped = true;
        if ((status >> 16) == 0) thread.pending_signal = WSTOPSIG(status);
      }
    }
    if (ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<intptr_t>(thread.pending_signal))) ==
        0) {
      continue;
    }
    if (errno == ESRCH && !thread.stopped && IsLive(tid)) {
      problems.push_back(
          fmt::format("thread {} of pid {} had not stopped and could not be detached yet: it is "
                      "released when gputriage exits",
                      tid, tgid_));
    } else if (errno != ESRCH) {
      problems.push_back(fmt::format("thread {} of pid {}: PTRACE_DETACH: {}", tid, tgid_, std::strerror(errno)));
    }
  }
  return problems;
}

// What one process's capture took, for the manifest.
struct Taken {
  size_t stopped = 0, not_stopped = 0;
  double stopped_ms = 0;
  bool exited = false, was_stopped = false;
};

// Stops `tgid`, takes its report (and the core when `core_path` is set), and lets it go.
core::Result<core::ProcessReport> CaptureOne(int tgid, const CaptureRunningRequest& request,
                                             const std::set<std::string>& cpu_flags,
                                             const std::optional<std::string>& core_path, Taken& taken,
                                             SuperviseOutcome& outcome, std::vector<std::string>& detach_problems) {
  const double begin = MonotonicSeconds();
  SeizedProcess seized(tgid);
  GT_RETURN_IF_ERROR(seized.StopAll(request.stop_wait));
  LiveCaptureRequest live;
  live.tgid = tgid;
  live.stopped_tids = seized.Stopped();
  live.crashed_tid = std::find(live.stopped_tids.begin(), live.stopped_tids.end(), tgid) != live.stopped_tids.end()
                         ? tgid
                         : (live.stopped_tids.empty() ? tgid : live.stopped_tids.front());
  live.cpu_flags = cpu_flags;
  core::ProcessReport report = CaptureLive(live);
  for (int tid : seized.not_stopped()) {
    report.not_collected.push_back({fmt::format("thread {} of process {}", tid, tgid),
                                    fmt::format("did not stop within {} ms (blocked in the kernel, e.g. in a GPU "
                                                "driver call)",
                                                request.stop_wait.count())});
  }
  if (core_path && !live.stopped_tids.empty()) {
    corefile::CoreWriteOptions core_options;
    core_options.size_cap_bytes = request.core_cap_bytes;
    siginfo_t none{};  // no signal: the core of a live process, as gdb's gcore writes one
    // The leader first: its NT_PRSTATUS is the one tools show as the current thread.
    std::vector<int> tids = live.stopped_tids;
    auto leader = std::find(tids.begin(), tids.end(), live.crashed_tid);
    if (leader != tids.end()) std::rotate(tids.begin(), leader, leader + 1);
    auto written = corefile::WriteCore(tgid, tids, none, *core_path, core_options);
    if (written.ok()) {
      outcome.core_file = *core_path;
      outcome.core_note = fmt::format("{} bytes, {} segments ({} not written: cap or unreadable)",
                                      written->bytes_written, written->segments, written->segments_truncated);
    } else {
      outcome.core_note = written.error().message;
    }
  }
  std::vector<std::string> problems = seized.Detach();
  detach_problems.insert(detach_problems.end(), problems.begin(), problems.end());
  taken.stopped += live.stopped_tids.size();
  taken.not_stopped += seized.not_stopped().size();
  taken.stopped_ms = std::max(taken.stopped_ms, (MonotonicSeconds() - begin) * 1000.0);
  taken.was_stopped = taken.was_stopped || seized.was_stopped();
  if (!IsLive(tgid)) taken.exited = true;
  return report;
}

// The kernel log since the process started (what the ring buffer still holds).
void ReadKernelLog(const CaptureRunningRequest& request, std::optional<uint64_t> start_ticks,
                   SuperviseOutcome& outcome) {
  if (request.kmsg_path.empty()) {
    outcome.not_collected.push_back({"kernel log during the run", "not asked for"});
    return;
  }
  KmsgWatch kmsg;
  uint64_t since_us = start_ticks ? static_cast<uint64_t>(TicksToSeconds(*start_ticks) * 1e6) : 0;
  if (auto opened = kmsg.OpenSince(request.kmsg_path, since_us); !opened.ok()) {
    outcome.not_collected.push_back({"kernel log during the run", opened.error().message});
    return;
  }
  kmsg.Drain();
  outcome.kmsg = kmsg.records();
  outcome.kmsg_raw = kmsg.raw();
  outcome.kmsg_lost = kmsg.lost();
}

// The processes to capture: `tgid`, then (with --tree) its descendants, parents before children.
std::vector<int> Targets(int tgid, const CaptureRunningRequest& request) {
  std::vector<int> pids{tgid};
  if (!request.tree) return pids;
  std::vector<int> below = LiveDescendants(tgid);
  std::sort(below.begin(), below.end());
  for (int pid : below) {
    if (pid != getpid() && pid != getppid()) pids.push_back(pid);
  }
  return pids;
}

// Writes the bundle and indexes it.
void WriteCaptureBundle(const CaptureRunningRequest& request, const std::vector<std::string>& argv, double captured_at,
                        CaptureRunningOutcome& result) {
  BundleInput input;
  input.parent_dir = request.bundle_dir;
  input.argv = argv;
  input.tool_version = request.tool_version;
  input.capture = result.capture;
  input.named_at_epoch_s = captured_at;
  if (!request.take_snapshot) {
    input.snapshot_missing_reason = "--no-snapshot";
  } else if (core::Result<core::Snapshot> snapshot = request.take_snapshot(); snapshot.ok()) {
    input.snapshot = std::move(*snapshot);
  } else {
    input.snapshot_missing_reason = snapshot.error().message;
  }
  auto written = WriteBundle(result.run, input);
  if (!written.ok()) {
    result.bundle_error = written.error().message;
    return;
  }
  result.bundle = written->path;
  if (request.index_bundle) {
    auto indexed = request.index_bundle(BundleRecordOf(result.run, result.bundle, argv));
    if (!indexed.ok()) result.index_error = indexed.error().message;
  }
}

}  // namespace

std::string PtraceRefusalReason(int pid, int err) {
  std::string why = fmt::format("PTRACE_SEIZE: {}", std::strerror(err));
  if (err == ESRCH) return why + " (it has exited)";
  if (err != EPERM && err != EACCES) return why;
  if (std::optional<int> tracer = StatusInt(pid, "TracerPid"); tracer && *tracer > 0) {
    return fmt::format(
        "it is already traced by {} (a debugger, strace, or another gputriage): a process has one "
        "tracer at a time; detach that one first",
        Named(*tracer));
  }
  std::vector<std::string> reasons;
  const bool capable = TracerHasCapSysPtrace();
  std::optional<int> uid = StatusInt(pid, "Uid");
  if (!capable && uid && static_cast<uid_t>(*uid) != geteuid()) {
    reasons.push_back(
        fmt::format("it runs as uid {} and gputriage as uid {}, without CAP_SYS_PTRACE: run as "
                    "that user or as root",
                    *uid, geteuid()));
  }
  auto scope = core::ReadFile("/proc/sys/kernel/yama/ptrace_scope", 64);
  if (scope.ok()) {
    std::string value(core::Trim(*scope));
    if (value == "1" && !capable) {
      reasons.push_back(
          "kernel.yama.ptrace_scope is 1: only a process's ancestors may trace it without CAP_SYS_PTRACE "
          "(run as root, or sysctl kernel.yama.ptrace_scope=0)");
    } else if (value == "2" && !capable) {
      reasons.push_back("kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may trace (run as root)");
    } else if (value == "3") {
      reasons.push_back("kernel.yama.ptrace_scope is 3: ptrace is disabled on this machine until reboot");
    }
  }
  if (reasons.empty()) {
    reasons.push_back(
        "the kernel does not say why; the usual causes: a set-user-ID or non-dumpable process (PR_SET_DUMPABLE 0) "
        "and no CAP_SYS_PTRACE, a seccomp profile or LSM (a container's default profile, AppArmor, SELinux) that "
        "forbids ptrace, or a process of another user namespace");
  }
  return why + ": " + fmt::format("{}", fmt::join(reasons, "; "));
}

core::Result<CaptureRunningOutcome> CaptureRunning(const CaptureRunningRequest& request) {
  CaptureRunningOutcome result;
  GT_ASSIGN_OR_RETURN(result.pid, ResolveTarget(request.pid, &result.pid_was_thread));
  const int tgid = result.pid;
  const double captured_at = core::NowEpochSeconds();
  const double begin = MonotonicSeconds();
  std::optional<uint64_t> start_ticks = ProcessStartTime(tgid);
  std::vector<std::string> argv = ReadArgv(tgid);
  if (argv.empty()) argv.push_back(ReadProcStat(tgid).value_or(ProcStat{.comm = "process"}).comm);

  SuperviseOutcome outcome;
  outcome.captured_running = true;
  outcome.traced = true;
  outcome.root_pid = tgid;
  if (request.core) {
    if (auto made = core::MakeDirectories(request.bundle_dir, 0700); made.ok()) {
      (void)RemoveStalePartials(request.bundle_dir);
    } else {
      outcome.core_note =
          fmt::format("{}: cannot create the bundle directory ({})", request.bundle_dir, made.error().message);
    }
  }
  const std::set<std::string> cpu_flags = HostCpuFlags();
  Taken taken;
  for (int pid : Targets(tgid, request)) {
    if (outcome.hang_dumps.size() >= request.max_processes) {
      outcome.not_collected.push_back(
          {fmt::format("process {}", pid),
           fmt::format("over the limit of {} processes per capture", request.max_processes)});
      continue;
    }
    const bool main = pid == tgid;
    std::optional<std::string> core_path;
    if (main && request.core && !outcome.core_note) core_path = PartialCorePath(request.bundle_dir);
    auto report = CaptureOne(pid, request, cpu_flags, core_path, taken, outcome, result.detach_problems);
    if (!report.ok()) {
      if (main) return report.error();  // nothing was stopped; nothing is written
      outcome.not_collected.push_back({fmt::format("process {}", pid), report.error().message});
      continue;
    }
    if (main) outcome.first_capture_ms = (MonotonicSeconds() - begin) * 1000.0;
    outcome.job_pids.insert(pid);
    for (const core::ThreadState& t : report->threads) outcome.job_pids.insert(t.tid);
    result.capture.pids.push_back(pid);
    outcome.hang_dumps.push_back(std::move(*report));
  }
  outcome.first_crash_monotonic_s = begin;
  if (start_ticks) {
    // Wall-clock start: now minus how long it has run (CLOCK_BOOTTIME, the clock of starttime).
    timespec boot{};
    clock_gettime(CLOCK_BOOTTIME, &boot);
    double uptime_s = static_cast<double>(boot.tv_sec) + static_cast<double>(boot.tv_nsec) / 1e9;
    double ran_s = std::max(0.0, uptime_s - TicksToSeconds(*start_ticks));
    outcome.started_at_epoch_s = captured_at - ran_s;
    outcome.duration_s = ran_s;
  } else {
    outcome.started_at_epoch_s = captured_at;
  }
  ReadKernelLog(request, start_ticks, outcome);
  if (taken.exited) {
    outcome.not_collected.push_back(
        {"the rest of the capture",
         fmt::format("pid {} exited during the capture; the bundle has what was taken", tgid)});
  }

  result.capture.method = "ptrace-seize";
  result.capture.pid = request.pid;
  result.capture.threads_stopped = taken.stopped;
  result.capture.threads_not_stopped = taken.not_stopped;
  result.capture.stopped_ms = taken.stopped_ms;
  result.capture.exited_during_capture = taken.exited;
  result.capture.was_stopped = taken.was_stopped;
  result.capture.detached = result.detach_problems.empty();
  result.run = Assess(std::move(outcome));
  WriteCaptureBundle(request, argv, captured_at, result);
  // Taken into the bundle by now; still here when the bundle could not be written.
  if (result.run.outcome.core_file && result.bundle.empty()) ::unlink(result.run.outcome.core_file->c_str());
  return result;
}

std::string CaptureSummaryText(const CaptureRunningOutcome& outcome) {
  const core::BundleCapture& c = outcome.capture;
  std::string out = fmt::format(
      "gputriage: captured {}{}: {} thread{} stopped for {:.0f} ms, then detached{}\n", Named(outcome.pid),
      c.pids.size() > 1 ? fmt::format(" and {} descendant{}", c.pids.size() - 1, c.pids.size() == 2 ? "" : "s") : "",
      c.threads_stopped.value_or(0), c.threads_stopped.value_or(0) == 1 ? "" : "s", c.stopped_ms.value_or(0),
      c.exited_during_capture.value_or(false) ? "; it EXITED during the capture (the bundle has what was taken)"
                                              : "; it keeps running");
  if (outcome.pid_was_thread) {
    out += fmt::format("  pid {} is a thread of pid {}: the whole process was captured\n", *c.pid, outcome.pid);
  }
  if (c.was_stopped.value_or(false)) {
    out += "  the process was already stopped (SIGSTOP or a terminal's ^Z) and is left stopped\n";
  }
  const core::ProcessReport* p = outcome.run.primary();
  if (p && !p->threads.empty()) {
    for (const core::ThreadState& t : p->threads) {
      if (t.frames.empty()) continue;
      const core::Frame& top = t.frames.front();
      const core::Frame* user = FirstUserFrame(t.frames);
      out += fmt::format("  thread {}{}: {}{}\n", t.tid, t.name.empty() ? "" : " \"" + t.name + "\"",
                         top.function.empty() ? core::Hex(top.pc) : top.function,
                         user && user != &top && !user->function.empty() ? " <- " + user->function : "");
    }
  }
  size_t related = 0;
  for (const CorrelatedRecord& r : outcome.run.kernel_log) related += r.job_pid ? 1 : 0;
  if (!outcome.run.kernel_log.empty()) {
    out += fmt::format("  kernel log: {} record{} since it started, {} naming it\n", outcome.run.kernel_log.size(),
                       outcome.run.kernel_log.size() == 1 ? "" : "s", related);
  }
  for (const core::NotCollected& n : outcome.run.outcome.not_collected) {
    out += fmt::format("  not collected: {}: {}\n", n.item, n.reason);
  }
  const SuperviseOutcome& o = outcome.run.outcome;
  if (o.core_note && !o.core_file) out += fmt::format("  core: not written: {}\n", *o.core_note);
  for (const std::string& problem : outcome.detach_problems) out += fmt::format("  detach: {}\n", problem);
  if (!outcome.bundle.empty()) out += fmt::format("  bundle: {}\n", outcome.bundle);
  if (!outcome.index_error.empty()) out += fmt::format("  not indexed in the store: {}\n", outcome.index_error);
  return out;
}

}  // namespace gputriage::forensics
