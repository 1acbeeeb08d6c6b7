// Doctor's layer 3: the version matrix (kb/compat) on the versions the snapshot knows (driver,
// CUDA, ROCm, PyTorch and the CUDA/HIP it was built for, glibc, libstdc++, gcc, kernel) together
// with those of the libraries found, and the library checks of `libs` (missing libraries,
// undefined symbols, two copies of one library, mixed releases) on the GPU stack the snapshot
// found and on PyTorch's own GPU library.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/model.h"
#include "core/snapshot.h"

namespace gputriage::checks {

/// The programs whose closures doctor checks: PyTorch's libtorch_cuda.so / libtorch_hip.so,
/// JAX's PJRT GPU plugins (site-packages/jax_plugins/*/xla_*_plugin.so), TensorFlow's
/// libtensorflow_framework.so.2, and the GPU libraries on the loader path.
std::vector<std::string> GpuStackRoots(const core::Snapshot& snapshot);

/// Resolves the roots (live machine only: they are files of this machine) and evaluates the
/// version matrix on the snapshot's versions completed by the libraries'. `symbol_cache`: the file
/// remembering each closure's undefined symbols (libs/symbol_cache.h); none: all are read.
std::vector<core::Finding> LibraryChecks(const core::Snapshot& snapshot, const catalog::LibraryTables& tables,
                                         bool live, const std::optional<std::string>& symbol_cache = std::nullopt);

}  // namespace gputriage::checks
