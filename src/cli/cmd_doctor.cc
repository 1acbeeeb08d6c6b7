// `gputriage doctor [--json] [--root DIR]`: the main job. Snapshot plus every node-health check,
// findings most severe first; exit 1 when any finding is at error level or above.
#include <fmt/format.h>

#include "checks/run_doctor.h"
#include "cli/common.h"
#include "cli/render.h"
#include "core/version.h"

namespace gputriage::cli {

namespace {

int RunDoctor(const SnapshotFlags& flags, bool json, bool validate) {
  auto setup = SetUpSnapshot(flags);
  if (!setup.ok()) {
    PrintError(setup.error().message);
    return kExitUsage;
  }
  checks::DoctorOptions doctor;
  doctor.validate = validate;
  auto report = checks::RunDoctor(setup->os, setup->options, doctor);
  if (!report.ok()) {
    PrintError(report.error().message);
    return kExitInternal;
  }
  const std::vector<core::Finding>& findings = report->findings;
  auto worst = core::MaxSeverity(findings);
  int rc = worst && *worst >= core::Severity::kError ? kExitFindings : kExitOk;
  if (json) {
    PrintJson(core::Json{{"schema_version", core::kFindingsSchemaVersion},
                         {"tool_version", core::kToolVersion},
                         {"exit_code", rc},
                         {"findings", findings},
                         {"not_collected", report->snapshot.not_collected},
                         {"snapshot", core::ToJson(report->snapshot)},
                         {"validation", report->validation ? core::ToJson(*report->validation) : core::Json()}});
    return rc;
  }
  std::string out = RenderSnapshotSummary(report->snapshot);
  out += "\n";
  if (report->validation) out += RenderValidationSummary(*report->validation) + "\n";
  out += findings.empty() ? "No problems found.\n" : RenderFindings(findings);
  size_t counts[4] = {0, 0, 0, 0};
  for (const core::Finding& f : findings) ++counts[static_cast<int>(f.severity)];
  out += fmt::format("\n{} critical, {} error, {} warning, {} info; snapshot took {:.0f} ms\n", counts[3], counts[2],
                     counts[1], counts[0], report->snapshot.collection_ms.value_or(0.0));
  std::fputs(out.c_str(), stdout);
  return rc;
}

}  // namespace

Command DoctorCommand() {
  return Command{"doctor", "The main job: snapshot this node and report what is wrong with its GPU stack.",
                 [](CLI::App& app) -> std::function<int()> {
                   auto flags = std::make_shared<SnapshotFlags>();
                   auto json = std::make_shared<bool>(false);
                   auto validate = std::make_shared<bool>(false);
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
                   return [flags, json, validate]() { return RunDoctor(*flags, *json, *validate); };
                 }};
}

}  // namespace gputriage::cli
