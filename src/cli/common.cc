#include "cli/common.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "core/terminal.h"

namespace gputriage::cli {

namespace {

bool g_json_errors = false;
ColorMode g_color = ColorMode::kAuto;

const char* ExitCodeName(std::optional<int> exit_code) {
  if (!exit_code) return "error";
  switch (*exit_code) {
    case kExitFindings:
      return "findings";
    case kExitUsage:
      return "usage";
    case kExitInternal:
      return "internal";
    case 124:
      return "timed-out";
    case kExitNotStarted:
      return "not-started";
    case kExitNotCaptured:
      return "not-captured";
    default:
      return "error";
  }
}

void WriteError(std::string_view message, std::optional<int> exit_code) {
  if (g_json_errors) {
    core::Json error = ErrorJson(message, exit_code);
    if (!exit_code && message.rfind("warning: ", 0) == 0) error["error"]["code"] = "warning";
    std::string line = error.dump(-1, ' ', false, core::Json::error_handler_t::replace);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
    return;
  }
  // Messages name files and quote inputs: no escape sequence of theirs reaches the terminal.
  std::string safe = core::SanitizeForTerminal(message, /*keep_newlines=*/true);
  std::fprintf(stderr, "gputriage: %.*s\n", static_cast<int>(safe.size()), safe.data());
}

}  // namespace

core::Json ErrorJson(std::string_view message, std::optional<int> exit_code) {
  // "<path>: why" — the tool's messages name the input first: a first field with a slash and no
  // blank is that path.
  core::Json path = nullptr;
  if (size_t colon = message.find(": "); colon != std::string_view::npos && colon > 0) {
    std::string_view first = message.substr(0, colon);
    if (first.find('/') != std::string_view::npos && first.find_first_of(" \t") == std::string_view::npos) {
      path = std::string(first);
    }
  }
  return {{"error",
           {{"code", ExitCodeName(exit_code)},
            {"exit_code", exit_code ? core::Json(*exit_code) : core::Json(nullptr)},
            {"message", std::string(message)},
            {"path", path}}}};
}

void SetJsonErrors(bool on) { g_json_errors = on; }

void PrintError(std::string_view message) { WriteError(message, std::nullopt); }

int Fail(std::string_view message, int exit_code) {
  WriteError(message, exit_code);
  return exit_code;
}

void PrintJson(const core::Json& json) {
  std::string text = json.dump(2, ' ', false, core::Json::error_handler_t::replace);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

Progress::Progress(bool enabled)
    : enabled_(enabled && ::isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()), last_(start_) {}

Progress::~Progress() {
  if (width_ == 0) return;
  std::string blank = "\r" + std::string(width_, ' ') + "\r";
  std::fwrite(blank.data(), 1, blank.size(), stderr);
  std::fflush(stderr);
}

void Progress::Show(std::string_view text) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::seconds(1) || (width_ > 0 && now - last_ < std::chrono::milliseconds(100))) return;
  last_ = now;
  std::string line = core::SanitizeForTerminal(text, /*keep_newlines=*/false);
  size_t width = line.size();
  // Pad over the longer line before (no escape sequences: TERM=dumb terminals show them raw).
  if (width < width_) line.append(width_ - width, ' ');
  width_ = std::max(width_, width);
  line.insert(line.begin(), '\r');
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

std::string HumanBytes(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / (1ull << 20));
  return fmt::format("{} KiB", bytes >> 10);
}

void SetColorMode(ColorMode mode) { g_color = mode; }

bool UseColor() {
  if (g_color != ColorMode::kAuto) return g_color == ColorMode::kAlways;
  // NO_COLOR's spec: only a non-empty value turns colour off.
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return ::isatty(STDOUT_FILENO) != 0 && (no_color == nullptr || *no_color == '\0') &&
         !(term != nullptr && std::string_view(term) == "dumb");
}

std::string Colored(core::Severity severity, std::string_view text) {
  if (!UseColor()) return std::string(text);
  const char* code = "0";
  switch (severity) {
    case core::Severity::kInfo:
      code = "36";
      break;
    case core::Severity::kWarning:
      code = "33";
      break;
    case core::Severity::kError:
      code = "31";
      break;
    case core::Severity::kCritical:
      code = "1;31";
      break;
  }
  return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
}

void AddRootOption(CLI::App& app, std::optional<std::string>& root) {
  app.add_option("--root", root,
                 "Read /sys, /proc, /dev/kmsg, /etc, /opt, /usr under DIR (a tree captured on "
                 "another node) instead of this machine; nothing live is queried. Default: "
                 "$GPUTRIAGE_ROOT when set.")
      ->type_name("DIR");
}

std::optional<std::string> SelfExecutable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace gputriage::cli

#include "collect/env/env.h"
#include "collect/snapshot.h"
#include "store/data_home.h"
#include "store/snapshot_arg.h"

namespace gputriage::cli {

void SnapshotFlags::Add(CLI::App& app) {
  AddRootOption(app, root);
  app.add_option("--python", python,
                 "Also ask this Python interpreter (time-boxed) which torch/jax/tensorflow it "
                 "has and the CUDA/HIP versions they were built for.")
      ->type_name("PATH");
  app.add_option("--probe-timeout", probe_timeout_s,
                 "Seconds a vendor probe (NVML, amdgpu sysfs, ROCm SMI) may take before it is "
                 "abandoned and reported as hung.")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
}

std::vector<std::string> ProbeHelperCommand() {
  auto self = SelfExecutable();
  if (!self) return {};
  // Prefer the small gputriage-probe installed next to us; fall back to our own __probe.
  std::string probe = self->substr(0, self->rfind('/') + 1) + "gputriage-probe";
  if (::access(probe.c_str(), X_OK) == 0) return {probe};
  return {*self, "__probe"};
}

std::optional<std::string> CacheDirectory() {
  if (auto home = store::DataHome(); home.ok()) return *home + "/cache";
  return std::nullopt;
}

core::Result<SnapshotSetup> SetUpSnapshot(const SnapshotFlags& flags) {
  GT_ASSIGN_OR_RETURN(core::OsView os, core::OsViewFromOptions(flags.root));
  collect::SnapshotOptions options;
  options.probe_timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.probe_timeout_s * 1000));
  options.helper_command = ProbeHelperCommand();
  options.python = flags.python;
  if (flags.python && ::isatty(STDERR_FILENO)) {
    std::fprintf(stderr, "gputriage: asking %s about torch/jax/tensorflow (at most %.0f s)...\n", flags.python->c_str(),
                 options.python_timeout.count() / 1000.0);
  }
  options.environment = env::CurrentEnvironment();
  // The toolchain's versions are remembered by program file under the data home; without one
  // (no HOME, a read-only home) every version is read by running the program.
  if (os.live()) options.cache_dir = CacheDirectory();
  return SnapshotSetup{std::move(os), std::move(options)};
}

core::Result<core::Snapshot> TakeSnapshot(const SnapshotFlags& flags) {
  GT_ASSIGN_OR_RETURN(SnapshotSetup setup, SetUpSnapshot(flags));
  return collect::CollectSnapshot(setup.os, setup.options);
}

core::Result<std::optional<core::Snapshot>> LoadSnapshotOption(const std::string& arg) {
  if (arg.empty()) return std::optional<core::Snapshot>();
  GT_ASSIGN_OR_RETURN(core::Snapshot snapshot, store::LoadSnapshotArgFromDefaultStore(arg));
  return std::optional<core::Snapshot>(std::move(snapshot));
}

core::Result<std::optional<core::Snapshot>> LoadOrTakeSnapshot(const std::string& arg) {
  if (!arg.empty()) return LoadSnapshotOption(arg);
  auto taken = TakeSnapshot(SnapshotFlags{});
  if (!taken.ok()) return std::optional<core::Snapshot>();
  return std::optional<core::Snapshot>(std::move(*taken));
}

}  // namespace gputriage::cli
