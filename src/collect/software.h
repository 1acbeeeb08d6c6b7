// The installed GPU software stack, read from files only (no process is started): kernel
// modules, dpkg packages, CUDA installations, GPU libraries on the loader path, Python packages
// (torch and the pip nvidia-* wheels) and compilers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::collect {

struct SoftwareOptions {
  /// Extra library directories (LD_LIBRARY_PATH entries on the live machine).
  std::vector<std::string> library_dirs;
  /// Extra site-packages directories (from $VIRTUAL_ENV / $CONDA_PREFIX on the live machine).
  std::vector<std::string> site_dirs;
};

/// Collects the software stack. Layout: docs/snapshot-schema.md ("software").
core::Section CollectSoftware(const core::OsView& os, const SoftwareOptions& options);

/// dpkg's status file -> [{name, version, source: "dpkg"}] for installed GPU-stack packages.
core::Json ParseDpkgStatus(std::string_view status);

/// True for a package name that belongs to a GPU stack (cuda*, nvidia*, rocm*, hip*, ...).
bool IsGpuPackageName(std::string_view name);

/// torch/version.py text -> {version, cuda, hip, git_version} (values that are None are absent).
core::Json ParseTorchVersionPy(std::string_view text);

/// A CUDA toolkit's version.json or version.txt -> "13.0.48"; nullopt when neither parses.
std::optional<std::string> ParseCudaVersion(std::string_view text);

}  // namespace gputriage::collect
