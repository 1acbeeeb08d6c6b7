// `gputriage doctor [--json] [--root DIR]`: the main job. Snapshot plus every node-health check,
// findings most severe first; exit 1 when any finding is at error level or above.
#include <fmt/format.h>

#include "checks/run_doctor.h"
#include "cli/common.h"
#include "cli/render.h"
#include "core/terminal.h"
#include "core/version.h"

namespace gputriage::cli {

namespace {

// --exit-codes: how the result maps to an exit status, for the monitors that run doctor.
//   default  0 nothing at error level or above, 1 findings at error level or above, 2 usage, 3 internal
//   nagios   Nagios plugin API: 0 OK, 1 WARNING (worst finding a warning), 2 CRITICAL (an error
//            or critical finding), 3 UNKNOWN (doctor could not run); the first output line is the
//            status line "GPUTRIAGE OK - ..." and the rest the long output
//   npd      Kubernetes node-problem-detector custom plugin: 0 OK, 1 problem (an error or critical
//            finding), 3 unknown (doctor could not run); output is one line, the message NPD shows
enum class ExitCodes { kDefault, kNagios, kNpd };

ExitCodes ParseExitCodes(std::string_view s) {
  return s == "nagios" ? ExitCodes::kNagios : s == "npd" ? ExitCodes::kNpd : ExitCodes::kDefault;
}

// Doctor could not run: usage (default 2) or internal (default 3); both "unknown" for monitors.
int CouldNotRun(ExitCodes codes, int default_code) { return codes == ExitCodes::kDefault ? default_code : 3; }

int ExitFor(ExitCodes codes, std::optional<core::Severity> worst) {
  bool error = worst && *worst >= core::Severity::kError;
  switch (codes) {
    case ExitCodes::kNagios:
      return error ? 2 : worst == core::Severity::kWarning ? 1 : 0;
    case ExitCodes::kNpd:
      return error ? 1 : 0;
    case ExitCodes::kDefault:
      break;
  }
  return error ? kExitFindings : kExitOk;
}

int RunDoctor(const SnapshotFlags& flags, bool json, bool validate, ExitCodes codes) {
  auto setup = SetUpSnapshot(flags);
  if (!setup.ok()) {
    if (codes == ExitCodes::kNagios && !json) std::printf("GPUTRIAGE UNKNOWN - %s\n", setup.error().message.c_str());
    return Fail(setup.error().message, CouldNotRun(codes, kExitUsage));
  }
  checks::DoctorOptions doctor;
  doctor.validate = validate;
  auto report = checks::RunDoctor(setup->os, setup->options, doctor);
  if (!report.ok()) {
    if (codes == ExitCodes::kNagios && !json) std::printf("GPUTRIAGE UNKNOWN - %s\n", report.error().message.c_str());
    return Fail(report.error().message, CouldNotRun(codes, kExitInternal));
  }
  const std::vector<core::Finding>& findings = report->findings;
  auto worst = core::MaxSeverity(findings);
  int rc = ExitFor(codes, worst);
  size_t counts[4] = {0, 0, 0, 0};
  for (const core::Finding& f : findings) ++counts[static_cast<int>(f.severity)];
  if (json) {
    PrintJson(core::Json{{"schema_version", core::kFindingsSchemaVersion},
                         {"tool_version", core::kToolVersion},
                         {"exit_code", rc},
                         {"exit_codes", codes == ExitCodes::kNagios ? "nagios"
                                        : codes == ExitCodes::kNpd  ? "npd"
                                                                    : "default"},
                         {"findings", findings},
                         {"not_collected", report->snapshot.not_collected},
                         {"snapshot", core::ToJson(report->snapshot)},
                         {"validation", report->validation ? core::ToJson(*report->validation) : core::Json()},
                         {"step_ms", report->step_ms}});
    return rc;
  }
  // Findings are sorted most severe first: the first one is the headline.
  std::string headline = findings.empty() ? "no GPU problem found" : findings.front().title;
  if (codes == ExitCodes::kNpd) {
    std::printf("%s\n", core::SanitizeForTerminal(headline, false).c_str());
    return rc;
  }
  std::string out;
  if (codes == ExitCodes::kNagios) {
    static const char* kState[] = {"OK", "WARNING", "CRITICAL"};
    out +=
        fmt::format("GPUTRIAGE {} - {} critical, {} error, {} warning: {} | critical={} error={} warning={} info={}\n",
                    kState[rc], counts[3], counts[2], counts[1], headline, counts[3], counts[2], counts[1], counts[0]);
  }
  out += RenderSnapshotSummary(report->snapshot);
  out += "\n";
  if (report->validation) out += RenderValidationSummary(*report->validation) + "\n";
  out += findings.empty() ? "No problems found.\n" : RenderFindings(findings);
  out += fmt::format("\n{} critical, {} error, {} warning, {} info; snapshot took {:.0f} ms{}{}\n", counts[3],
                     counts[2], counts[1], counts[0], report->snapshot.collection_ms.value_or(0.0),
                     SlowestCollectorText(report->snapshot), DoctorStepsText(report->step_ms));
  std::fputs(out.c_str(), stdout);
  return rc;
}

}  // namespace

Command DoctorCommand() {
  Command command{"doctor", "The main job: snapshot this node and report what is wrong with its GPU stack.",
                  [](CLI::App& app) -> std::function<int()> {
                    auto flags = std::make_shared<SnapshotFlags>();
                    auto json = std::make_shared<bool>(false);
                    auto validate = std::make_shared<bool>(false);
                    auto codes = std::make_shared<std::string>("default");
                    app.description(
                        "The main job: takes a snapshot (see `gputriage snapshot --help`) and runs every "
                        "node-health check on it: missing GPUs or drivers, downtrained PCIe links, GPU "
                        "errors in the kernel log (NVIDIA Xid, amdgpu faults, ring timeouts, resets, AER, "
                        "RAS/ECC), retired or remapped memory, throttling, driver/library mismatch, GPU "
                        "stack environment variables known to change behaviour, and whether the installed "
                        "PyTorch carries GPU code for this node's GPUs. With --validate, also runs "
                        "`gputriage validate --level 1` on every GPU (known operations checked against a "
                        "reference; see `gputriage validate --help`). Findings are printed most severe "
                        "first; exit status 1 when any is at error level or above.");
                    flags->Add(app);
                    app.add_flag("--json", *json, "Print {findings, not_collected, snapshot, validation} as JSON");
                    app.add_flag("--validate", *validate,
                                 "Also run validate level 1 on every GPU (about 30 s per GPU; live machine only)");
                    app.add_option("--exit-codes", *codes,
                                   "Exit-status convention: default (0 ok, 1 findings at error level or above, 2 "
                                   "usage, 3 internal); nagios (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, and a "
                                   "first line 'GPUTRIAGE <STATE> - ...' with perfdata); npd (Kubernetes "
                                   "node-problem-detector: 0 OK, 1 problem, 3 unknown, one line of output)")
                        ->check(CLI::IsMember({"default", "nagios", "npd"}))
                        ->type_name("CONVENTION");
                    return [flags, json, validate, codes]() {
                      return RunDoctor(*flags, *json, *validate, ParseExitCodes(*codes));
                    };
                  }};
  // A usage error is "unknown" to a monitor: 3 under nagios and npd, not 2 (CRITICAL to Nagios).
  command.usage_exit_for = [](int argc, char** argv) {
    for (int i = 2; i < argc; ++i) {
      std::string_view arg = argv[i];
      std::string_view value;
      if (arg == "--exit-codes" && i + 1 < argc) value = argv[i + 1];
      if (arg.rfind("--exit-codes=", 0) == 0) value = arg.substr(13);
      if (value == "nagios" || value == "npd") return 3;
    }
    return kExitUsage;
  };
  return command;
}

}  // namespace gputriage::cli
