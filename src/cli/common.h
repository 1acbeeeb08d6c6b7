// Shared plumbing of the subcommands: exit codes, output helpers, the rooted view from
// --root/$GPUTRIAGE_ROOT. Only wiring lives in src/cli; logic lives in the libraries.
#pragma once

#include <CLI/CLI.hpp>

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

// Exit codes (DESIGN.md): 0 nothing wrong, 1 findings at error level or above, 2 usage error,
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

/// Prints "gputriage: <message>" to stderr.
void PrintError(std::string_view message);

/// PrintError(message), then returns `exit_code`: `return Fail(error.message, kExitUsage);`.
int Fail(std::string_view message, int exit_code);

/// Prints JSON to stdout, 2-space indented, with a final newline.
void PrintJson(const core::Json& json);

/// True when stdout is a terminal and NO_COLOR is unset.
bool UseColor();

/// Wraps `text` in an ANSI colour for `severity` when colour is on.
std::string Colored(core::Severity severity, std::string_view text);

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

/// Collects a snapshot with the flags; errors (bad --root) are returned for the caller to print.
core::Result<core::Snapshot> TakeSnapshot(const SnapshotFlags& flags);

/// A --snapshot or --baseline option's snapshot: nullopt when `arg` is empty, else the one it
/// names (a file, "-", or a stored snapshot's id, "latest", "previous":
/// store::LoadSnapshotArgFromDefaultStore).
core::Result<std::optional<core::Snapshot>> LoadSnapshotOption(const std::string& arg);

/// LoadSnapshotOption(arg) when `arg` is not empty, else a snapshot of this machine taken with
/// default flags (nullopt when that fails). Fails only for `arg`.
core::Result<std::optional<core::Snapshot>> LoadOrTakeSnapshot(const std::string& arg);

}  // namespace gputriage::cli
