// How this machine's dynamic loader searches: its system directories, the glibc-hwcaps and
// legacy hwcap subdirectories it tries in each directory, what $LIB and $PLATFORM expand to,
// LD_LIBRARY_PATH, and /etc/ld.so.cache. Asked of the loader itself (`ld.so --help` prints its
// search path and the subdirectories this CPU supports), with glibc's x86-64 defaults when the
// loader cannot be asked.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gputriage::libs {

struct LoaderConfig {
  std::vector<std::string> system_dirs;      ///< "/lib/x86_64-linux-gnu", ...
  std::vector<std::string> hwcaps_subdirs;   ///< supported glibc-hwcaps names, best first: "x86-64-v3"
  std::vector<std::string> legacy_subdirs;   ///< legacy hwcap subdirectories tried (glibc < 2.37), in order
  std::string platform = "x86_64";           ///< $PLATFORM
  std::string lib = "lib/x86_64-linux-gnu";  ///< $LIB
  std::vector<std::string> ld_library_path;
  std::string cache = "/etc/ld.so.cache";
  std::string source;  ///< where this came from, for the report
};

/// The configuration `ld.so --help` describes (glibc 2.33 and later print the search path and
/// the hwcaps subdirectories); fails when the text has no search path.
core::Result<LoaderConfig> ParseLdSoHelp(std::string_view text);

/// Asks `interpreter` (the program's PT_INTERP, else /lib64/ld-linux-x86-64.so.2); falls back to
/// glibc's x86-64 defaults, saying so in `source`. LD_LIBRARY_PATH from `ld_library_path`.
LoaderConfig DetectLoaderConfig(const std::optional<std::string>& interpreter,
                                const std::optional<std::string>& ld_library_path);

/// The directories of a search-path string ("a:b;c"; an empty element is the current directory,
/// as the loader takes it), with $ORIGIN, $LIB and $PLATFORM (also ${...}) expanded; `origin` is
/// the directory of the object whose path it is. Elements with an unknown $TOKEN are dropped, as
/// the loader drops them.
std::vector<std::string> ExpandSearchPath(std::string_view path, std::string_view origin, const LoaderConfig& config);

/// The directories tried for one search directory, in order: its glibc-hwcaps subdirectories,
/// its legacy hwcap subdirectories, then itself.
std::vector<std::string> SubdirectoriesTried(const std::string& dir, const LoaderConfig& config);

}  // namespace gputriage::libs
