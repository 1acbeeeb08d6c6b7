#include "checks/library_checks.h"

#include <unistd.h>

#include <filesystem>
#include <set>

#include "libs/components.h"
#include "libs/libs.h"
#include "libs/resolve.h"

namespace gputriage::checks {
std::vector<std::string> GpuStackRoots(const core::Snapshot& snapshot) {
  std::vector<std::string> roots;
  std::set<std::string> seen;
  auto add = [&](const std::string& p) {
    // One file under several names (/usr/local/cuda, cuda-13 and cuda-13.0 on the H100 machine) is
    // resolved once.
    if (access(p.c_str(), R_OK) == 0 && seen.insert(libs::RealPath(p)).second) roots.push_back(p);
  };
  if (const core::TorchInstall* t = snapshot.Torch(); t && t->lib_dir) {
    for (const char* lib : {"libtorch_cuda.so", "libtorch_hip.so"}) add(*t->lib_dir + "/" + lib);
  }
  // The other frameworks' GPU libraries, where their wheels put them: JAX's CUDA/ROCm PJRT
  // plugins and TensorFlow's framework library.
  if (snapshot.software && snapshot.software->python && snapshot.software->python->site_packages) {
    for (const std::string& site : *snapshot.software->python->site_packages) {
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(site + "/jax_plugins", ec)) {
        for (const auto& f : std::filesystem::directory_iterator(e.path(), ec)) {
          std::string name = f.path().filename().string();
          if (name.starts_with("xla_") && name.ends_with("_plugin.so")) add(f.path().string());
        }
      }
      add(site + "/tensorflow/libtensorflow_framework.so.2");
    }
  }
  if (snapshot.software && snapshot.software->libraries) {
    for (const core::GpuLibrary& l : *snapshot.software->libraries) {
      if (l.path) add(*l.path);
    }
  }
  return roots;
}

std::vector<core::Finding> LibraryChecks(const core::Snapshot& snapshot, const catalog::LibraryTables& tables,
                                         bool live, const std::optional<std::string>& symbol_cache) {
  std::vector<core::Finding> out;
  std::map<std::string, std::string> versions = catalog::SnapshotVersions(snapshot);
  if (live) {
    std::vector<std::string> roots = GpuStackRoots(snapshot);
    if (!roots.empty()) {
      libs::LibsOptions options;
      if (const char* p = std::getenv("LD_LIBRARY_PATH")) options.ld_library_path = p;
      options.symbol_cache = symbol_cache;
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
