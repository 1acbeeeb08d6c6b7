// Host and device compilers (gcc, g++, clang, clang++ and their versioned names, nvcc, hipcc,
// amdclang++) and build tools (cmake) at the usual fixed paths and on $PATH, with the version
// each reports.
// Versions come from running `PATH --version` under a watchdog, on the live machine only: a
// rooted view (--root, tests) lists the paths it finds and no version. With a version cache, a
// program whose file has not changed since its last run is not run again.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::collect {

/// A version read from a tool's `--version` output, and the line it came from.
struct ToolVersion {
  std::string version;  ///< "12.2.0", nvcc "13.0.88", hipcc "5.2.21153-0"
  std::string line;     ///< "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"
  bool operator==(const ToolVersion&) const = default;
};

/// The version in `output`, the `--version` output of the program named `name` (its file name:
/// "gcc-12", "clang++", "amdclang++", "nvcc", "hipcc", "cmake"). The name picks the format: gcc
/// "NAME (PKG) 12.2.0", clang "... clang version 14.0.6 ...", nvcc "release 13.0, V13.0.88",
/// hipcc "HIP version: 5.2.21153-0", cmake "cmake version 3.25.1". nullopt when the output has
/// no such line or the name is none of these.
std::optional<ToolVersion> ParseToolVersion(std::string_view name, std::string_view output);

struct ToolchainOptions {
  /// Directories searched after /usr/bin and /usr/local/bin: $PATH on the live machine, where a
  /// venv's cmake wheel or a conda compiler lives (collect_env reports the ones on PATH).
  std::vector<std::string> extra_dirs;
  /// Each `--version` run is abandoned (and noted in not_collected) after this long; the runs go
  /// in parallel, so the whole collection takes about this long at worst.
  std::chrono::milliseconds timeout{5000};
  /// A file where versions are remembered between runs with the identity of the program's file
  /// (collect/version_cache.h): a program whose file is unchanged is not run again. None: every
  /// version is read by running the program. Used on the live machine only.
  std::optional<std::string> version_cache;
};

/// Fills software["compilers"] and software["tools"] ([{name, path, version, version_line}]);
/// a tool whose version could not be read is listed without one and named in `section`'s
/// not_collected with the reason.
void CollectToolchain(const core::OsView& os, const ToolchainOptions& options, core::Json& software,
                      core::Section& section);

}  // namespace gputriage::collect
