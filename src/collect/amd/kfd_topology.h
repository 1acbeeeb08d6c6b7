// Pure parsers for the KFD topology that amdkfd publishes under
// /sys/class/kfd/kfd/topology/nodes/N/: the node `properties` file, the io_links/M/`properties`
// files, and the numbers in them (gfx_target_version, location_id, io-link types). They take
// bytes (never a path), so tests and the fuzzer feed memory, and they never fail: what looks
// wrong is listed in `problems` for the caller to report with the path.
//
// Format (drivers/gpu/drm/amd/amdkfd/kfd_topology.c, node_show / iolink_show): one
// "name value\n" line per property, the value printed with %u or %llu. GPU nodes add
// max_engine_clk_fcompute, local_mem_size (always printed as 0), fw_version, capability,
// sdma_fw_version, unique_id, and in newer kernels num_xcc, debug_prop, capability2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gputriage::amd {

/// One parsed `properties` file.
struct KfdProperties {
  /// Every well-formed "name value" line in file order; a repeated name keeps its first value.
  std::vector<std::pair<std::string, uint64_t>> values;
  /// Human-readable reasons the text looked wrong ("line 3: value is not an unsigned decimal:
  /// \"simd_count -1\""); empty for a clean file.
  std::vector<std::string> problems;

  /// The value of `name`, nullopt when the file has no such line.
  std::optional<uint64_t> Get(std::string_view name) const;
};

/// Parses the text of a KFD node or io-link `properties` file. Never fails: malformed lines
/// are skipped and described in `problems` (at most a few quoted, the rest counted), and a
/// file without a single usable line says so there.
KfdProperties ParseKfdProperties(std::string_view text);

/// The LLVM target name of a KFD gfx_target_version: major = v / 10000, minor = v / 100 % 100,
/// stepping = v % 100, written "gfx" major, then minor and stepping as one hex digit each
/// (90010 -> "gfx90a", 90402 -> "gfx942", 110000 -> "gfx1100"). nullopt for 0 (CPU nodes) and
/// for values no target can have (minor or stepping above 15, major 0 or above 99).
std::optional<std::string> GfxArchName(uint64_t gfx_target_version);

/// The PCI address "dddd:bb:dd.f" of a KFD GPU node from its `domain` and `location_id`
/// (bus << 8 | devfn). nullopt when location_id does not fit 16 bits, the domain does not fit
/// 32 bits, or both are 0 (KFD's placeholder for "no PCI location").
std::optional<std::string> KfdPciAddress(uint64_t domain, uint64_t location_id);

/// The snapshot name of a KFD io-link `type` (CRAT_IOLINK_TYPE_* in kfd_crat.h): 2 -> "pcie",
/// 11 -> "xgmi", 1 -> "hypertransport", ...; "reserved" for 6, 7, 10 and "unknown" for values
/// the kernel does not define.
std::string_view IoLinkTypeName(uint64_t type);

/// What a GPU node's properties say, checked for plausibility. Unknown stays nullopt.
struct KfdGpuSummary {
  std::optional<uint64_t> gfx_target_version;
  std::optional<std::string> gfx_arch;
  /// Active compute units: simd_count / simd_per_cu (what rocminfo prints as "Compute Unit").
  std::optional<uint64_t> compute_units;
  std::optional<uint64_t> simd_count;
  std::optional<uint64_t> simd_per_cu;
  std::optional<uint64_t> wavefront_size;
  std::optional<uint64_t> max_waves_per_simd;
  std::optional<uint64_t> lds_size_kb;
  std::optional<uint64_t> num_xcc;
  std::optional<uint64_t> max_engine_clk_mhz;
  std::optional<uint64_t> vendor_id;
  std::optional<uint64_t> device_id;
  std::optional<std::string> pci_address;
  std::optional<uint64_t> drm_render_minor;
  /// Non-zero hive_id / unique_id only (0 means "none" / "not reported").
  std::optional<uint64_t> hive_id;
  std::optional<uint64_t> unique_id;
  /// Why a value that should be there is absent ("gfx_target_version 4294967295 names no gfx
  /// target"); empty when all is well.
  std::vector<std::string> problems;
};

/// True for nodes with SIMDs: GPU nodes (CPU nodes print simd_count 0).
bool IsKfdGpuNode(const KfdProperties& props);

/// Checks and derives the GPU facts of a node (call it for IsKfdGpuNode nodes). Never fails.
KfdGpuSummary SummarizeKfdGpu(const KfdProperties& props);

/// One io_links/M/properties file.
struct KfdIoLink {
  std::optional<uint64_t> type;
  std::optional<uint64_t> node_from;
  std::optional<uint64_t> node_to;
  std::optional<uint64_t> weight;
  /// Only when non-zero: KFD prints 0 when the firmware's CRAT table gives no number.
  std::optional<uint64_t> min_latency_ns;
  std::optional<uint64_t> max_latency_ns;
  std::optional<uint64_t> min_bandwidth_mbs;
  std::optional<uint64_t> max_bandwidth_mbs;
  std::optional<uint64_t> flags;
};

/// The typed view of an io-link's properties. Never fails.
KfdIoLink SummarizeKfdIoLink(const KfdProperties& props);

}  // namespace gputriage::amd
