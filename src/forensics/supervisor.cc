#include "forensics/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
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
#include "forensics/process_tree.h"

namespace gputriage::forensics {
using core::IsCrashSignal;
namespace {

using core::ScopedFd;

constexpr int kTraceOptions = PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;

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
  std::optional<std::string> tgid = ProcStatusField(tid, "Tgid");
  if (!tgid) return std::nullopt;
  return std::atoi(tgid->c_str());
}

// Keeps the last `limit` bytes of a stream (amortised: trims when twice the limit).
void AppendTail(std::string& tail, std::string_view bytes, size_t limit) {
  tail.append(bytes);
  if (tail.size() > 2 * limit) tail.erase(0, tail.size() - limit);
}

void FinishTail(std::string& tail, size_t limit) {
  if (tail.size() > limit) tail.erase(0, tail.size() - limit);
}

// Writes everything (waiting when `fd` is non-blocking and full); 0, or the errno that stopped it.
int WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd out{fd, POLLOUT, 0};
      poll(&out, 1, -1);
      continue;
    }
    if (n <= 0) return n < 0 ? errno : EIO;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

// True when `a` and `b` lead to the same file, pipe or terminal.
bool SameStream(int a, int b) {
  if (a == b) return true;
  struct stat sa {
  }, sb{};
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// One of the job's output streams, passed through to the supervisor's own.
struct Relay {
  ScopedFd read;  // our end of the job's pipe; closed at EOF or when the sink's reader is gone
  int sink = -1;
  bool sink_ok = true;
  char last = '\n';       // the last byte passed on
  uint64_t last_seq = 0;  // when, counted over both relays; 0: nothing passed on yet
};

struct Tracee {
  bool started = false;     // its first stop was seen (or it is the seized root)
  std::optional<int> tgid;  // cached from /proc/TID/status
};

class Supervisor {
 public:
  Supervisor(const SuperviseOptions& options, SuperviseOutcome& outcome) : options_(options), outcome_(outcome) {}

  core::Result<void> Run();

 private:
  // Blocks the signals read through signalfd, ignores SIGPIPE, becomes the child subreaper.
  core::Result<void> PrepareSignals();
  core::Result<void> Start();
  // Seizes the job's first process (before it execs) and opens the kernel log.
  void Attach(int pid);
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
  void OnSignal(const signalfd_siginfo& si);
  // Every process of the job's tree still alive: the supervisor's descendants (it is their
  // subreaper) other than those it had before the job, and the traced ones.
  std::vector<int> TreeProcesses();
  void SignalTree(int sig);
  // While stopping (timeout or a forwarded signal): SIGTERM then SIGKILL what is left of the
  // tree. True when nothing is left, or what is left did not die of SIGKILL either.
  bool TerminateStep(double now);
  void Poll(int wait_ms);
  void DetachAll();
  void Finish();
  int TgidOf(int tid);
  void ReadPipe(int stream);
  // True when every live process of the job ignores SIGPIPE (/proc/PID/status SigIgn).
  bool JobIgnoresSigpipe();

  const SuperviseOptions& options_;
  SuperviseOutcome& outcome_;
  int root_ = 0;
  bool root_done_ = false;
  std::map<int, Tracee> tracees_;
  std::deque<std::pair<int, int>> pending_;  // (tid, status) reaped during a capture
  std::set<int> captured_tgids_;
  std::set<std::string> cpu_flags_;
  Relay relays_[2];  // stdout, stderr
  uint64_t relay_seq_ = 0;
  ScopedFd signal_fd_;
  KmsgWatch kmsg_;
  OutputEffectScanner effect_scanner_;
  bool tracer_capable_ = false;  // CAP_SYS_PTRACE: set-user-ID programs keep their privilege
  sigset_t old_mask_{};
  struct sigaction old_pipe_ {};
  struct sigaction job_pipe_ {};  // the job's SIGPIPE: as we were started (or as asked)
  int old_subreaper_ = 0;
  std::set<int> preexisting_;  // the supervisor's own children from before the job
  double start_mono_ = 0;
  bool timeout_fired_ = false;
  bool stopping_ = false;  // timed out, or told to stop by a signal: the whole tree goes
  double kill_at_ = 0;     // monotonic time for SIGKILL to what is left of the tree
  double give_up_at_ = 0;  // after SIGKILL: stop waiting for processes that do not die
};

core::Result<void> Supervisor::PrepareSignals() {
  // Everything Run() restores is saved before anything here can fail.
  // Our output may go to a pipe that closes early (`| head`): the write fails with EPIPE, and
  // ReadPipe passes the broken pipe on to the job; the supervisor never dies of SIGPIPE itself.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old_pipe_);
  job_pipe_.sa_handler = options_.job_ignores_sigpipe.value_or(old_pipe_.sa_handler == SIG_IGN) ? SIG_IGN : SIG_DFL;
  // Orphans of the job (a double fork, setsid daemons, workers whose parent died) are
  // reparented to us instead of init, so a timeout or a stop signal can still reach them.
  prctl(PR_GET_CHILD_SUBREAPER, &old_subreaper_);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    outcome_.not_collected.push_back(
        {"the job's orphaned processes", fmt::format("PR_SET_CHILD_SUBREAPER: {}", std::strerror(errno))});
  }
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGQUIT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  sigprocmask(SIG_BLOCK, &mask, &old_mask_);
  signal_fd_ = ScopedFd(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_.valid()) return core::MakeError("signalfd: {}", std::strerror(errno));
  for (int pid : LiveDescendants(getpid())) preexisting_.insert(pid);
  tracer_capable_ = options_.trace && TracerHasCapSysPtrace();
  return {};
}

core::Result<void> Supervisor::Start() {
  GT_RETURN_IF_ERROR(PrepareSignals());
  GT_ASSIGN_OR_RETURN(auto out_pipe, MakePipe());
  GT_ASSIGN_OR_RETURN(auto err_pipe, MakePipe());
  GT_ASSIGN_OR_RETURN(auto sync_pipe, MakePipe());
  GT_ASSIGN_OR_RETURN(auto exec_pipe, MakePipe());

  std::vector<char*> argv;
  for (const std::string& arg : options_.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  // The job's environment, built before fork (the child may only make async-signal-safe calls).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('='));
    bool replaced =
        std::any_of(options_.env_overrides.begin(), options_.env_overrides.end(), [&](const std::string& o) {
          return o.size() > name.size() && o.compare(0, name.size(), name) == 0 && o[name.size()] == '=';
        });
    if (!replaced) env_strings.emplace_back(entry);
  }
  for (const std::string& o : options_.env_overrides) env_strings.push_back(o);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  outcome_.started_at_epoch_s = static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                        std::chrono::system_clock::now().time_since_epoch())
                                                        .count()) /
                                1e6;
  start_mono_ = MonotonicSeconds();
  outcome_.started_monotonic_s = start_mono_;
  pid_t pid = fork();
  if (pid < 0) return core::MakeError("fork: {}", std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls from here to exec.
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    sigaction(SIGPIPE, &job_pipe_, nullptr);
    dup2(out_pipe.second.get(), STDOUT_FILENO);
    dup2(err_pipe.second.get(), STDERR_FILENO);
    char go = 0;
    while (read(sync_pipe.first.get(), &go, 1) < 0 && errno == EINTR) {
    }
    execvpe(argv[0], argv.data(), envp.data());
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
  relays_[0].read = std::move(out_pipe.first);
  relays_[0].sink = options_.stdout_fd;
  relays_[1].read = std::move(err_pipe.first);
  relays_[1].sink = options_.stderr_fd;
  Attach(pid);
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

void Supervisor::Attach(int pid) {
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
}

int Supervisor::TgidOf(int tid) {
  Tracee& t = tracees_[tid];
  if (!t.tgid) t.tgid = ReadTgid(tid);
  return t.tgid.value_or(tid);
}

void Supervisor::ReadPipe(int stream) {
  Relay& relay = relays_[stream];
  char buffer[65536];
  ssize_t n = read(relay.read.get(), buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    relay.read.reset();
    return;
  }
  std::string_view bytes(buffer, static_cast<size_t>(n));
  (stream == 0 ? outcome_.stdout_bytes : outcome_.stderr_bytes) += bytes.size();
  AppendTail(stream == 0 ? outcome_.stdout_tail : outcome_.stderr_tail, bytes, options_.tail_bytes);
  effect_scanner_.Feed(stream, bytes);
  if (!relay.sink_ok) {
    if (std::optional<OutputLoss>& lost = stream == 0 ? outcome_.stdout_lost : outcome_.stderr_lost) {
      lost->lost_bytes += bytes.size();
    }
    return;
  }
  int err = WriteAll(relay.sink, bytes.data(), bytes.size());
  if (err == 0) {
    relay.last = bytes.back();
    relay.last_seq = ++relay_seq_;
    return;
  }
  relay.sink_ok = false;
  if (err == EPIPE) {
    // Whoever read our output is gone (`| head -1`). Without us the job's own write would fail
    // now; closing our end makes its next one fail with EPIPE (or kill it with SIGPIPE).
    (stream == 0 ? outcome_.stdout_reader_gone : outcome_.stderr_reader_gone) = true;
    relay.read.reset();
    return;
  }
  // Another error (a full disk: ENOSPC; EIO): without us the job's write would have failed with
  // it. A pipe cannot give that error, but EPIPE is an error the job sees the same way, as long
  // as it does not also raise SIGPIPE: where every process of the job ignores SIGPIPE, our end is
  // closed; otherwise the output is drained and dropped (the job is never killed by a signal the
  // disk error would not have sent). Either way the loss is reported (RunSummary, --json).
  OutputLoss loss;
  loss.error = err;
  loss.passed_on_bytes = (stream == 0 ? outcome_.stdout_bytes : outcome_.stderr_bytes) - bytes.size();
  loss.lost_bytes = bytes.size();
  loss.job_write_failed = JobIgnoresSigpipe();
  if (loss.job_write_failed) relay.read.reset();
  (stream == 0 ? outcome_.stdout_lost : outcome_.stderr_lost) = loss;
}

bool Supervisor::JobIgnoresSigpipe() {
  std::vector<int> tree = TreeProcesses();
  if (tree.empty()) return false;
  for (int pid : tree) {
    std::optional<std::string> mask = ProcStatusField(pid, "SigIgn");  // "0000000000001000", hex
    if (!mask) return false;
    unsigned long long ignored = std::strtoull(mask->c_str(), nullptr, 16);
    if ((ignored & (1ull << (SIGPIPE - 1))) == 0) return false;
  }
  return true;
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
      if (auto effect = PrivilegeLostUnderTrace(tid, tracer_capable_)) {
        bool known = false;
        for (const TraceEffect& e : outcome_.trace_effects) known = known || e.note == effect->note;
        if (!known) outcome_.trace_effects.push_back(std::move(*effect));
      }
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
  for (int t : ThreadsOf(tgid)) {
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
  outcome_.crashes.back().stopped_at_s = begin - start_mono_;
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

std::vector<int> Supervisor::TreeProcesses() {
  std::vector<int> pids = LiveDescendants(getpid(), preexisting_);
  std::set<int> seen(pids.begin(), pids.end());
  // Normally all among the descendants already. A tid that vanished without an exit event (a
  // non-leader thread that exec'd) must not count as a process that is left.
  for (auto& [tid, tracee] : tracees_) {
    int tgid = TgidOf(tid);
    if (!seen.count(tgid) && IsLive(tgid) && seen.insert(tgid).second) pids.push_back(tgid);
  }
  if (!root_done_ && !seen.count(root_) && IsLive(root_) && seen.insert(root_).second) pids.push_back(root_);
  return pids;
}

void Supervisor::SignalTree(int sig) {
  for (int pid : TreeProcesses()) kill(pid, sig);
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
      if (!request.stopped_tids.empty()) {
        outcome_.hang_dumps.push_back(CaptureLive(request));
        outcome_.hang_dumps.back().stopped_at_s = MonotonicSeconds() - start_mono_;
      }
      ResumeInterrupted(interrupted);
    }
  }
  stopping_ = true;
  SignalTree(SIGTERM);
  SignalTree(SIGCONT);  // a stopped process acts on SIGTERM only once continued
  kill_at_ = MonotonicSeconds() + static_cast<double>(options_.kill_grace.count()) / 1000.0;
}

void Supervisor::OnSignal(const signalfd_siginfo& si) {
  const int sig = static_cast<int>(si.ssi_signo);
  if (sig == SIGCHLD) return;  // Reap() runs at the top of the loop
  if (sig == SIGQUIT) {
    // A terminal's ^\ already reaches the whole foreground group, the job included.
    if (si.ssi_code != SI_KERNEL && !root_done_) kill(root_, sig);
    return;
  }
  // SIGTERM, SIGINT, SIGHUP: the job is to stop, all of it; what is left once its main process
  // has exited gets SIGTERM, then SIGKILL (TerminateStep).
  stopping_ = true;
  outcome_.forwarded_signal = sig;
  const pid_t own_group = getpgrp();
  for (int pid : TreeProcesses()) {
    // From a terminal (^C, hangup) the signal already reached the processes of our foreground
    // group; the others (setsid, setpgid) get it from us. From kill(1), every process does.
    if (si.ssi_code == SI_KERNEL && getpgid(pid) == own_group) continue;
    kill(pid, sig);
  }
}

bool Supervisor::TerminateStep(double now) {
  if (!root_done_ && (kill_at_ == 0 || now < kill_at_)) return false;
  std::vector<int> left = TreeProcesses();
  if (left.empty()) return true;
  if (kill_at_ == 0) {
    // Told to stop by a signal, and the main process has exited: its leftovers follow.
    for (int pid : left) kill(pid, SIGTERM);
    for (int pid : left) kill(pid, SIGCONT);
    kill_at_ = now + static_cast<double>(options_.kill_grace.count()) / 1000.0;
    return false;
  }
  if (now < kill_at_) return false;
  // Again on every pass: a process forked since the last one gets it too.
  for (int pid : left) kill(pid, SIGKILL);
  if (give_up_at_ == 0) give_up_at_ = now + 5.0;
  if (now < give_up_at_) return false;
  outcome_.left_running = left;  // in uninterruptible sleep (a GPU driver call) for 5 s
  return true;
}

void Supervisor::Poll(int wait_ms) {
  pollfd fds[4];
  int n = 0;
  int relay_i[2] = {-1, -1}, kmsg_i = -1;
  for (int stream = 0; stream < 2; ++stream) {
    if (relays_[stream].read.get() < 0) continue;
    relay_i[stream] = n;
    fds[n++] = {relays_[stream].read.get(), POLLIN, 0};
  }
  const int sig_i = n;
  fds[n++] = {signal_fd_.get(), POLLIN, 0};
  if (kmsg_.fd() >= 0) {
    kmsg_i = n;
    fds[n++] = {kmsg_.fd(), POLLIN, 0};
  }
  if (poll(fds, static_cast<nfds_t>(n), wait_ms) < 0) return;  // EINTR
  for (int stream = 0; stream < 2; ++stream) {
    if (relay_i[stream] >= 0 && fds[relay_i[stream]].revents) ReadPipe(stream);
  }
  if (kmsg_i >= 0 && fds[kmsg_i].revents) kmsg_.Drain();
  if (fds[sig_i].revents) {
    signalfd_siginfo si;
    while (read(signal_fd_.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) OnSignal(si);
  }
}

void Supervisor::Loop() {
  const double timeout_at =
      options_.timeout ? start_mono_ + static_cast<double>(options_.timeout->count()) / 1000.0 : 0;
  double drain_until = 0;  // after the job is over, how long to wait for the pipes' EOF
  while (true) {
    Reap();
    const double now = MonotonicSeconds();
    if (options_.timeout && !timeout_fired_ && !root_done_ && now >= timeout_at) OnTimeout();
    const bool tree_over = !stopping_ || TerminateStep(now);
    if (root_done_ && tree_over) {
      if (drain_until == 0) drain_until = now + 0.5;
      if ((relays_[0].read.get() < 0 && relays_[1].read.get() < 0) || now > drain_until) break;
    }
    double wake = 1.0;
    if (options_.timeout && !timeout_fired_) wake = std::min(wake, timeout_at - now);
    if (stopping_ && (root_done_ || kill_at_ > 0)) wake = std::min(wake, 0.05);  // watching the tree go
    if (drain_until > 0) wake = std::min(wake, drain_until - now);
    Poll(std::max(0, static_cast<int>(wake * 1000.0) + 1));
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

// Where each of our own streams stands after the job's output: mid-line or not.
void Supervisor::Finish() {
  for (int target : {STDOUT_FILENO, STDERR_FILENO}) {
    uint64_t latest = 0;
    bool mid_line = false;
    for (const Relay& relay : relays_) {
      if (relay.last_seq > latest && SameStream(relay.sink, target)) {
        latest = relay.last_seq;
        mid_line = relay.last != '\n';
      }
    }
    (target == STDOUT_FILENO ? outcome_.stdout_mid_line : outcome_.stderr_mid_line) = mid_line;
  }
  for (TraceEffect& effect : effect_scanner_.Finish()) outcome_.trace_effects.push_back(std::move(effect));
  FinishTail(outcome_.stdout_tail, options_.tail_bytes);
  FinishTail(outcome_.stderr_tail, options_.tail_bytes);
  outcome_.kmsg = kmsg_.records();
  outcome_.kmsg_raw = kmsg_.raw();
  outcome_.kmsg_lost = kmsg_.lost();
}

core::Result<void> Supervisor::Run() {
  outcome_.timeout = options_.timeout;
  auto started = Start();
  if (!started.ok()) {
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    prctl(PR_SET_CHILD_SUBREAPER, old_subreaper_);
    return started;
  }
  if (!outcome_.exec_errno) Loop();
  kmsg_.Drain();
  DetachAll();
  Reap();  // children that exited while we detached
  outcome_.duration_s = MonotonicSeconds() - start_mono_;
  Finish();
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
  prctl(PR_SET_CHILD_SUBREAPER, old_subreaper_);
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
