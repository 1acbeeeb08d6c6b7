// What `gputriage inspect` finds in a binary: GPU code objects (AMD code objects per target id,
// NVIDIA cubins and PTX per architecture) and, per kernel, the resources the vendor's toolchain
// recorded. Absent numbers stay absent (std::nullopt), never 0.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace gputriage::inspect {

struct Kernel {
  std::string name;    ///< demangled when it demangles, else as stored
  std::string symbol;  ///< the symbol as stored (mangled)
  // AMD (code object metadata, amdhsa.kernels)
  std::optional<uint32_t> sgpr_count, vgpr_count, agpr_count;
  std::optional<uint32_t> sgpr_spill_count, vgpr_spill_count;
  std::optional<uint32_t> lds_bytes;           ///< .group_segment_fixed_size
  std::optional<uint32_t> scratch_bytes;       ///< .private_segment_fixed_size
  std::optional<uint32_t> kernarg_bytes;       ///< .kernarg_segment_size
  std::optional<uint32_t> max_workgroup_size;  ///< .max_flat_workgroup_size
  std::optional<uint32_t> wavefront_size;
  std::optional<bool> dynamic_stack;  ///< .uses_dynamic_stack
  // NVIDIA (cubin .nv.info attributes and sections)
  std::optional<uint32_t> registers;
  std::optional<uint32_t> shared_bytes;  ///< the kernel's static shared memory (as ptxas -v counts it)
  /// Shared memory the system reserves per block that the cubin counts in the kernel's shared
  /// section since sm_90 (1 KiB); cuobjdump's SHARED is shared_bytes + this.
  std::optional<uint32_t> reserved_shared_bytes;
  std::optional<uint32_t> local_bytes;  ///< stack frame (EIATTR_FRAME_SIZE): local memory, spills
  std::optional<uint32_t> max_threads;  ///< __launch_bounds__ (EIATTR_MAX_THREADS), x*y*z
  std::optional<uint32_t> param_bytes;  ///< kernel parameter size (EIATTR_CBANK_PARAM_SIZE)
};

struct CodeObject {
  std::string vendor;     ///< "amd" or "nvidia"
  std::string arch;       ///< "gfx90a", "sm_90", "sm_90a" (arch-specific), "compute_90" (PTX)
  std::string target_id;  ///< AMD: "gfx90a:sramecc+:xnack-"; NVIDIA: same as arch
  std::string format;     ///< "hsaco-v3".."hsaco-v6", "cubin", "ptx"
  std::string origin;     ///< where it was found: "file.so:.nv_fatbin+0x1234"
  bool compressed = false;
  uint64_t size = 0;  ///< bytes of the (decompressed) object
  std::vector<Kernel> kernels;
  std::optional<std::string> error;  ///< this object could not be read: why (others still are)
};

/// Reads `size` bytes at `offset` of the underlying data (a file, a buffer) into *out; false
/// past its end or on an I/O error. The bytes it gives are untrusted: parse them with
/// core::ByteReader.
using RangeReader = std::function<bool(uint64_t offset, size_t size, std::string* out)>;

}  // namespace gputriage::inspect
