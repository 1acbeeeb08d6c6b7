#include "checks/library_checks.h"

#include <unistd.h>

#include <set>

#include "libs/components.h"
#include "libs/libs.h"

namespace gputriage::checks {
std::vector<std::string> GpuStackRoots(const core::Snapshot& snapshot) {
  std::vector<std::string> roots;
  std::set<std::string> seen;
  auto add = [&](const std::string& p) {
    if (access(p.c_str(), R_OK) == 0 && seen.insert(p).second) roots.push_back(p);
  };
  if (const core::TorchInstall* t = snapshot.Torch(); t && t->lib_dir) {
    for (const char* lib : {"libtorch_cuda.so", "libtorch_hip.so"}) add(*t->lib_dir + "/" + lib);
  }
  if (snapshot.software && snapshot.software->libraries) {
    for (const core::GpuLibrary& l : *snapshot.software->libraries) {
      if (l.path) add(*l.path);
    }
  }
  return roots;
}

std::vector<core::Finding> LibraryChecks(const core::Snapshot& snapshot, const catalog::LibraryTables& tables,
                                         bool live) {
  std::vector<core::Finding> out;
  std::map<std::string, std::string> versions = catalog::SnapshotVersions(snapshot);
  if (live) {
    std::vector<std::string> roots = GpuStackRoots(snapshot);
    if (!roots.empty()) {
      libs::LibsOptions options;
      if (const char* p = std::getenv("LD_LIBRARY_PATH")) options.ld_library_path = p;
      core::LibraryReport report = libs::ResolveLibraries(roots, options, tables);
      for (core::Finding& f : report.findings) {
        if (!f.id.starts_with("compat.")) out.push_back(std::move(f));
      }
      for (const auto& [component, version] : catalog::ComponentVersions(report.libraries))
        versions.emplace(component, version);
    }
  }
  for (const catalog::CompatViolation& v : catalog::EvaluateCompat(tables.compat, versions))
    out.push_back(catalog::CompatFinding(v));
  return out;
}

}  // namespace gputriage::checks
