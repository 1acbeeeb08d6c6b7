// What `inspect` concludes from the code objects of one file: does it carry code for this
// machine's GPUs (and what would HSA_OVERRIDE_GFX_VERSION make the runtime load instead), and
// which kernels are in trouble (spills, shared memory or LDS near the limit, launch bounds above
// what the architecture allows). Same Finding model as `doctor`.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/snapshot.h"
#include "inspect/model.h"

namespace gputriage::inspect {

/// A GPU of this machine: "sm_90" or "gfx90a" (with "gfx90a:sramecc+:xnack-" when the features
/// are known), from the snapshot (core::GpuArchitectures).
using MachineGpu = core::GpuArch;

/// Accumulates one file's code objects (call Add for each, in any order), then Finish.
class FileFindings {
 public:
  /// kernels_read: false when the objects come from a headers-only read (InspectOptions::headers_only),
  /// whose kernel lists are empty: then every object counts towards coverage.
  explicit FileFindings(std::string path, bool kernels_read = true)
      : path_(std::move(path)), kernels_read_(kernels_read) {}
  void Add(const CodeObject& object);

  /// Coverage against `gpus` (none: no coverage findings) with the HSA_OVERRIDE_GFX_VERSION
  /// value when set, and the per-kernel findings. `layer` 3 (versions and ABI).
  std::vector<core::Finding> Finish(const std::vector<MachineGpu>& gpus,
                                    const std::optional<std::string>& hsa_override) const;

  /// The architectures with SASS/code objects ("sm_80", "gfx90a") and with PTX ("compute_90").
  const std::set<std::string>& binary_archs() const { return binary_; }
  const std::set<std::string>& ptx_archs() const { return ptx_; }

 private:
  // The pieces of Finish; each appends its findings to *out.
  /// "unreadable_objects" when some object could not be read (the first one's error in detail).
  void AddUnreadableFinding(std::vector<core::Finding>* out) const;
  /// For an NVIDIA GPU, when the file carries NVIDIA code: "ptx_only" or "missing_arch" when no
  /// SASS can run on it, else AddKernelsMissingForGpu.
  void AddNvidiaCoverage(const MachineGpu& gpu, std::vector<core::Finding>* out) const;
  /// "kernels_missing_for_gpu" when some kernels have no code that sm_`want` (the GPU `where`)
  /// can run although the file covers it.
  void AddKernelsMissingForGpu(int want, const std::string& where, std::vector<core::Finding>* out) const;
  /// For an AMD GPU, when the file carries AMD code: "hsa_override" when the override changes
  /// the ISA loaded, and "missing_arch" or "target_feature_mismatch" when nothing compatible is
  /// carried for the (effective) target.
  void AddAmdCoverage(const MachineGpu& gpu, const std::optional<std::string>& hsa_override,
                      std::vector<core::Finding>* out) const;
  /// The per-kernel findings: spills, stack frames, shared memory and LDS near the limit,
  /// launch bounds over it.
  void AddKernelFindings(std::vector<core::Finding>* out) const;

  struct KernelIssue {
    size_t count = 0;
    std::string first;  // "kernel (arch)"
  };
  std::string path_;
  std::set<std::string> binary_, ptx_;
  std::set<std::string> nvidia_with_kernels_;  // NVIDIA archs (SASS or PTX) of objects holding a kernel
  size_t nvidia_objects_ = 0;
  bool kernels_read_ = true;
  std::set<std::string> amd_targets_;              // full target ids
  std::map<std::string, uint32_t> amd_wavefront_;  // arch -> wavefront size seen
  KernelIssue spills_, stack_, shared_near_, lds_near_, bounds_over_;
  // Which architectures carry each kernel (by a hash of its symbol; arch index bits), for
  // "kernels with code for other GPUs but not this one". Bounded: hashes, not names.
  std::vector<std::string> arch_index_;
  std::map<uint64_t, uint64_t> kernel_archs_;
  std::map<uint64_t, std::string> kernel_example_;  // a few names, for the finding's text
  size_t kernels_ = 0, errors_ = 0;
  std::string first_error_;
};

/// The coverage check `doctor` runs: the GPU libraries the snapshot points at (PyTorch's
/// libtorch_cuda.so / libtorch_hip.so in software.python.torch.lib_dir) against the snapshot's
/// GPUs, from the fatbin and bundle headers only. Nothing when there is no GPU or no library.
std::vector<core::Finding> LibraryCoverageFindings(const core::Snapshot& snapshot);

/// "10.3.0" -> "gfx1030", "9.0.10" -> "gfx90a", "11.0.0" -> "gfx1100"; nullopt when it does not
/// parse (HSA_OVERRIDE_GFX_VERSION is major.minor.stepping, the stepping in hex).
std::optional<std::string> GfxFromOverride(std::string_view value);

}  // namespace gputriage::inspect
