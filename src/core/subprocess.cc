#include "core/subprocess.h"

#include "core/signals.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "core/scoped_fd.h"
#include "core/trust.h"

extern char** environ;

namespace gputriage::core {

namespace {

using Clock = std::chrono::steady_clock;

// After SIGKILL, how long we wait for the child to be reaped before abandoning it. A process
// blocked uninterruptibly in a driver call cannot die until the call returns.
constexpr auto kKillGrace = std::chrono::milliseconds(300);

bool MakePipe(ScopedFd& read_end, ScopedFd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return true;
}

std::vector<std::string> BuildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry = *e;
    std::string_view name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const std::string& x : extra) {
      if (std::string_view(x).substr(0, x.find('=')) == name) overridden = true;
    }
    if (!overridden) env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Reads what is available on `fd` into `sink` (bounded). Returns false at EOF or error.
bool DrainInto(int fd, std::string& sink, size_t max_bytes, bool keep_tail, size_t* dropped) {
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  sink.append(buf, static_cast<size_t>(n));
  if (sink.size() > max_bytes) {
    size_t excess = sink.size() - max_bytes;
    if (dropped != nullptr) *dropped += excess;
    if (keep_tail) {
      sink.erase(0, excess);
    } else {
      sink.resize(max_bytes);
    }
  }
  return true;
}

// The child's end of the pipes: stdin from `in_r` (or /dev/null), stdout and stderr into the
// write ends. Own process group (a timeout kills the helper and anything it started), SIGPIPE at
// its default, no blocked signals. Returns the pid, or the error of posix_spawn.
Result<pid_t> SpawnInGroup(const std::vector<std::string>& argv, const RunOptions& options, const ScopedFd& in_r,
                           const ScopedFd& out_w, const ScopedFd& err_w) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.stdin_data) {
    posix_spawn_file_actions_adddup2(&actions, in_r.get(), 0);
  } else {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), 2);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t default_signals;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  sigset_t no_mask;
  sigemptyset(&no_mask);
  posix_spawnattr_setsigmask(&attr, &no_mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<std::string> args = argv;
  if (::geteuid() == 0) {
    // As root, only a program that root or no one else could have put there (core/trust.h): the
    // path is resolved here, checked, and started as it was checked.
    auto program = TrustedProgram(argv[0]);
    if (!program.ok()) {
      posix_spawn_file_actions_destroy(&actions);
      posix_spawnattr_destroy(&attr);
      if (program.error().code == ErrorCode::kNotFound)  // as posix_spawn would have said
        return MakeErrorCode(ErrorCode::kNotFound, "{}: cannot start: {}", argv[0], std::strerror(ENOENT));
      return MakeError("{}: not started: {}", argv[0], program.error().message);
    }
    args[0] = *program;
  }
  std::vector<std::string> env = BuildEnvironment(options.extra_env);
  std::vector<char*> c_args = CStrings(args);
  std::vector<char*> c_env = CStrings(env);
  pid_t pid = 0;
  int rc = args[0].find('/') == std::string::npos
               ? posix_spawnp(&pid, args[0].c_str(), &actions, &attr, c_args.data(), c_env.data())
               : posix_spawn(&pid, args[0].c_str(), &actions, &attr, c_args.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return MakeError("{}: cannot start: {}", argv[0], std::strerror(rc));
  return pid;
}

// Reads stdout (head kept) and stderr (tail kept) until both close or `deadline` passes; sets
// `timed_out` in the latter case.
void PumpOutput(const ScopedFd& out_r, const ScopedFd& err_r, const RunOptions& options, Clock::time_point deadline,
                ProcessOutcome& outcome) {
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    auto now = Clock::now();
    if (now >= deadline) {
      outcome.timed_out = true;
      return;
    }
    int wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    pollfd fds[2] = {{out_open ? out_r.get() : -1, POLLIN, 0}, {err_open ? err_r.get() : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      out_open =
          DrainInto(out_r.get(), outcome.stdout_data, options.max_stdout_bytes, false, &outcome.stdout_dropped_bytes);
    }
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      err_open = DrainInto(err_r.get(), outcome.stderr_tail, options.max_stderr_bytes, true, nullptr);
    }
  }
}

// Waits for `pid` until `deadline` (its pipes are closed: it is exiting); past the deadline, or
// when the output already timed out, kills its process group and waits kKillGrace more. Fills
// exit_code / term_signal, or `abandoned` when even SIGKILL did not end it.
void Reap(pid_t pid, Clock::time_point deadline, ProcessOutcome& outcome) {
  int status = 0;
  if (!outcome.timed_out) {
    while (true) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (w < 0 && errno != EINTR) break;
      if (Clock::now() >= deadline) {
        outcome.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (outcome.timed_out) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    auto grace_end = Clock::now() + kKillGrace;
    outcome.abandoned = true;
    while (Clock::now() < grace_end) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        outcome.abandoned = false;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (!outcome.abandoned) outcome.term_signal = SIGKILL;
  } else if (WIFEXITED(status)) {
    outcome.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    outcome.term_signal = WTERMSIG(status);
  }
}

}  // namespace

Result<ProcessOutcome> RunWithTimeout(const std::vector<std::string>& argv, const RunOptions& options) {
  if (argv.empty()) return MakeError("RunWithTimeout: empty command line");
  ScopedFd out_r, out_w, err_r, err_w, in_r, in_w;
  if (!MakePipe(out_r, out_w) || !MakePipe(err_r, err_w) || (options.stdin_data && !MakePipe(in_r, in_w))) {
    return MakeError("{}: cannot create pipes: {}", argv[0], std::strerror(errno));
  }
  auto start = Clock::now();
  GT_ASSIGN_OR_RETURN(pid_t pid, SpawnInGroup(argv, options, in_r, out_w, err_w));
  out_w.reset();
  err_w.reset();
  in_r.reset();

  ProcessOutcome outcome;
  outcome.pid = pid;
  if (options.stdin_data) {
    // Small inputs only (probe requests); a full pipe would block, so write non-blocking.
    ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
    // A helper that exits before reading its input closes the pipe: the write then fails with
    // EPIPE, and the SIGPIPE it raises must not kill this process (it is blocked in this thread
    // for the write and taken back if it came).
    sigset_t pipe_only, old_mask;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
    ssize_t written = ::write(in_w.get(), options.stdin_data->data(), options.stdin_data->size());
    if (written < 0 && errno == EPIPE) {
      const timespec no_wait{0, 0};
      while (sigtimedwait(&pipe_only, nullptr, &no_wait) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    in_w.reset();
  }
  auto deadline = start + options.timeout;
  PumpOutput(out_r, err_r, options, deadline, outcome);
  Reap(pid, deadline, outcome);
  outcome.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  return outcome;
}

std::string DescribeOutcome(const ProcessOutcome& outcome, const RunOptions& options) {
  if (outcome.timed_out) {
    std::string s =
        fmt::format("did not answer within {:.1f} s", std::chrono::duration<double>(options.timeout).count());
    if (outcome.abandoned) s += " and could not be killed (stuck in the kernel)";
    return s;
  }
  if (outcome.term_signal) return "was killed by " + SignalName(*outcome.term_signal);
  if (outcome.exit_code) return fmt::format("exited with status {}", *outcome.exit_code);
  return "ended in an unknown state";
}

}  // namespace gputriage::core
