// The installed GPU software stack, read from files: kernel modules, dpkg packages, CUDA
// installations, GPU libraries on the loader path, Python packages (torch, numpy, the pip
// nvidia-* wheels, ...), glibc and libstdc++ (c_runtime.h), compilers and cmake (toolchain.h).
// The only processes started are the compilers' `--version` runs, on the live machine.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "collect/toolchain.h"
#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::collect {

struct SoftwareOptions {
  /// Extra library directories (LD_LIBRARY_PATH entries on the live machine).
  std::vector<std::string> library_dirs;
  /// Extra site-packages directories (from $VIRTUAL_ENV / $CONDA_PREFIX on the live machine).
  std::vector<std::string> site_dirs;
  ToolchainOptions toolchain;
};

/// Collects the software stack. Layout: docs/snapshot-schema.md ("software").
core::Section CollectSoftware(const core::OsView& os, const SoftwareOptions& options);

/// The directories the dynamic loader searches, in order: `extra` (LD_LIBRARY_PATH), ld.so.conf
/// (with its "include DIR/*.conf" lines), then the default multiarch and lib directories.
/// May hold duplicates.
std::vector<std::string> LoaderDirectories(const core::OsView& os, const std::vector<std::string>& extra);

/// True for a Python distribution name (normalised: lower case, '-' and '.' -> '_') worth
/// naming in a GPU snapshot: the frameworks, their GPU wheels, and whatever
/// `python -m torch.utils.collect_env` lists under "Versions of relevant libraries" (numpy,
/// onnx, optree, ...) except mypy and flake8.
bool IsGpuPythonDistribution(std::string_view name);

/// dpkg's status file -> [{name, version, source: "dpkg"}] for installed GPU-stack packages.
core::Json ParseDpkgStatus(std::string_view status);

/// What `rpm -qa --queryformat '%{NAME}\t%{VERSION}-%{RELEASE}\t%{ARCH}\n'` printed.
struct RpmPackages {
  /// [{name, version, arch, source: "rpm"}] for the GPU-stack packages (IsGpuPackageName).
  core::Json packages = core::Json::array();
  uint64_t total = 0;      ///< well-formed lines, GPU-stack or not
  uint64_t malformed = 0;  ///< lines without three tab-separated fields
};

/// Parses rpm's output in the query format above. Never fails: a malformed line is counted.
RpmPackages ParseRpmQueryOutput(std::string_view output);

/// The query format gputriage passes to rpm.
inline constexpr std::string_view kRpmQueryFormat = "%{NAME}\t%{VERSION}-%{RELEASE}\t%{ARCH}\n";

/// Runs `rpm [extra_args] -qa --queryformat kRpmQueryFormat` under the subprocess watchdog
/// (`timeout`, 5 s by default; 32 MiB of output at most). Fails with a message naming what went
/// wrong: rpm not found, a timeout, a non-zero exit (with rpm's last stderr line), output cut.
/// `extra_args` is for tests (`--dbpath DIR`).
core::Result<RpmPackages> QueryRpmPackages(const std::vector<std::string>& extra_args = {},
                                           std::chrono::milliseconds timeout = std::chrono::seconds(5));

/// True for a package name that belongs to a GPU stack (cuda*, nvidia*, rocm*, hip*, ...).
bool IsGpuPackageName(std::string_view name);

/// torch/version.py text -> {version, cuda, hip, git_version} (values that are None are absent).
core::Json ParseTorchVersionPy(std::string_view text);

/// A CUDA toolkit's version.json or version.txt -> "13.0.48"; nullopt when neither parses.
std::optional<std::string> ParseCudaVersion(std::string_view text);

}  // namespace gputriage::collect
