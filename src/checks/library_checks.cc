#include "checks/library_checks.h"

#include <unistd.h>

#include <set>

#include "libs/components.h"
#include "libs/libs.h"

namespace gputriage::checks {
namespace {

// "2.11.0+cu130" -> "2.11.0"; "GLIBCXX_3.4.30" -> "3.4.30".
std::string Plain(std::string v) {
  if (size_t plus = v.find('+'); plus != std::string::npos) v.resize(plus);
  if (size_t under = v.rfind('_'); under != std::string::npos) v = v.substr(under + 1);
  return v;
}

}  // namespace

std::map<std::string, std::string> SnapshotVersions(const core::Snapshot& snapshot) {
  std::map<std::string, std::string> v;
  if (snapshot.host && snapshot.host->kernel && snapshot.host->kernel->release) {
    v["linux-kernel"] = Plain(snapshot.host->kernel->release->substr(0, snapshot.host->kernel->release->find('-')));
  }
  if (!snapshot.software) return v;
  const core::Software& s = *snapshot.software;
  if (s.nvidia && s.nvidia->driver_version) v["nvidia-driver"] = *s.nvidia->driver_version;
  if (s.cuda && s.cuda->installations) {
    for (const core::Installation& i : *s.cuda->installations) {
      if (i.version && !v.count("cuda-runtime")) v["cuda-runtime"] = *i.version;
    }
  }
  if (s.amd && s.amd->rocm && s.amd->rocm->installations) {
    for (const core::Installation& i : *s.amd->rocm->installations) {
      if (i.version && !v.count("rocm")) v["rocm"] = Plain(*i.version);
    }
  }
  if (s.python && s.python->torch) {
    const core::TorchInstall& t = *s.python->torch;
    if (t.version) v["torch"] = Plain(*t.version);
    if (t.cuda) v["torch-cuda"] = *t.cuda;
    if (t.hip) v["torch-hip"] = *t.hip;
  }
  if (s.glibc && s.glibc->version) v["glibc"] = *s.glibc->version;
  if (s.libstdcxx && s.libstdcxx->glibcxx) v["libstdcxx"] = Plain(*s.libstdcxx->glibcxx);
  if (s.compilers) {
    for (const core::Compiler& c : *s.compilers) {
      if (c.name == "gcc" && c.version && !v.count("gcc")) v["gcc"] = *c.version;
    }
  }
  return v;
}

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
  std::map<std::string, std::string> versions = SnapshotVersions(snapshot);
  if (live) {
    std::vector<std::string> roots = GpuStackRoots(snapshot);
    if (!roots.empty()) {
      libs::LibsOptions options;
      if (const char* p = std::getenv("LD_LIBRARY_PATH")) options.ld_library_path = p;
      core::LibraryReport report = libs::ResolveLibraries(roots, options, tables);
      for (core::Finding& f : report.findings) {
        if (!f.id.starts_with("compat.")) out.push_back(std::move(f));
      }
      for (const auto& [component, version] : libs::ComponentVersions(report.libraries))
        versions.emplace(component, version);
    }
  }
  for (const catalog::CompatViolation& v : catalog::EvaluateCompat(tables.compat, versions))
    out.push_back(catalog::CompatFinding(v));
  return out;
}

}  // namespace gputriage::checks
