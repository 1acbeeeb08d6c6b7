#include "checks/run_doctor.h"

#include <algorithm>
#include <chrono>
#include <future>

#include <fmt/format.h>

#include "catalog/catalog.h"
#include "checks/doctor.h"
#include "checks/library_checks.h"
#include "collect/python_probe.h"
#include "inspect/findings.h"
#include "validate/validate.h"

namespace gputriage::checks {
namespace {

// The coverage check needs torch's library directory; the snapshot's file scan finds torch in
// the usual site directories only (not a pyenv's or a user site). False when the snapshot already
// had it (python3 was not run).
bool LocateTorch(core::Snapshot& snapshot) {
  const core::TorchInstall* torch = snapshot.Torch();
  if (torch != nullptr && torch->lib_dir) return false;
  std::optional<std::string> dir = collect::FindTorchLibDir("python3", std::chrono::milliseconds(3000));
  if (!dir) return true;
  if (!snapshot.software) snapshot.software = core::Software{};
  if (!snapshot.software->python) snapshot.software->python = core::PythonSoftware{};
  if (!snapshot.software->python->torch) {
    snapshot.software->python->torch = core::TorchInstall{};
    snapshot.software->python->torch->path = dir->substr(0, dir->rfind('/'));
  }
  snapshot.software->python->torch->lib_dir = *dir;
  return true;
}

}  // namespace

core::Result<DoctorReport> RunDoctor(const core::OsView& os, const collect::SnapshotOptions& options,
                                     const DoctorOptions& doctor) {
  DoctorReport report;
  auto step_start = std::chrono::steady_clock::now();
  auto step_done = [&](const char* name) {
    auto now = std::chrono::steady_clock::now();
    report.step_ms[name] = std::chrono::duration<double, std::milli>(now - step_start).count();
    step_start = now;
  };
  // The knowledge base loads while the snapshot is taken: neither needs the other.
  auto loading = std::async(std::launch::async, [&]() {
    auto loaded = catalog::BuiltinCatalog();
    step_done("knowledge_base");
    return loaded;
  });
  report.snapshot = collect::CollectSnapshot(os, options);
  core::Result<const catalog::Catalog*> catalog = loading.get();
  if (!catalog.ok()) return core::MakeError("knowledge base: {}", catalog.error().message);
  step_start = std::chrono::steady_clock::now();
  if (os.live() && LocateTorch(report.snapshot)) step_done("torch_lookup");
  report.findings = RunDoctorChecks(report.snapshot, **catalog);
  step_done("checks");
  for (core::Finding& f : inspect::LibraryCoverageFindings(report.snapshot)) {
    report.findings.push_back(std::move(f));
  }
  step_done("coverage");
  // Each closure's undefined symbols are remembered beside the toolchain's versions.
  std::optional<std::string> symbol_cache;
  if (options.cache_dir) symbol_cache = *options.cache_dir + "/closure-symbols.json";
  for (core::Finding& f : LibraryChecks(report.snapshot, (*catalog)->libraries, os.live(), symbol_cache)) {
    report.findings.push_back(std::move(f));
  }
  step_done("libraries");
  if (doctor.validate) {
    if (!os.live()) {
      report.snapshot.not_collected.push_back(
          {"validate", "--validate runs GPU work, so only on the live machine (not under --root)"});
    } else {
      validate::ValidateOptions level1;
      report.validation = validate::RunValidate(level1, (*catalog)->product_peaks);
      for (const core::Finding& f : report.validation->findings) report.findings.push_back(f);
      if (report.validation->devices.empty()) {
        core::Finding f;
        f.id = "validate-no-gpu";
        f.layer = 2;
        f.severity = core::Severity::kWarning;
        f.title = "validate: no usable GPU, nothing was run";
        f.detail = fmt::format("{}", fmt::join(report.validation->notes, "; "));
        report.findings.push_back(std::move(f));
      }
    }
    step_done("validate");
  }
  core::SortBySeverity(report.findings);
  return report;
}

}  // namespace gputriage::checks
