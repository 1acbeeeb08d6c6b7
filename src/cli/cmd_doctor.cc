// `gputriage doctor [--json] [--root DIR]`: the main job. Snapshot plus every node-health check,
// findings most severe first; exit 1 when any finding is at error level or above.
#include <algorithm>

#include <fmt/format.h>

#include "checks/doctor.h"
#include "cli/common.h"
#include "core/json_read.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "inspect/findings.h"
#include "cli/render.h"
#include "core/version.h"

namespace gputriage::cli {

namespace {

// torch/lib of the python3 on PATH, from importlib's spec (no import: milliseconds); "" when
// there is no such python or no torch.
std::string TorchLibDir() {
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(3000);
  auto r = core::RunWithTimeout(
      {"python3", "-c", "import importlib.util as u, os; s = u.find_spec('torch'); "
                        "print(os.path.join(os.path.dirname(s.origin), 'lib') if s and s.origin else '')"},
      ro);
  if (!r.ok() || r->exit_code.value_or(1) != 0) return "";
  return std::string(core::Trim(r->stdout_data));
}

int RunDoctor(const SnapshotFlags& flags, bool json) {
  auto knowledge = checks::LoadBuiltinKnowledge();
  if (!knowledge.ok()) {
    PrintError("knowledge base: " + knowledge.error().message);
    return kExitInternal;
  }
  auto snapshot = TakeSnapshot(flags);
  if (!snapshot.ok()) {
    PrintError(snapshot.error().message);
    return kExitUsage;
  }
  std::vector<core::Finding> findings = checks::RunDoctorChecks(*snapshot, *knowledge);
  // Does the GPU code of the installed PyTorch cover this machine's GPUs (`inspect`'s check)?
  // doctor's snapshot does not import torch (seconds); find its directory without importing it.
  core::Json for_coverage = *snapshot;
  if (core::StringAt(core::NodeAt(for_coverage, {"software", "python", "torch"}), "lib_dir").empty()) {
    if (std::string dir = TorchLibDir(); !dir.empty()) for_coverage["software"]["python"]["torch"]["lib_dir"] = dir;
  }
  for (core::Finding& f : inspect::LibraryCoverageFindings(for_coverage)) findings.push_back(std::move(f));
  std::stable_sort(findings.begin(), findings.end(),
                   [](const core::Finding& a, const core::Finding& b) { return a.severity > b.severity; });
  auto worst = core::MaxSeverity(findings);
  int rc = worst && *worst >= core::Severity::kError ? kExitFindings : kExitOk;
  if (json) {
    PrintJson(core::Json{{"schema_version", core::kFindingsSchemaVersion},
                         {"tool_version", core::kToolVersion},
                         {"exit_code", rc},
                         {"findings", findings},
                         {"not_collected", snapshot->value("not_collected", core::Json::array())},
                         {"snapshot", *snapshot}});
    return rc;
  }
  std::string out = RenderSnapshotSummary(*snapshot);
  out += "\n";
  if (findings.empty()) {
    out += "No problems found.\n";
  } else {
    out += RenderFindings(findings);
  }
  size_t counts[4] = {0, 0, 0, 0};
  for (const core::Finding& f : findings) ++counts[static_cast<int>(f.severity)];
  out += fmt::format("\n{} critical, {} error, {} warning, {} info; snapshot took {:.0f} ms\n",
                     counts[3], counts[2], counts[1], counts[0],
                     snapshot->value("collection_ms", 0.0));
  std::fputs(out.c_str(), stdout);
  return rc;
}

}  // namespace

Command DoctorCommand() {
  return Command{
      "doctor",
      "The main job: snapshot this node and report what is wrong with its GPU stack.",
      [](CLI::App& app) -> std::function<int()> {
        auto flags = std::make_shared<SnapshotFlags>();
        auto json = std::make_shared<bool>(false);
        app.description(
            "The main job: takes a snapshot (see `gputriage snapshot --help`) and runs every "
            "node-health check on it: missing GPUs or drivers, downtrained PCIe links, GPU "
            "errors in the kernel log (NVIDIA Xid, amdgpu faults, ring timeouts, resets, AER, "
            "RAS/ECC), retired or remapped memory, throttling, driver/library mismatch, GPU "
            "stack environment variables known to change behaviour. Findings are printed most "
            "severe first; exit status 1 when any is at error level or above.");
        flags->Add(app);
        app.add_flag("--json", *json, "Print {findings, not_collected, snapshot} as JSON");
        return [flags, json]() { return RunDoctor(*flags, *json); };
      }};
}

}  // namespace gputriage::cli
