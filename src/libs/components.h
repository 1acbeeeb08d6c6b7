// GPU-stack components in a list of libraries: each library's component, version and release
// (kb/tables/gpu-libraries.yaml; a pip `nvidia-*` wheel's version from its dist-info), and the
// findings a demanding user wants first: two copies of one library in one process or closure,
// components of different CUDA or ROCm releases side by side, and the version matrix
// (kb/compat) evaluated on the versions found.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/libs.h"

namespace gputriage::libs {

/// Fills component, version and release of every library the table knows.
void ClassifyLibraries(std::vector<core::LibraryEntry>& libraries, const catalog::LibraryTables& catalog);

/// Duplicate copies, mixed releases, missing libraries, undefined symbols and version-matrix
/// violations as findings (layer 3). `loaded` says the libraries are a process's, not a plan.
std::vector<core::Finding> LibraryFindings(const core::LibraryReport& report, const catalog::LibraryTables& catalog,
                                           bool loaded);

/// The version of the pip wheel a library file belongs to: ".../site-packages/nvidia/cublas/lib/
/// libcublas.so.12" -> the version of nvidia_cublas_cu12-<version>.dist-info beside it.
std::optional<std::string> WheelVersion(const std::string& path);

}  // namespace gputriage::libs
