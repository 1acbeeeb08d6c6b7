// AMD GPU state for the snapshot: amdgpu sysfs, the KFD topology, the ROCm installation, and
// ROCm SMI through dlopen (live machine only) for what sysfs lacks.
#pragma once

#include <string>
#include <vector>

#include "collect/amd/amd_smi.h"
#include "collect/amd/rocm_smi.h"
#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::amd {

/// Collects everything AMD-specific. Never fails: what it cannot read goes into
/// `not_collected` with the reason. Some amdgpu sysfs files can block in the driver, so callers
/// on the live machine run it in a helper process under a watchdog. With `os.live() == false`
/// no library is loaded. `data` layout is documented in docs/snapshot-schema.md ("amd" probe).
core::Section Collect(const core::OsView& os);

/// The libraries CollectSmi tries, by default each probe's own list.
struct SmiLibraries {
  std::vector<std::string> amd_smi = DefaultAmdSmiLibraries();
  std::vector<std::string> rocm_smi = DefaultRocmSmiLibraries();
};

/// Asks AMD SMI and, when it does not load or its amdsmi_init fails, ROCm SMI (deprecated by
/// AMD, still what ROCm 5 ships). Writes `amd_smi` (AMD SMI's answer, also a failed init's),
/// `smi` (ROCm SMI's answer, only when it was asked) and `smi_library` ("amd_smi" or
/// "rocm_smi": which one answered; absent when neither loaded) into `section.data`, and says in
/// `section.not_collected` why the other one was not used (items `amd.amd_smi`, `amd.smi`).
/// Loads vendor libraries into this process: live machine only.
void CollectSmi(core::Section& section, const SmiLibraries& libraries = {});

}  // namespace gputriage::amd
