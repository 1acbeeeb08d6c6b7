// Private to src/validate: vendor runtimes stay loaded once loaded.
#pragma once

#include <dlfcn.h>

#include "core/dynlib.h"

namespace gputriage::validate {

/// Marks `lib` RTLD_NODELETE: a GPU runtime (libcuda, libamdhip64) is not made to be unloaded —
/// its threads and the memory its globals hold outlive our handle — so dlclose leaves it mapped,
/// as every program that links it has it.
inline void KeepLoaded(const core::DynamicLibrary& lib) {
  if (lib.path().empty()) return;
  // A second reference with RTLD_NODELETE (RTLD_NOLOAD: only if already loaded); never closed.
  (void)dlopen(lib.path().c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

}  // namespace gputriage::validate
