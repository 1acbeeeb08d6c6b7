// Directories on the local filesystem.
#pragma once

#include <string>

#include "core/result.h"

namespace gputriage::core {

/// Creates `path` and its missing parents with `mode` (like `mkdir -p -m`). Fails naming the
/// component that could not be created, or `path` when it exists but is not a directory.
core::Result<void> MakeDirectories(const std::string& path, unsigned mode);

}  // namespace gputriage::core
