#include "collect/telemetry.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "collect/vendors/telemetry.h"
#include "core/text.h"

extern char** environ;

namespace gputriage::collect {

namespace {

// Samples are ~60 bytes per GPU per period: 16 MiB is hours of 8 GPUs at 2 Hz. Past it the oldest
// half is dropped: the minutes before a failure matter most.
constexpr size_t kMaxBuffered = 16u << 20;

class HelperSession : public core::TelemetrySession {
 public:
  HelperSession(const std::vector<std::string>& helper_command, double period_s) : period_s_(period_s) {
    if (helper_command.empty()) {
      failure_ = "no sampler program";
      return;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      failure_ = fmt::format("cannot create a pipe: {}", std::strerror(errno));
      return;
    }
    std::vector<std::string> args = helper_command;
    args.insert(args.end(), {"telemetry", "--period", fmt::format("{:g}", period_s)});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Its own process group: a Ctrl-C meant for the job does not end the sampler first.
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(fds[1]);
    if (rc != 0) {
      close(fds[0]);
      failure_ = fmt::format("cannot start {}: {}", args[0], std::strerror(rc));
      return;
    }
    pid_ = pid;
    fd_ = fds[0];
    // The reader thread blocks every signal: `run` takes SIGTERM/SIGINT/SIGCHLD through a signalfd
    // in its main thread, and a process-directed signal goes to any thread that does not block it
    // (it killed gputriage instead of ending the series when the reader had it unblocked).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    reader_ = std::thread([this] { ReadLoop(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  ~HelperSession() override {
    if (pid_ > 0 || reader_.joinable()) Stop(0);
  }

  core::TelemetryRecording Stop(double origin_monotonic_s) override {
    if (!failure_.empty()) return {.samples = {}, .note = failure_, .period_s = period_s_, .source = ""};
    std::string abandoned;
    if (pid_ > 0) {
      // A job shorter than the sampler's start (a slow machine, a sanitizer build) would stop it
      // before it said anything, not even why it has no GPU: it gets up to 1 s for its first line.
      auto first_line = std::chrono::steady_clock::now() + std::chrono::milliseconds(1000);
      while (!output_seen_ && !reader_done_ && std::chrono::steady_clock::now() < first_line) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      kill(pid_, SIGTERM);
      if (!Reaped(std::chrono::milliseconds(1000))) {
        kill(pid_, SIGKILL);
        if (!Reaped(std::chrono::milliseconds(1000))) {
          abandoned =
              fmt::format("the sampler (pid {}) did not end within 2 s, stuck in the driver; it was abandoned", pid_);
        }
      }
      pid_ = -1;
    }
    stop_ = true;
    if (reader_.joinable()) reader_.join();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    core::TelemetryRecording recording = ParseTelemetryStream(buffer_, origin_monotonic_s);
    recording.period_s = period_s_;
    if (dropped_ > 0) {
      recording.note += fmt::format("{}the oldest {} bytes of samples were dropped (kept the last {} MiB)",
                                    recording.note.empty() ? "" : "; ", dropped_, kMaxBuffered >> 20);
    }
    if (!abandoned.empty()) recording.note += (recording.note.empty() ? "" : "; ") + abandoned;
    return recording;
  }

 private:
  // True once the helper is gone: reaped here, or by someone else (run's supervisor reaps any child).
  bool Reaped(std::chrono::milliseconds within) {
    auto deadline = std::chrono::steady_clock::now() + within;
    for (;;) {
      int status = 0;
      pid_t got = waitpid(pid_, &status, WNOHANG);
      if (got == pid_ || (got < 0 && errno == ECHILD)) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void ReadLoop() {
    char chunk[65536];
    while (!stop_) {
      pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
      int ready = poll(&p, 1, 100);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;
      ssize_t n = read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // the helper ended
        reader_done_ = true;
        return;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
      output_seen_ = true;
      if (buffer_.size() > kMaxBuffered) DropOldest();
    }
  }

  // Drops the oldest half of the samples, keeping the comment and header lines.
  void DropOldest() {
    size_t header_end = buffer_.find(core::kTelemetryCsvColumns);
    if (header_end == std::string::npos) return;
    header_end = buffer_.find('\n', header_end);
    if (header_end == std::string::npos) return;
    ++header_end;
    size_t cut = buffer_.find('\n', header_end + (buffer_.size() - header_end) / 2);
    if (cut == std::string::npos) return;
    ++cut;
    dropped_ += cut - header_end;
    buffer_.erase(header_end, cut - header_end);
  }

  double period_s_;
  std::string failure_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::thread reader_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> output_seen_{false};  ///< the helper has written something
  std::atomic<bool> reader_done_{false};  ///< its output ended (it exited)
  std::string buffer_;                    // written by the reader thread only until it is joined
  size_t dropped_ = 0;
};

}  // namespace

std::unique_ptr<core::TelemetrySession> StartTelemetry(const std::vector<std::string>& helper_command,
                                                       double period_s) {
  return std::make_unique<HelperSession>(helper_command, period_s);
}

int RunTelemetryProbe(const core::OsView& os, double period_s, std::FILE* out) {
  return RunTelemetryLoop(os, period_s, out);
}

core::TelemetryRecording ParseTelemetryStream(std::string_view text, double origin_monotonic_s) {
  core::TelemetryRecording out;
  std::string_view rest = text;
  while (rest.starts_with("#")) {
    size_t eol = rest.find('\n');
    std::string_view line = core::Trim(rest.substr(0, eol));
    if (line.starts_with("# none: ")) {
      out.note = std::string(line.substr(8));
      return out;
    }
    if (line.starts_with("# source=")) {
      std::string_view source = line.substr(9);
      source = source.substr(0, source.find(" period_s="));
      out.source = std::string(source);
    }
    if (eol == std::string_view::npos) {
      rest = {};
      break;
    }
    rest.remove_prefix(eol + 1);
  }
  if (rest.empty()) {
    out.note = "the sampler wrote nothing (it did not start, or ended before its first sample)";
    return out;
  }
  // A line cut by the stop is not a sample.
  if (!rest.ends_with('\n')) rest = rest.substr(0, rest.rfind('\n') + 1);
  core::Result<core::TelemetryCsvContents> csv = core::ParseTelemetryCsv(rest, "run");
  if (!csv.ok()) {
    out.note = "the sampler's output is not telemetry: " + csv.error().message;
    return out;
  }
  for (core::TelemetrySample& s : csv->samples) s.t_s -= origin_monotonic_s;
  out.samples = std::move(csv->samples);
  if (!csv->problems.empty()) out.note = fmt::format("lines skipped: {}", fmt::join(csv->problems, "; "));
  return out;
}

}  // namespace gputriage::collect
