// `gputriage libs`: layer 3's entry points, each answering a LibraryReport (core/libs.h) with its
// findings: the closure of programs or libraries as the loader would resolve it (no program is
// run), a running process's loaded objects, the libraries a command loads under the loader's
// audit interface, and the loaded libraries of a crashed process for its bundle.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/libs.h"
#include "core/result.h"

namespace gputriage::libs {

struct LibsOptions {
  bool symbols = true;                         ///< check undefined symbols (`ldd -r`)
  std::optional<std::string> ld_library_path;  ///< as the program would get it
  /// A file remembering each closure's undefined symbols by the identities of its files
  /// (libs/symbol_cache.h); none: every symbol table is read.
  std::optional<std::string> symbol_cache;
  int threads = 0;  ///< roots resolved side by side (0: one per CPU, at most 8)
};

/// The closure of `paths` (each resolved as its own program, side by side; the report keeps the
/// order of `paths`). Never fails: unreadable inputs are in `errors`.
core::LibraryReport ResolveLibraries(const std::vector<std::string>& paths, const LibsOptions& options,
                                     const catalog::LibraryTables& catalog);

/// What process `pid` has loaded, in load order. Fails when its maps cannot be read.
core::Result<core::LibraryReport> ProcessLibraries(int pid, const catalog::LibraryTables& catalog);

/// Runs `command` under LD_AUDIT with `audit_library`; the report's libraries are what its first
/// process opened, in order; `trace` has every search and open. Sets `*exit_status`.
core::Result<core::LibraryReport> TraceLibraries(const std::vector<std::string>& command,
                                                 const std::string& audit_library,
                                                 const catalog::LibraryTables& catalog, int* exit_status);

/// The report for objects already known loaded, in order (a crashed process's mapped files).
core::LibraryReport LoadedLibraries(const std::vector<std::string>& paths, const std::string& mode,
                                    const catalog::LibraryTables& catalog);

}  // namespace gputriage::libs
