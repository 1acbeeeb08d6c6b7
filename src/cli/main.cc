// gputriage: from a dead GPU job to a named cause. main() only parses and dispatches.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cli/common.h"
#include "core/config_file.h"
#include "core/file.h"
#include "core/redact.h"
#include "core/trust.h"
#include "core/version.h"

namespace gputriage::cli {

const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = [] {
    Command run = RunCommand();
    run.status_is_the_jobs = true;
    run.usage_exit = kExitNotStarted;
    return std::vector<Command>{
        DoctorCommand(), SnapshotCommand(), run,           CaptureCommand(),  BundlesCommand(), AnalyzeCommand(),
        ReportCommand(), InspectCommand(),  LibsCommand(), ValidateCommand(), KbCommand(),      AgentCommand(),
        EventsCommand(), ProbeCommand()};
  }();
  return kCommands;
}

namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "gputriage snapshto" -> "did you mean 'snapshot'?"
std::optional<int> RejectUnknownCommand(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return std::nullopt;
  std::string_view given = argv[1];
  const Command* best = nullptr;
  size_t best_distance = 3;
  for (const Command& command : Commands()) {
    if (given == command.name) return std::nullopt;
    size_t d = EditDistance(given, command.name);
    if (!command.hidden && d < best_distance) {
      best = &command;
      best_distance = d;
    }
  }
  std::string message = fmt::format("unknown command '{}'", given);
  if (best != nullptr) message += fmt::format("; did you mean '{}'?", best->name);
  return Fail(message + " (see gputriage --help)", kExitUsage);
}

// `run [OPTIONS] [--] CMD ...`: the job's own words start at the first argument that is not one of
// run's options, so a mistyped option (`--timout 30m`) would become part of the job and the job
// would run without it. Every dash-argument before "--" or the command must be one of the
// command's own options; the first that is not is returned.
std::optional<std::string> UnknownOptionBeforeTheJob(const CLI::App& sub, const CLI::App& top, int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--" || arg.size() < 2 || arg[0] != '-') return std::nullopt;  // the job starts here
    std::string name(arg.substr(0, arg.find('=')));
    if (name == "-h" || name == "--help") return std::nullopt;
    const CLI::Option* opt = sub.get_option_no_throw(name);
    if (opt == nullptr) opt = top.get_option_no_throw(name);  // a global option given after the command
    if (opt == nullptr) return name;
    // An option with a value given as a separate argument ("--timeout 30m"): skip the value.
    if (opt->get_items_expected_min() > 0 && arg.find('=') == std::string_view::npos) ++i;
  }
  return std::nullopt;
}

std::string DidYouMeanOption(const CLI::App& sub, std::string_view given) {
  std::string best;
  size_t best_distance = 3;
  for (const CLI::Option* opt : sub.get_options()) {
    for (const std::string& name : opt->get_lnames()) {
      size_t d = EditDistance(given, "--" + name);
      if (d < best_distance) {
        best = "--" + name;
        best_distance = d;
      }
    }
  }
  return best.empty() ? std::string() : fmt::format("; did you mean '{}'?", best);
}

// The command asked for JSON (--json, --json-file) among its own options: its errors are JSON
// too. For run, only the options before the job count (the job's own words may say --json).
bool WantsJson(const Command& command, int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") return false;
    if (command.status_is_the_jobs && (arg.size() < 2 || arg[0] != '-')) return false;
    if (arg == "--json" || arg.rfind("--json-file", 0) == 0) return true;
  }
  return false;
}

// Option defaults come from the first of these that exists (TOML): $GPUTRIAGE_HOME/config.toml,
// $XDG_CONFIG_HOME/gputriage/config.toml (~/.config/gputriage/config.toml), /etc/gputriage.toml.
std::string DefaultConfigFile() {
  std::vector<std::string> candidates;
  if (const char* home = std::getenv("GPUTRIAGE_HOME"); home && *home)
    candidates.push_back(std::string(home) + "/config.toml");
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) {
    candidates.push_back(std::string(xdg) + "/gputriage/config.toml");
  } else if (const char* user = std::getenv("HOME"); user && *user) {
    candidates.push_back(std::string(user) + "/.config/gputriage/config.toml");
  }
  candidates.push_back("/etc/gputriage.toml");
  for (const std::string& c : candidates) {
    if (::access(c.c_str(), R_OK) == 0) return c;
  }
  return "";
}

// The config file this command line reads: --config FILE / --config=FILE among gputriage's own
// options (before a job's "--"), else the default; empty when there is none.
std::string ConfigFileOf(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--config" && i + 1 < argc) return argv[i + 1];
    if (arg.starts_with("--config=")) return std::string(arg.substr(9));
  }
  return DefaultConfigFile();
}

// Every command's output ends here: a short write (a full disk, a closed pipe whose SIGPIPE is
// ignored) leaves a truncated answer, so it is an internal failure (exit 3), never a success;
// for run, whose status is the job's, only a success becomes 3.
int FinishStandardOutput(int rc, bool status_is_the_jobs) {
  std::cout.flush();
  int flush_errno = std::fflush(stdout) != 0 ? errno : 0;
  if (flush_errno == 0 && !std::ferror(stdout) && !std::cout.fail()) return rc;
  if (status_is_the_jobs && rc != kExitOk) {
    PrintError("could not write standard output: the output is incomplete");
    return rc;
  }
  return Fail(flush_errno != 0 ? fmt::format("could not write standard output: {}", std::strerror(flush_errno))
                               : std::string("could not write standard output: the output is incomplete"),
              kExitInternal);
}

}  // namespace

int Main(int argc, char** argv) {
  if (auto rc = RejectUnknownCommand(argc, argv)) return *rc;
  CLI::App app{
      "gputriage finds out why a GPU job crashed when the logs say nothing useful, on AMD "
      "ROCm/HIP and NVIDIA CUDA.\n\nStart with `gputriage doctor`: it snapshots this node and "
      "prints what is wrong with its GPU stack, most severe first.",
      "gputriage"};
  app.set_version_flag("--version", std::string("gputriage ") + core::kToolVersion);
  app.require_subcommand(1);
  std::string color = "auto";
  app.add_option("--color", color,
                 "Colour human output: auto (a terminal, NO_COLOR unset or empty, TERM not dumb), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->type_name("WHEN");
  std::vector<std::string> redact;
  app.add_option("--redact", redact,
                 "Also redact what matches REGEX (RE2; repeatable) wherever gputriage redacts secrets (snapshot "
                 "environments, the store, analyses, reports), like the built-in token and password rules: an "
                 "internal host name, a project code")
      ->type_name("REGEX");
  app.set_config("--config", DefaultConfigFile(),
                 "Read option defaults from FILE (TOML): global options at the top (color, redact = [...]), a "
                 "command's options in its section ([doctor] exit-codes = \"nagios\", [run] bundle-dir = \"...\"); "
                 "the command line wins. Default: the first of $GPUTRIAGE_HOME/config.toml, "
                 "$XDG_CONFIG_HOME/gputriage/config.toml (~/.config/gputriage/config.toml), /etc/gputriage.toml")
      ->type_name("FILE");
  app.allow_config_extras(CLI::config_extras_mode::error);  // a misspelt key is an error, not ignored
  app.footer(
      "Exit codes: 0 nothing wrong, 1 findings at error level or above, 2 usage error, "
      "3 internal failure.");
  std::vector<std::pair<CLI::App*, std::function<int()>>> handlers;
  for (const Command& command : Commands()) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    if (command.hidden) sub->group("");
    handlers.emplace_back(sub, command.setup(*sub));
  }
  // --color and --redact are accepted after the command too ("gputriage doctor --color never"), at
  // every level ("snapshot list --color never"): each (sub)command gets its own copy, bound to the
  // same variables. (CLI11's fallthrough would do it, but also hand every stray word to the top.)
  std::function<void(CLI::App*)> add_globals = [&](CLI::App* a) {
    a->add_option("--color", color, "Colour human output: auto, always, never (see gputriage --help)")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->type_name("WHEN");
    a->add_option("--redact", redact, "Also redact what matches REGEX (see gputriage --help)")->type_name("REGEX");
    for (CLI::App* nested : a->get_subcommands({})) add_globals(nested);
  };
  for (auto& [sub, handler] : handlers) add_globals(sub);
  // The command named on the line (argv[1]); its usage errors have its own exit code (run: 125).
  const Command* chosen = nullptr;
  std::optional<int> chosen_usage_exit;
  for (size_t i = 0; i < handlers.size(); ++i) {
    if (argc >= 2 && std::string_view(argv[1]) == Commands()[i].name) {
      chosen = &Commands()[i];
      SetJsonErrors(WantsJson(*chosen, argc, argv));
      if (chosen->usage_exit_for) chosen_usage_exit = chosen->usage_exit_for(argc, argv);
      if (chosen->status_is_the_jobs) {
        if (auto unknown = UnknownOptionBeforeTheJob(*handlers[i].first, app, argc, argv)) {
          return Fail(fmt::format("{}: unknown option '{}'{} (options go before -- and the command; see gputriage {} "
                                  "--help)",
                                  chosen->name, *unknown, DidYouMeanOption(*handlers[i].first, *unknown), chosen->name),
                      chosen->usage_exit);
        }
      }
    }
  }
  // A config file chooses programs gputriage runs (python = ...): it is read only when it, and the
  // directories above it, are owned by root or this user and writable by nobody else.
  std::string config_file;  // the config file read, once it passed the checks
  if (std::string config = ConfigFileOf(argc, argv); !config.empty() && ::access(config.c_str(), F_OK) == 0) {
    int usage = chosen_usage_exit ? *chosen_usage_exit : chosen != nullptr ? chosen->usage_exit : kExitUsage;
    if (auto trusted = core::CheckTrusted(config, "config file"); !trusted.ok()) {
      return Fail(trusted.error().message, usage);
    }
    // Its syntax, line by line, before CLI11 reads it: CLI11 says "INI was not able to parse [run"
    // without a line number, and takes some malformed lines for keys.
    auto text = core::ReadFile(config, 1u << 20);
    if (!text.ok()) return Fail(fmt::format("config file {}: {}", config, text.error().message), usage);
    if (auto syntax = core::CheckConfigSyntax(*text, config); !syntax.ok()) return Fail(syntax.error().message, usage);
    config_file = config;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int usage = chosen_usage_exit ? *chosen_usage_exit : chosen != nullptr ? chosen->usage_exit : kExitUsage;
    if (dynamic_cast<const CLI::ConfigError*>(&e) != nullptr) {
      // CLI11 says "INI was not able to parse doctor.exit-code": name the file and the format.
      std::string file = app.get_config_ptr() != nullptr ? app.get_config_ptr()->as<std::string>() : "";
      if (file.empty()) file = DefaultConfigFile();
      return Fail(fmt::format("config file {}: {} (a key that is no option of that section, or a value that does not "
                              "parse; see gputriage --help for --config)",
                              file, e.what()),
                  usage);
    }
    // A value the config file gave that does not validate ("--exit-codes: zzz not in {...}"):
    // when the option is not on the command line, the value came from the file; say which.
    if (!config_file.empty() && (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr ||
                                 dynamic_cast<const CLI::ConversionError*>(&e) != nullptr)) {
      std::string what = e.what();
      std::string option = what.substr(0, what.find(':'));
      bool on_command_line = false;
      for (int i = 1; i < argc && !on_command_line; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--") break;
        on_command_line = arg == option || arg.starts_with(option + "=");
      }
      if (option.starts_with("--") && !on_command_line) {
        return Fail(fmt::format("config file {}: {} (set there; see gputriage --help for --config)", config_file, what),
                    usage);
      }
    }
    if (e.get_exit_code() != 0 && chosen != nullptr && WantsJson(*chosen, argc, argv)) {
      return Fail(fmt::format("{}: {}", chosen->name, e.what()), usage);
    }
    int rc = app.exit(e);
    return FinishStandardOutput(rc == 0 ? kExitOk : usage, false);
  }
  SetColorMode(color == "always" ? ColorMode::kAlways : color == "never" ? ColorMode::kNever : ColorMode::kAuto);
  if (auto set = core::SetUserSecretPatterns(redact); !set.ok()) {
    return Fail(set.error().message, chosen != nullptr ? chosen->usage_exit : kExitUsage);
  }
  for (size_t i = 0; i < handlers.size(); ++i) {
    if (handlers[i].first->parsed())
      return FinishStandardOutput(handlers[i].second(), Commands()[i].status_is_the_jobs);
  }
  return kExitUsage;
}

}  // namespace gputriage::cli

int main(int argc, char** argv) {
  int rc;
  try {
    rc = gputriage::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    gputriage::cli::PrintError(std::string("internal error: ") + e.what());
    rc = gputriage::cli::kExitInternal;
    std::fflush(stdout);
  }
  return rc;
}
