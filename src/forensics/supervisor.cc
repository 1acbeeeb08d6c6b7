#include "forensics/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>

#include <fmt/format.h>

#include "core/file.h"
#include "core/scoped_fd.h"
#include "core/signals.h"
#include "core/text.h"
#include "corefile/core_writer.h"
#include "forensics/capture.h"
#include "forensics/disasm.h"
#include "forensics/kmsg_watch.h"

namespace gputriage::forensics {
using core::IsCrashSignal;
namespace {

using core::ScopedFd;

constexpr int kTraceOptions = PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;
// /proc/PID/status is ~1.5 KB; /proc/cpuinfo ~1.5 KB per CPU (a 1024-CPU host: ~1.5 MB).
constexpr size_t kMaxStatusBytes = 64u << 10;
constexpr size_t kMaxCpuinfoBytes = 16u << 20;

core::Result<std::pair<ScopedFd, ScopedFd>> MakePipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return core::MakeError("pipe2: {}", std::strerror(errno));
  return std::make_pair(ScopedFd(fds[0]), ScopedFd(fds[1]));
}

// ptrace requests whose failure with ESRCH means "the tracee is gone": expected, not an error.
void ContinueIfAlive(int tid, int sig) {
  ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<intptr_t>(sig)));
}

std::optional<int> ReadTgid(int tid) {
  std::string status = core::ReadFile(fmt::format("/proc/{}/status", tid), kMaxStatusBytes).value_or("");
  for (std::string_view line : core::SplitLines(status)) {
    if (line.rfind("Tgid:", 0) == 0) return std::atoi(std::string(line.substr(5)).c_str());
  }
  return std::nullopt;
}

std::vector<int> ListThreads(int tgid) {
  std::vector<int> tids;
  DIR* dir = opendir(fmt::format("/proc/{}/task", tgid).c_str());
  if (!dir) return tids;
  while (dirent* entry = readdir(dir)) {
    int tid = std::atoi(entry->d_name);
    if (tid > 0) tids.push_back(tid);
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

std::set<std::string> HostCpuFlags() {
  // ParseCpuFlags stops at the first CPU's flags line.
  return ParseCpuFlags(core::ReadFile("/proc/cpuinfo", kMaxCpuinfoBytes).value_or(""));
}

// Keeps the last `limit` bytes of a stream (amortised: trims when twice the limit).
void AppendTail(std::string& tail, std::string_view bytes, size_t limit) {
  tail.append(bytes);
  if (tail.size() > 2 * limit) tail.erase(0, tail.size() - limit);
}

void FinishTail(std::string& tail, size_t limit) {
  if (tail.size() > limit) tail.erase(0, tail.size() - limit);
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

struct Tracee {
  bool started = false;     // its first stop was seen (or it is the seized root)
  std::optional<int> tgid;  // cached from /proc/TID/status
};

class Supervisor {
 public:
  Supervisor(const SuperviseOptions& options, SuperviseOutcome& outcome) : options_(options), outcome_(outcome) {}

  core::Result<void> Run();

 private:
  core::Result<void> Start();
  void Loop();
  void Reap();
  void Handle(int tid, int status);
  void OnExit(int tid, int status);
  void Capture(int tid, const siginfo_t& info);
  // Stops every other traced thread of `tgid` with PTRACE_INTERRUPT; returns the stopped ones
  // (`except` included). Threads that stopped for another reason are queued for Handle.
  std::vector<int> StopThreads(int tgid, int except, std::vector<int>* interrupted);
  void ResumeInterrupted(const std::vector<int>& interrupted);
  void OnTimeout();
  void KillTree(int sig);
  void DetachAll();
  int TgidOf(int tid);
  void ReadPipe(ScopedFd& pipe, int sink, bool& sink_ok, std::string& tail, uint64_t& total);

  const SuperviseOptions& options_;
  SuperviseOutcome& outcome_;
  int root_ = 0;
  bool root_done_ = false;
  std::map<int, Tracee> tracees_;
  std::deque<std::pair<int, int>> pending_;  // (tid, status) reaped during a capture
  std::set<int> captured_tgids_;
  std::set<std::string> cpu_flags_;
  ScopedFd out_read_, err_read_, signal_fd_;
  bool stdout_ok_ = true, stderr_ok_ = true;
  KmsgWatch kmsg_;
  sigset_t old_mask_{};
  struct sigaction old_pipe_ {};
  double start_mono_ = 0;
  bool timeout_fired_ = false;
  double kill_at_ = 0;  // monotonic time for the SIGKILL after a timeout's SIGTERM
};

core::Result<void> Supervisor::Start() {
  GT_ASSIGN_OR_RETURN(auto out_pipe, MakePipe());
  GT_ASSIGN_OR_RETURN(auto err_pipe, MakePipe());
  GT_ASSIGN_OR_RETURN(auto sync_pipe, MakePipe());
  GT_ASSIGN_OR_RETURN(auto exec_pipe, MakePipe());

  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGQUIT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  sigprocmask(SIG_BLOCK, &mask, &old_mask_);
  signal_fd_ = ScopedFd(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_.valid()) return core::MakeError("signalfd: {}", std::strerror(errno));
  // The job's output may go to a pipe that closes early (`| head`); the supervisor keeps
  // draining so the job is not blocked, and never dies of SIGPIPE itself.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old_pipe_);

  std::vector<char*> argv;
  for (const std::string& arg : options_.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  outcome_.started_at_epoch_s = static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                        std::chrono::system_clock::now().time_since_epoch())
                                                        .count()) /
                                1e6;
  start_mono_ = MonotonicSeconds();
  pid_t pid = fork();
  if (pid < 0) return core::MakeError("fork: {}", std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls from here to exec.
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    dup2(out_pipe.second.get(), STDOUT_FILENO);
    dup2(err_pipe.second.get(), STDERR_FILENO);
    char go = 0;
    while (read(sync_pipe.first.get(), &go, 1) < 0 && errno == EINTR) {
    }
    execvp(argv[0], argv.data());
    int err = errno;
    (void)!write(exec_pipe.second.get(), &err, sizeof err);
    _exit(127);
  }
  root_ = pid;
  outcome_.root_pid = pid;
  outcome_.job_pids.insert(pid);
  out_pipe.second.reset();
  err_pipe.second.reset();
  sync_pipe.first.reset();
  exec_pipe.second.reset();
  out_read_ = std::move(out_pipe.first);
  err_read_ = std::move(err_pipe.first);

  if (options_.trace) {
    if (ptrace(PTRACE_SEIZE, pid, nullptr, reinterpret_cast<void*>(kTraceOptions)) == 0) {
      outcome_.traced = true;
      tracees_[pid].started = true;  // seized while running: no initial stop
      tracees_[pid].tgid = pid;
    } else {
      int err = errno;
      outcome_.not_collected.push_back(
          {"signal capture (registers, stacks, disassembly, memory map)",
           fmt::format("ptrace refused: PTRACE_SEIZE of pid {}: {} (in a container: allow ptrace "
                       "in its seccomp profile or grant CAP_SYS_PTRACE; with Yama: "
                       "kernel.yama.ptrace_scope)",
                       pid, std::strerror(err))});
    }
  } else {
    outcome_.not_collected.push_back(
        {"signal capture (registers, stacks, disassembly, memory map)", "ptrace disabled (--no-trace)"});
  }
  if (!options_.kmsg_path.empty()) {
    if (auto opened = kmsg_.Open(options_.kmsg_path); !opened.ok()) {
      outcome_.not_collected.push_back({"kernel log during the run", opened.error().message});
    }
  }
  cpu_flags_ = HostCpuFlags();
  char go = 1;
  (void)!write(sync_pipe.second.get(), &go, 1);
  sync_pipe.second.reset();

  int err = 0;
  ssize_t n;
  while ((n = read(exec_pipe.first.get(), &err, sizeof err)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof err)) {
    outcome_.exec_errno = err;
    int status = 0;
    while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
    }
    root_done_ = true;
  }
  return {};
}

int Supervisor::TgidOf(int tid) {
  Tracee& t = tracees_[tid];
  if (!t.tgid) t.tgid = ReadTgid(tid);
  return t.tgid.value_or(tid);
}

void Supervisor::ReadPipe(ScopedFd& pipe, int sink, bool& sink_ok, std::string& tail, uint64_t& total) {
  char buffer[65536];
  ssize_t n = read(pipe.get(), buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    pipe.reset();
    return;
  }
  total += static_cast<uint64_t>(n);
  AppendTail(tail, std::string_view(buffer, static_cast<size_t>(n)), options_.tail_bytes);
  if (sink_ok) sink_ok = WriteAll(sink, buffer, static_cast<size_t>(n));
}

void Supervisor::Reap() {
  while (true) {
    if (!pending_.empty()) {
      auto [tid, status] = pending_.front();
      pending_.pop_front();
      Handle(tid, status);
      continue;
    }
    int status = 0;
    pid_t tid = waitpid(-1, &status, WNOHANG | __WALL);
    if (tid <= 0) return;
    Handle(tid, status);
  }
}

void Supervisor::OnExit(int tid, int status) {
  tracees_.erase(tid);
  if (tid != root_) return;
  root_done_ = true;
  if (WIFEXITED(status)) outcome_.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome_.term_signal = WTERMSIG(status);
}

void Supervisor::Handle(int tid, int status) {
  if (WIFEXITED(status) || WIFSIGNALED(status)) {
    OnExit(tid, status);
    return;
  }
  if (!WIFSTOPPED(status)) return;
  outcome_.job_pids.insert(tid);
  Tracee& tracee = tracees_[tid];
  const int sig = WSTOPSIG(status);
  const int event = status >> 16;
  if (!tracee.started) {
    // A new child's first stop (PTRACE_EVENT_STOP under SEIZE); it may come before its
    // parent's fork event.
    tracee.started = true;
    if (event == PTRACE_EVENT_STOP) {
      ContinueIfAlive(tid, 0);
      return;
    }
  }
  switch (event) {
    case PTRACE_EVENT_FORK:
    case PTRACE_EVENT_VFORK:
    case PTRACE_EVENT_CLONE: {
      unsigned long child = 0;
      if (ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child) == 0 && child > 0) {
        outcome_.job_pids.insert(static_cast<int>(child));
        tracees_.try_emplace(static_cast<int>(child));
        if (event == PTRACE_EVENT_CLONE) tracees_[static_cast<int>(child)].tgid = TgidOf(tid);
      }
      ContinueIfAlive(tid, 0);
      return;
    }
    case PTRACE_EVENT_EXEC:
      tracee.tgid.reset();
      ContinueIfAlive(tid, 0);
      return;
    case PTRACE_EVENT_STOP:
      if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
        // A group-stop: leave the job stopped as the user asked, but keep being notified.
        ptrace(PTRACE_LISTEN, tid, nullptr, nullptr);
      } else {
        ContinueIfAlive(tid, 0);
      }
      return;
    case 0:
      break;
    default:
      ContinueIfAlive(tid, 0);
      return;
  }
  // A signal-delivery-stop: the signal is about to be delivered.
  if (IsCrashSignal(sig)) {
    siginfo_t info{};
    int tgid = TgidOf(tid);
    if (ptrace(PTRACE_GETSIGINFO, tid, nullptr, &info) == 0 && !captured_tgids_.count(tgid)) {
      if (outcome_.crashes.size() < options_.max_captures) {
        Capture(tid, info);
      } else {
        ++outcome_.crashes_not_captured;
      }
      captured_tgids_.insert(tgid);
    }
  }
  ContinueIfAlive(tid, sig);
}

std::vector<int> Supervisor::StopThreads(int tgid, int except, std::vector<int>* interrupted) {
  std::vector<int> stopped;
  if (except > 0) stopped.push_back(except);
  std::vector<int> waiting;
  for (int t : ListThreads(tgid)) {
    if (t == except || !tracees_.count(t)) continue;
    if (ptrace(PTRACE_INTERRUPT, t, nullptr, nullptr) == 0) waiting.push_back(t);
  }
  // A thread blocked inside the kernel (a GPU driver call) stops only when it returns to user
  // space; give them a second, then go on without them.
  const double deadline = MonotonicSeconds() + 1.0;
  while (!waiting.empty()) {
    for (auto it = waiting.begin(); it != waiting.end();) {
      int status = 0;
      pid_t got = waitpid(*it, &status, WNOHANG | __WALL);
      if (got == 0) {
        ++it;
        continue;
      }
      if (got > 0 && WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP && tracees_[*it].started) {
        stopped.push_back(*it);
        interrupted->push_back(*it);
      } else if (got > 0) {
        if (WIFSTOPPED(status)) stopped.push_back(*it);
        pending_.emplace_back(*it, status);  // handled (and resumed) after the capture
      }
      it = waiting.erase(it);
    }
    if (waiting.empty() || MonotonicSeconds() > deadline) break;
    usleep(1000);
  }
  for (int t : waiting) {
    outcome_.not_collected.push_back({fmt::format("thread {} of process {}", t, tgid),
                                      "did not stop within 1 s (blocked in the kernel, e.g. in a GPU driver call)"});
  }
  return stopped;
}

void Supervisor::ResumeInterrupted(const std::vector<int>& interrupted) {
  for (int t : interrupted) ContinueIfAlive(t, 0);
}

void Supervisor::Capture(int tid, const siginfo_t& info) {
  const double begin = MonotonicSeconds();
  const int tgid = TgidOf(tid);
  std::vector<int> interrupted;
  LiveCaptureRequest request;
  request.tgid = tgid;
  request.crashed_tid = tid;
  request.info = info;
  request.stopped_tids = StopThreads(tgid, tid, &interrupted);
  request.cpu_flags = cpu_flags_;
  outcome_.crashes.push_back(CaptureLive(request));
  if (outcome_.crashes.size() == 1) {
    outcome_.first_crash_monotonic_s = begin;
    if (options_.core_path) {
      corefile::CoreWriteOptions core_options;
      core_options.size_cap_bytes = options_.core_size_cap_bytes;
      auto written = corefile::WriteCore(tgid, request.stopped_tids, info, *options_.core_path, core_options);
      if (written.ok()) {
        outcome_.core_file = *options_.core_path;
        outcome_.core_note = fmt::format("{} bytes, {} segments ({} not written: cap or unreadable)",
                                         written->bytes_written, written->segments, written->segments_truncated);
      } else {
        outcome_.core_note = written.error().message;
      }
    }
    outcome_.first_capture_ms = (MonotonicSeconds() - begin) * 1000.0;
  }
  ResumeInterrupted(interrupted);
}

void Supervisor::KillTree(int sig) {
  std::set<int> tgids;
  for (auto& [tid, tracee] : tracees_) tgids.insert(TgidOf(tid));
  if (tgids.empty() && !root_done_) tgids.insert(root_);
  for (int tgid : tgids) kill(tgid, sig);
}

void Supervisor::OnTimeout() {
  timeout_fired_ = true;
  outcome_.timed_out = true;
  if (outcome_.traced) {
    std::set<int> tgids;
    for (auto& [tid, tracee] : tracees_) tgids.insert(TgidOf(tid));
    size_t dumped = 0;
    for (int tgid : tgids) {
      if (dumped++ >= 8) break;  // a pool of 64 workers shows its pattern in the first few
      std::vector<int> interrupted;
      LiveCaptureRequest request;
      request.tgid = tgid;
      request.crashed_tid = tgid;
      request.stopped_tids = StopThreads(tgid, 0, &interrupted);
      request.cpu_flags = cpu_flags_;
      if (!request.stopped_tids.empty()) outcome_.hang_dumps.push_back(CaptureLive(request));
      ResumeInterrupted(interrupted);
    }
  }
  KillTree(SIGTERM);
  kill_at_ = MonotonicSeconds() + static_cast<double>(options_.kill_grace.count()) / 1000.0;
}

void Supervisor::Loop() {
  const double timeout_at =
      options_.timeout ? start_mono_ + static_cast<double>(options_.timeout->count()) / 1000.0 : 0;
  double drain_until = 0;  // after the root exits, how long to wait for the pipes' EOF
  while (true) {
    Reap();
    const double now = MonotonicSeconds();
    if (root_done_) {
      if (drain_until == 0) drain_until = now + 0.5;
      if ((out_read_.get() < 0 && err_read_.get() < 0) || now > drain_until) break;
    }
    if (options_.timeout && !timeout_fired_ && !root_done_ && now >= timeout_at) OnTimeout();
    if (timeout_fired_ && kill_at_ > 0 && now >= kill_at_ && !root_done_) {
      KillTree(SIGKILL);
      kill_at_ = 0;
    }
    double wake = 1.0;
    if (options_.timeout && !timeout_fired_) wake = std::min(wake, timeout_at - now);
    if (kill_at_ > 0) wake = std::min(wake, kill_at_ - now);
    if (drain_until > 0) wake = std::min(wake, drain_until - now);
    int wait_ms = std::max(0, static_cast<int>(wake * 1000.0) + 1);

    pollfd fds[4];
    int n = 0;
    int out_i = -1, err_i = -1, sig_i = -1, kmsg_i = -1;
    if (out_read_.get() >= 0) {
      out_i = n;
      fds[n++] = {out_read_.get(), POLLIN, 0};
    }
    if (err_read_.get() >= 0) {
      err_i = n;
      fds[n++] = {err_read_.get(), POLLIN, 0};
    }
    sig_i = n;
    fds[n++] = {signal_fd_.get(), POLLIN, 0};
    if (kmsg_.fd() >= 0) {
      kmsg_i = n;
      fds[n++] = {kmsg_.fd(), POLLIN, 0};
    }
    int ready = poll(fds, static_cast<nfds_t>(n), wait_ms);
    if (ready < 0) continue;  // EINTR
    if (out_i >= 0 && fds[out_i].revents) {
      ReadPipe(out_read_, options_.stdout_fd, stdout_ok_, outcome_.stdout_tail, outcome_.stdout_bytes);
    }
    if (err_i >= 0 && fds[err_i].revents) {
      ReadPipe(err_read_, options_.stderr_fd, stderr_ok_, outcome_.stderr_tail, outcome_.stderr_bytes);
    }
    if (kmsg_i >= 0 && fds[kmsg_i].revents) kmsg_.Drain();
    if (fds[sig_i].revents) {
      signalfd_siginfo si;
      while (read(signal_fd_.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGCHLD) continue;  // Reap() runs at the top of the loop
        // A terminal's ^C/^\ already reaches the whole foreground group, the job included
        // (SI_KERNEL); a signal sent to the supervisor alone is passed on to the job.
        if (si.ssi_code != SI_KERNEL && !root_done_) kill(root_, sig);
      }
    }
  }
}

void Supervisor::DetachAll() {
  // Processes of the tree that outlive the job's main process continue untraced.
  for (auto& [tid, tracee] : tracees_) {
    if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) continue;
    int status = 0;
    for (int i = 0; i < 200; ++i) {
      pid_t got = waitpid(tid, &status, WNOHANG | __WALL);
      if (got != 0) break;
      usleep(1000);
    }
    ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
  }
  tracees_.clear();
}

core::Result<void> Supervisor::Run() {
  auto started = Start();
  if (!started.ok()) {
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    return started;
  }
  if (!outcome_.exec_errno) Loop();
  kmsg_.Drain();
  DetachAll();
  outcome_.duration_s = MonotonicSeconds() - start_mono_;
  FinishTail(outcome_.stdout_tail, options_.tail_bytes);
  FinishTail(outcome_.stderr_tail, options_.tail_bytes);
  outcome_.kmsg = kmsg_.records();
  outcome_.kmsg_raw = kmsg_.raw();
  outcome_.kmsg_lost = kmsg_.lost();
  signal_fd_.reset();
  // Drop SIGCHLDs of our own job that are still pending before unblocking.
  sigset_t pending;
  sigpending(&pending);
  if (sigismember(&pending, SIGCHLD)) {
    struct sigaction ign {
    }, old{};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGCHLD, &ign, &old);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    sigaction(SIGCHLD, &old, nullptr);
  } else {
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  sigaction(SIGPIPE, &old_pipe_, nullptr);
  return {};
}

}  // namespace

double MonotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int SuperviseOutcome::ShellStatus() const {
  if (exec_errno) return *exec_errno == ENOENT || *exec_errno == ENOTDIR ? 127 : 126;
  if (exit_code) return *exit_code;
  if (term_signal) return 128 + *term_signal;
  return 1;
}

core::Result<SuperviseOutcome> Supervise(const SuperviseOptions& options) {
  if (options.argv.empty()) return core::MakeError("no command to run");
  SuperviseOutcome outcome;
  Supervisor supervisor(options, outcome);
  auto ran = supervisor.Run();
  if (!ran.ok()) return ran.error();
  return outcome;
}

}  // namespace gputriage::forensics
