// Shared plumbing of the subcommands: exit codes, output helpers, the rooted view from
// --root/$GPUTRIAGE_ROOT. Only wiring lives in src/cli; logic lives in the libraries.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collect/snapshot.h"
#include "core/model.h"
#include "core/os_view.h"
#include "core/snapshot.h"

namespace gputriage::cli {

// Exit codes (docs/design.md): 0 nothing wrong, 1 findings at error level or above, 2 usage error,
// 3 internal failure.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternal = 3;
// `run` answers with the job's own status, so its own failures take the codes GNU `timeout` and
// `docker run` use, which a job does not produce by itself: 124 when --timeout ended the job
// (forensics::kTimedOutStatus), 125 when gputriage failed before the job started (a usage error,
// supervision that cannot start).
inline constexpr int kExitNotStarted = 125;
// `capture`: nothing was captured (no such process, a zombie, ptrace refused), and the process
// exited during the capture (the bundle has what was taken before).
inline constexpr int kExitNotCaptured = 4;
inline constexpr int kExitCaptureIncomplete = 5;

/// A subcommand: `setup` adds its options to `app` and returns the handler to run when the
/// subcommand was chosen. The handler returns the exit code.
struct Command {
  const char* name;
  const char* help;
  std::function<std::function<int()>(CLI::App& app)> setup;
  bool hidden = false;
  /// The exit status is the job's (run): output that could not be written turns only a 0 into
  /// 3, so a job's failure status is never replaced.
  bool status_is_the_jobs = false;
  /// The exit code of a usage error (an unknown option, a bad value): kExitUsage, 125 for run.
  int usage_exit = kExitUsage;
  /// When set, the usage-error exit code read from the command line (doctor --exit-codes nagios).
  std::function<int(int argc, char** argv)> usage_exit_for;
};

/// The command table (main.cc).
const std::vector<Command>& Commands();

// One entry per file.
Command SnapshotCommand();
Command DoctorCommand();
Command ProbeCommand();
Command RunCommand();
Command AnalyzeCommand();
Command KbCommand();
Command ReportCommand();
Command InspectCommand();
Command LibsCommand();
Command ValidateCommand();
Command BundlesCommand();
Command CaptureCommand();
Command AgentCommand();
Command EventsCommand();

/// Prints "gputriage: <message>" to stderr; under --json (SetJsonErrors) one JSON line instead:
/// {"error": {"code": "error", "exit_code": null, "message": ..., "path": ...}}.
void PrintError(std::string_view message);

/// PrintError(message), then returns `exit_code`: `return Fail(error.message, kExitUsage);`.
/// Under --json the line's code names the exit code ("usage", "internal", "not-started", ...).
int Fail(std::string_view message, int exit_code);

/// Errors go to stderr as JSON lines (the command was given --json or --json-file).
void SetJsonErrors(bool on);

/// The error object PrintError writes under --json (for tests and for callers that build their
/// own): code is "usage" (2), "internal" (3), "timed-out" (124), "not-started" (125), "findings"
/// (1) or "error" (no exit code; PrintError says "warning" for a message starting "warning: "); path is the file or
/// directory the message starts with
/// ("<path>: ..."), null when it starts with none.
core::Json ErrorJson(std::string_view message, std::optional<int> exit_code);

/// --color: always, never, or auto (the default: colour only when stdout is a terminal, NO_COLOR
/// is unset or empty — https://no-color.org — and TERM is not "dumb").
enum class ColorMode { kAuto, kAlways, kNever };
void SetColorMode(ColorMode mode);

/// Prints JSON to stdout, 2-space indented, with a final newline.
void PrintJson(const core::Json& json);

/// Whether human output is coloured (SetColorMode; auto by default).
bool UseColor();

/// Wraps `text` in an ANSI colour for `severity` when colour is on.
std::string Colored(core::Severity severity, std::string_view text);

/// A one-line progress display on stderr for work that can last over a second: shown only when
/// stderr is a terminal, first after a second of work, redrawn at most 10 times a second, and
/// erased when the work ends (the destructor), so output and logs never carry it.
class Progress {
 public:
  /// `enabled` is ANDed with "stderr is a terminal".
  explicit Progress(bool enabled = true);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  /// Replaces the line (rate-limited; `text` is sanitised for the terminal).
  void Show(std::string_view text);

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_;
  size_t width_ = 0;  // of the line on screen, 0 when none
};

/// "1.5 GiB", "512 MiB", "12 KiB".
std::string HumanBytes(uint64_t bytes);

/// Adds --root to `app`, bound to `root`.
void AddRootOption(CLI::App& app, std::optional<std::string>& root);

/// The path of the running gputriage binary, for helper processes.
std::optional<std::string> SelfExecutable();

}  // namespace gputriage::cli

namespace gputriage::cli {

/// Options shared by `snapshot` and `doctor`.
struct SnapshotFlags {
  std::optional<std::string> root;
  std::optional<std::string> python;
  double probe_timeout_s = 5.0;
  void Add(CLI::App& app);
};

/// The rooted view and collection options the flags ask for; fails for a bad --root.
struct SnapshotSetup {
  core::OsView os;
  collect::SnapshotOptions options;
};
core::Result<SnapshotSetup> SetUpSnapshot(const SnapshotFlags& flags);

/// The directory where what is slow to read and tied to files' identities is remembered between
/// runs ($GPUTRIAGE_HOME/cache or the data home's); none without a data home.
std::optional<std::string> CacheDirectory();

/// Collects a snapshot with the flags; errors (bad --root) are returned for the caller to print.
core::Result<core::Snapshot> TakeSnapshot(const SnapshotFlags& flags);

/// How to start a vendor probe in a helper process: gputriage-probe next to this binary, else
/// {this binary, "__probe"}; empty when this binary's path is unknown.
std::vector<std::string> ProbeHelperCommand();

/// A --snapshot or --baseline option's snapshot: nullopt when `arg` is empty, else the one it
/// names (a file, "-", or a stored snapshot's id, "latest", "previous":
/// store::LoadSnapshotArgFromDefaultStore).
core::Result<std::optional<core::Snapshot>> LoadSnapshotOption(const std::string& arg);

/// LoadSnapshotOption(arg) when `arg` is not empty, else a snapshot of this machine taken with
/// default flags (nullopt when that fails). Fails only for `arg`.
core::Result<std::optional<core::Snapshot>> LoadOrTakeSnapshot(const std::string& arg);

}  // namespace gputriage::cli
