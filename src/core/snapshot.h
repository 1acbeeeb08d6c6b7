// The environment snapshot (layer 1) as one typed model: what the collectors found about the
// host, every GPU (with its NVIDIA or AMD part), the software stack, the kernel log and the
// GPU-stack environment. Every consumer (doctor's checks, the analyzer's facts, the report, the
// snapshot diff, inspect's coverage check, the renderers) reads these members, never JSON paths.
//
// Unknown is not zero: every value a collector may fail to read is std::optional, and a
// sub-object the collector did not write is nullopt. The only raw JSON members are vendor dumps
// nobody reads (information files, KFD properties, ROCm SMI output, the Python probe's answer).
//
// The JSON form is docs/snapshot-schema.md. SnapshotFromJson is lenient (a member that is absent
// or of another type stays unknown) and never throws; ToJson writes today's layout, so saved
// snapshots and existing bundles stay readable and the round trip is exact for what collectors
// write (tested on the captured fixtures).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gputriage::core {

// ---- host ----

struct KernelRelease {
  std::optional<std::string> release;  ///< uname -r
  std::optional<std::string> version;  ///< uname -v
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("release", s.release);
    v("version", s.version);
  }
};

struct OsRelease {
  std::optional<std::string> pretty_name;
  std::optional<std::string> id;
  std::optional<std::string> version_id;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("pretty_name", s.pretty_name);
    v("id", s.id);
    v("version_id", s.version_id);
  }
};

struct CpuInfo {
  std::optional<std::string> model;
  std::optional<std::string> vendor;
  std::optional<uint64_t> logical_cpus;
  std::optional<uint64_t> flags_count;
  /// The flags GPU stacks and SIGILL triage care about: present or not.
  std::optional<std::map<std::string, bool>> flags;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("model", s.model);
    v("vendor", s.vendor);
    v("logical_cpus", s.logical_cpus);
    v("flags_count", s.flags_count);
    v("flags", s.flags);
  }
};

struct HostMemory {
  std::optional<uint64_t> total_bytes;
  std::optional<uint64_t> available_bytes;
  std::optional<uint64_t> hugepages_total;
  std::optional<uint64_t> hugepage_size_bytes;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("total_bytes", s.total_bytes);
    v("available_bytes", s.available_bytes);
    v("hugepages_total", s.hugepages_total);
    v("hugepage_size_bytes", s.hugepage_size_bytes);
  }
};

struct KernelCmdline {
  /// GPU-relevant kernel command-line flags: "iommu" -> "pt"; nullopt for a bare flag
  /// ("amd_iommu" without '=', written as true in JSON).
  std::optional<std::map<std::string, std::optional<std::string>>> flags;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("flags", s.flags);
  }
};

struct Iommu {
  std::optional<uint64_t> groups;
  std::optional<bool> enabled;
  std::optional<std::string> type;  ///< "intel-vt-d", "amd-vi"
  std::optional<uint64_t> units;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("groups", s.groups);
    v("enabled", s.enabled);
    v("type", s.type);
    v("units", s.units);
  }
};

struct Virtualization {
  std::optional<std::string> hypervisor;
  std::optional<bool> is_vm;
  std::optional<std::string> container;  ///< "docker", "podman", "kubernetes", "lxc"
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("hypervisor", s.hypervisor);
    v("is_vm", s.is_vm);
    v("container", s.container);
  }
};

struct Host {
  std::optional<std::string> hostname;
  std::optional<KernelRelease> kernel;
  std::optional<OsRelease> os;
  std::optional<CpuInfo> cpu;
  std::optional<HostMemory> memory;
  std::optional<double> uptime_s;
  std::optional<std::string> boot_time;  ///< UTC ISO-8601
  std::optional<KernelCmdline> cmdline;
  std::optional<Iommu> iommu;
  std::optional<Virtualization> virtualization;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("hostname", s.hostname);
    v("kernel", s.kernel);
    v("os", s.os);
    v("cpu", s.cpu);
    v("memory", s.memory);
    v("uptime_s", s.uptime_s);
    v("boot_time", s.boot_time);
    v("cmdline", s.cmdline);
    v("iommu", s.iommu);
    v("virtualization", s.virtualization);
  }
};

// ---- GPUs ----

struct PciLink {
  std::optional<double> current_speed_gts;
  std::optional<uint64_t> current_width;
  std::optional<double> max_speed_gts;
  std::optional<uint64_t> max_width;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("current_speed_gts", s.current_speed_gts);
    v("current_width", s.current_width);
    v("max_speed_gts", s.max_speed_gts);
    v("max_width", s.max_width);
  }
};

struct PciBar {
  std::optional<uint64_t> index;
  std::optional<uint64_t> size_bytes;
  std::optional<bool> io;
  std::optional<bool> prefetchable;
  std::optional<bool> is_64bit;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("index", s.index);
    v("size_bytes", s.size_bytes);
    v("io", s.io);
    v("prefetchable", s.prefetchable);
    v("is_64bit", s.is_64bit);
  }
};

struct AerCounts {
  std::optional<uint64_t> correctable_total;
  std::optional<uint64_t> nonfatal_total;
  std::optional<uint64_t> fatal_total;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("correctable_total", s.correctable_total);
    v("nonfatal_total", s.nonfatal_total);
    v("fatal_total", s.fatal_total);
  }
};

struct NvidiaClocks {
  std::optional<uint64_t> graphics_mhz, sm_mhz, memory_mhz;
  std::optional<uint64_t> max_graphics_mhz, max_sm_mhz, max_memory_mhz;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("graphics_mhz", s.graphics_mhz);
    v("sm_mhz", s.sm_mhz);
    v("memory_mhz", s.memory_mhz);
    v("max_graphics_mhz", s.max_graphics_mhz);
    v("max_sm_mhz", s.max_sm_mhz);
    v("max_memory_mhz", s.max_memory_mhz);
  }
};

struct NvidiaUtilization {
  std::optional<uint64_t> gpu_percent;
  std::optional<uint64_t> memory_percent;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("gpu_percent", s.gpu_percent);
    v("memory_percent", s.memory_percent);
  }
};

struct NvidiaEcc {
  std::optional<bool> mode_current;
  std::optional<bool> mode_pending;
  std::optional<uint64_t> volatile_corrected;
  std::optional<uint64_t> volatile_uncorrected;
  std::optional<uint64_t> aggregate_corrected;
  std::optional<uint64_t> aggregate_uncorrected;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("mode_current", s.mode_current);
    v("mode_pending", s.mode_pending);
    v("volatile_corrected", s.volatile_corrected);
    v("volatile_uncorrected", s.volatile_uncorrected);
    v("aggregate_corrected", s.aggregate_corrected);
    v("aggregate_uncorrected", s.aggregate_uncorrected);
  }
};

struct NvidiaRetiredPages {
  std::optional<uint64_t> single_bit_ecc;
  std::optional<uint64_t> double_bit_ecc;
  std::optional<bool> pending;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("single_bit_ecc", s.single_bit_ecc);
    v("double_bit_ecc", s.double_bit_ecc);
    v("pending", s.pending);
  }
};

struct NvidiaRemappedRows {
  std::optional<uint64_t> correctable;
  std::optional<uint64_t> uncorrectable;
  std::optional<bool> pending;
  std::optional<bool> failure;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("correctable", s.correctable);
    v("uncorrectable", s.uncorrectable);
    v("pending", s.pending);
    v("failure", s.failure);
  }
};

struct NvidiaThrottleReasons {
  std::optional<uint64_t> mask;
  /// "gpu_idle", "sw_power_cap", "hw_slowdown", ...
  std::optional<std::vector<std::string>> active;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("mask", s.mask);
    v("active", s.active);
  }
};

struct NvidiaMigMode {
  std::optional<bool> current;
  std::optional<bool> pending;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("current", s.current);
    v("pending", s.pending);
  }
};

struct NvLink {
  std::optional<uint64_t> link;
  std::optional<bool> active;
  /// The device at the link's far end (nvmlDeviceGetNvLinkRemotePciInfo_v2): "0000:c1:00.0".
  std::optional<std::string> remote_pci_address;
  /// nvmlDeviceGetNvLinkRemoteDeviceType: "gpu", "switch" (NVSwitch), "ibmnpu", "unknown".
  std::optional<std::string> remote_device_type;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("link", s.link);
    v("active", s.active);
    v("remote_pci_address", s.remote_pci_address);
    v("remote_device_type", s.remote_device_type);
  }
};

struct NvidiaPcie {
  std::optional<uint64_t> current_gen, max_gen, current_width, max_width;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("current_gen", s.current_gen);
    v("max_gen", s.max_gen);
    v("current_width", s.current_width);
    v("max_width", s.max_width);
  }
};

/// What NVML (and /proc/driver/nvidia) say about one NVIDIA GPU.
struct NvidiaGpu {
  std::optional<uint64_t> index;
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<std::string> serial;
  std::optional<std::string> vbios_version;
  std::optional<std::string> compute_capability;  ///< "9.0" for sm_90
  std::optional<uint64_t> memory_total_bytes, memory_used_bytes, memory_free_bytes, memory_reserved_bytes;
  std::optional<int64_t> temperature_c;
  std::optional<uint64_t> power_draw_mw, power_limit_mw;
  std::optional<NvidiaClocks> clocks;
  std::optional<NvidiaUtilization> utilization;
  std::optional<NvidiaEcc> ecc;
  std::optional<NvidiaRetiredPages> retired_pages;
  std::optional<NvidiaRemappedRows> remapped_rows;
  std::optional<NvidiaThrottleReasons> throttle_reasons;
  std::optional<bool> persistence_mode;
  std::optional<std::string> compute_mode;  ///< "default", "exclusive_process", ...
  std::optional<NvidiaMigMode> mig_mode;
  std::optional<std::vector<NvLink>> nvlink;
  std::optional<uint64_t> pcie_replay_counter;
  std::optional<NvidiaPcie> pcie;
  std::optional<uint64_t> device_minor;
  std::optional<bool> excluded;
  /// Per-GPU copies of the driver versions (older snapshots; today in software.nvidia).
  std::optional<std::string> driver_version, cuda_driver_version;
  std::optional<std::string> source;  ///< "procfs" when NVML was not asked (--root)
  Json procfs;                        ///< /proc/driver/nvidia/gpus/*/information, as read
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("index", s.index);
    v("name", s.name);
    v("uuid", s.uuid);
    v("serial", s.serial);
    v("vbios_version", s.vbios_version);
    v("compute_capability", s.compute_capability);
    v("memory_total_bytes", s.memory_total_bytes);
    v("memory_used_bytes", s.memory_used_bytes);
    v("memory_free_bytes", s.memory_free_bytes);
    v("memory_reserved_bytes", s.memory_reserved_bytes);
    v("temperature_c", s.temperature_c);
    v("power_draw_mw", s.power_draw_mw);
    v("power_limit_mw", s.power_limit_mw);
    v("clocks", s.clocks);
    v("utilization", s.utilization);
    v("ecc", s.ecc);
    v("retired_pages", s.retired_pages);
    v("remapped_rows", s.remapped_rows);
    v("throttle_reasons", s.throttle_reasons);
    v("persistence_mode", s.persistence_mode);
    v("compute_mode", s.compute_mode);
    v("mig_mode", s.mig_mode);
    v("nvlink", s.nvlink);
    v("pcie_replay_counter", s.pcie_replay_counter);
    v("pcie", s.pcie);
    v("device_minor", s.device_minor);
    v("excluded", s.excluded);
    v("driver_version", s.driver_version);
    v("cuda_driver_version", s.cuda_driver_version);
    v("source", s.source);
    v("procfs", s.procfs);
  }
};

struct AmdClocks {
  std::optional<uint64_t> sclk_mhz, mclk_mhz, max_sclk_mhz;
  std::optional<std::vector<uint64_t>> sclk_levels_mhz, mclk_levels_mhz;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("sclk_mhz", s.sclk_mhz);
    v("mclk_mhz", s.mclk_mhz);
    v("max_sclk_mhz", s.max_sclk_mhz);
    v("sclk_levels_mhz", s.sclk_levels_mhz);
    v("mclk_levels_mhz", s.mclk_levels_mhz);
  }
};

struct AmdPcieDpm {
  std::optional<double> current_speed_gts;
  std::optional<uint64_t> current_width;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("current_speed_gts", s.current_speed_gts);
    v("current_width", s.current_width);
  }
};

/// One RAS block's error counts (ras/<block>_err_count).
struct RasCount {
  std::optional<uint64_t> ue;  ///< uncorrectable
  std::optional<uint64_t> ce;  ///< correctable
  std::optional<uint64_t> de;  ///< deferred
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("ue", s.ue);
    v("ce", s.ce);
    v("de", s.de);
  }
};

/// What amdgpu sysfs and the KFD topology say about one AMD GPU.
struct AmdGpu {
  std::optional<std::string> gfx_arch;  ///< "gfx90a" (features not included)
  std::optional<uint64_t> gfx_target_version;
  std::optional<uint64_t> kfd_node;
  std::optional<std::vector<uint64_t>> kfd_nodes;  ///< every partition's node
  std::optional<uint64_t> gpu_id;
  std::optional<std::string> kfd_name;
  std::optional<std::string> marketing_name;
  std::optional<uint64_t> compute_units, simd_count, num_xcc, simd_per_cu, wavefront_size, max_waves_per_simd,
      lds_size_kb;
  std::optional<std::string> vendor_id, device_id;  ///< "0x1002", "0x740f"
  std::optional<std::string> xgmi_hive_id;          ///< hex
  std::optional<std::string> unique_id;             ///< hex
  std::optional<uint64_t> drm_render_minor;
  std::optional<std::string> drm_card;
  std::optional<std::string> sysfs_path;
  std::optional<std::string> runtime_status;  ///< "active", "suspended"
  std::optional<uint64_t> vram_total_bytes, vram_used_bytes, gtt_total_bytes, gtt_used_bytes;
  std::optional<std::string> vbios_version, product_name, serial_number;
  std::optional<uint64_t> busy_percent;
  std::optional<AmdClocks> clocks;
  std::optional<AmdPcieDpm> pcie_dpm;
  /// By hwmon label: "edge", "junction", "mem" (or "temp1" when unlabelled).
  std::optional<std::map<std::string, double>> temperatures_c;
  std::optional<uint64_t> power_mw, power_cap_mw, fan_rpm;
  /// By RAS block: "umc", "gfx", "sdma", ...
  std::optional<std::map<std::string, RasCount>> ras;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("gfx_arch", s.gfx_arch);
    v("gfx_target_version", s.gfx_target_version);
    v("kfd_node", s.kfd_node);
    v("kfd_nodes", s.kfd_nodes);
    v("gpu_id", s.gpu_id);
    v("kfd_name", s.kfd_name);
    v("marketing_name", s.marketing_name);
    v("compute_units", s.compute_units);
    v("simd_count", s.simd_count);
    v("num_xcc", s.num_xcc);
    v("simd_per_cu", s.simd_per_cu);
    v("wavefront_size", s.wavefront_size);
    v("max_waves_per_simd", s.max_waves_per_simd);
    v("lds_size_kb", s.lds_size_kb);
    v("vendor_id", s.vendor_id);
    v("device_id", s.device_id);
    v("xgmi_hive_id", s.xgmi_hive_id);
    v("unique_id", s.unique_id);
    v("drm_render_minor", s.drm_render_minor);
    v("drm_card", s.drm_card);
    v("sysfs_path", s.sysfs_path);
    v("runtime_status", s.runtime_status);
    v("vram_total_bytes", s.vram_total_bytes);
    v("vram_used_bytes", s.vram_used_bytes);
    v("gtt_total_bytes", s.gtt_total_bytes);
    v("gtt_used_bytes", s.gtt_used_bytes);
    v("vbios_version", s.vbios_version);
    v("product_name", s.product_name);
    v("serial_number", s.serial_number);
    v("busy_percent", s.busy_percent);
    v("clocks", s.clocks);
    v("pcie_dpm", s.pcie_dpm);
    v("temperatures_c", s.temperatures_c);
    v("power_mw", s.power_mw);
    v("power_cap_mw", s.power_cap_mw);
    v("fan_rpm", s.fan_rpm);
    v("ras", s.ras);
  }
};

/// One GPU: what the PCI scan found, with the vendor probe's part when it answered.
struct Gpu {
  std::optional<std::string> vendor;       ///< "nvidia" | "amd"
  std::optional<std::string> pci_address;  ///< "0000:00:06.0"
  std::optional<std::string> vendor_id, device_id, subsystem_vendor_id, subsystem_device_id, revision, pci_class;
  std::optional<std::string> name;      ///< the vendor probe's name (NVML, amdgpu product_name)
  std::optional<std::string> pci_name;  ///< the pci.ids name
  std::optional<std::string> driver;    ///< bound kernel driver; absent when none
  std::optional<std::string> gfx_arch;  ///< AMD: "gfx90a"
  /// "driver" when the GPU is known only from the vendor probe (not on the PCI scan).
  std::optional<std::string> source;
  std::optional<int64_t> numa_node;
  std::optional<std::string> local_cpus;  ///< the CPUs nearest the GPU (sysfs local_cpulist): "0-31,64-95"
  std::optional<uint64_t> iommu_group;
  std::optional<PciLink> link;
  std::optional<std::vector<PciBar>> bars;
  std::optional<AerCounts> aer;
  std::optional<NvidiaGpu> nvidia;
  std::optional<AmdGpu> amd;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("vendor", s.vendor);
    v("pci_address", s.pci_address);
    v("vendor_id", s.vendor_id);
    v("device_id", s.device_id);
    v("subsystem_vendor_id", s.subsystem_vendor_id);
    v("subsystem_device_id", s.subsystem_device_id);
    v("revision", s.revision);
    v("class", s.pci_class);
    v("name", s.name);
    v("pci_name", s.pci_name);
    v("driver", s.driver);
    v("gfx_arch", s.gfx_arch);
    v("source", s.source);
    v("numa_node", s.numa_node);
    v("local_cpus", s.local_cpus);
    v("iommu_group", s.iommu_group);
    v("link", s.link);
    v("bars", s.bars);
    v("aer", s.aer);
    v("nvidia", s.nvidia);
    v("amd", s.amd);
  }

  /// "0000:c1:00.0 (NVIDIA H200)": the address with the best name known.
  std::string Label() const;
  /// Device memory from the vendor probe (NVML total, amdgpu VRAM total); nullopt when unknown.
  std::optional<uint64_t> MemoryBytes() const;
};

// ---- software ----

struct KernelModule {
  std::optional<bool> loaded;
  std::optional<std::string> version;
  std::optional<std::string> srcversion;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("loaded", s.loaded);
    v("version", s.version);
    v("srcversion", s.srcversion);
  }
};

/// A package: dpkg (name, version, source "dpkg") or Python (name, version, path of its site).
struct Package {
  std::optional<std::string> name;
  std::optional<std::string> version;
  std::optional<std::string> source;  ///< "dpkg", "rpm"
  std::optional<std::string> arch;    ///< rpm's %{ARCH}: "x86_64", "noarch"
  std::optional<std::string> path;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("name", s.name);
    v("version", s.version);
    v("source", s.source);
    v("arch", s.arch);
    v("path", s.path);
  }
};

/// A CUDA toolkit (/usr/local/cuda*) or a ROCm installation (/opt/rocm*).
struct Installation {
  std::optional<std::string> path;
  std::optional<std::string> version;
  std::optional<std::string> version_source;  ///< ROCm: which file said it
  std::optional<std::string> link_target;     ///< the path is a symbolic link to this
  std::optional<std::string> resolves_to;     ///< ROCm: the real directory
  std::optional<std::string> nvcc;            ///< CUDA: its nvcc
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("path", s.path);
    v("version", s.version);
    v("version_source", s.version_source);
    v("link_target", s.link_target);
    v("resolves_to", s.resolves_to);
    v("nvcc", s.nvcc);
  }
};

struct Installations {
  std::optional<std::vector<Installation>> installations;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("installations", s.installations);
  }
};

/// A GPU library on the loader path: "libcuda" "libcuda.so.580.159.04" at its path.
struct GpuLibrary {
  std::optional<std::string> name;
  std::optional<std::string> file;
  std::optional<std::string> path;
  std::optional<std::string> version;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("name", s.name);
    v("file", s.file);
    v("path", s.path);
    v("version", s.version);
  }
};

/// PyTorch as installed (torch/version.py, read without starting Python).
struct TorchInstall {
  std::optional<std::string> version;
  std::optional<std::string> cuda;  ///< the CUDA it was built for
  std::optional<std::string> hip;   ///< the HIP it was built for
  std::optional<std::string> git_version;
  std::optional<std::string> debug;
  std::optional<std::string> path;     ///< .../site-packages/torch
  std::optional<std::string> lib_dir;  ///< .../site-packages/torch/lib
  std::optional<std::vector<std::string>> bundled_libraries;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("version", s.version);
    v("cuda", s.cuda);
    v("hip", s.hip);
    v("git_version", s.git_version);
    v("debug", s.debug);
    v("path", s.path);
    v("lib_dir", s.lib_dir);
    v("bundled_libraries", s.bundled_libraries);
  }
};

struct PythonSoftware {
  std::optional<std::vector<std::string>> site_packages;
  std::optional<std::vector<Package>> packages;
  std::optional<TorchInstall> torch;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("site_packages", s.site_packages);
    v("packages", s.packages);
    v("torch", s.torch);
  }
};

/// A compiler (software.compilers: gcc, g++, clang, clang++ and their versioned names, nvcc,
/// hipcc, amdclang++) or a build tool (software.tools: cmake) found at a fixed path. The version
/// comes from running `PATH --version` under a watchdog, on the live machine only; under --root
/// only name and path are known.
struct Compiler {
  std::optional<std::string> name;
  std::optional<std::string> path;
  std::optional<std::string> version;       ///< "12.2.0"; nvcc "13.0.88"; hipcc "5.2.21153-0"
  std::optional<std::string> version_line;  ///< the output line the version was read from
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("name", s.name);
    v("path", s.path);
    v("version", s.version);
    v("version_line", s.version_line);
  }
};

/// The C library that the system's programs load (libc.so.6 on the loader path).
struct Glibc {
  std::optional<std::string> version;         ///< "2.36"
  std::optional<std::string> version_source;  ///< "confstr" (live), "banner" or "file_name" (in the file)
  std::optional<std::string> path;            ///< "/lib/x86_64-linux-gnu/libc.so.6"
  /// The highest GLIBC_x.y symbol version libc.so.6 defines ("GLIBC_2.36"): what a binary
  /// built here may require.
  std::optional<std::string> max_symbol_version;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("version", s.version);
    v("version_source", s.version_source);
    v("path", s.path);
    v("max_symbol_version", s.max_symbol_version);
  }
};

/// libstdc++.so.6 on the loader path and the highest symbol versions it defines (its ELF
/// version definitions): what C++ binaries and Python extensions built elsewhere may require.
struct Libstdcxx {
  std::optional<std::string> path;     ///< as found on the loader path ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
  std::optional<std::string> file;     ///< the file it resolves to ("libstdc++.so.6.0.30")
  std::optional<std::string> glibcxx;  ///< "GLIBCXX_3.4.30"
  std::optional<std::string> cxxabi;   ///< "CXXABI_1.3.13"
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("path", s.path);
    v("file", s.file);
    v("glibcxx", s.glibcxx);
    v("cxxabi", s.cxxabi);
  }
};

/// /proc/driver/nvidia/version and the GPUs' information files.
struct NvidiaProcfs {
  std::optional<std::string> version_line;
  std::optional<std::string> driver_version;
  std::optional<std::string> kernel_module;  ///< "open" or "proprietary"
  std::optional<std::string> arch;
  std::optional<std::string> gcc_version;
  Json gpus;  ///< information files by PCI address, as read
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("version_line", s.version_line);
    v("driver_version", s.driver_version);
    v("kernel_module", s.kernel_module);
    v("arch", s.arch);
    v("gcc_version", s.gcc_version);
    v("gpus", s.gpus);
  }
};

/// The NVIDIA probe's system-wide data.
struct NvidiaSoftware {
  std::optional<std::string> driver_version;
  std::optional<std::string> cuda_driver_version;  ///< "13.0"
  std::optional<std::string> nvml_version;
  std::optional<std::string> nvml_library;
  std::optional<uint64_t> device_count;  ///< nvmlDeviceGetCount
  std::optional<NvidiaProcfs> procfs;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("driver_version", s.driver_version);
    v("cuda_driver_version", s.cuda_driver_version);
    v("nvml_version", s.nvml_version);
    v("nvml_library", s.nvml_library);
    v("device_count", s.device_count);
    v("procfs", s.procfs);
  }
};

/// The AMD probe's system-wide data.
struct AmdSoftware {
  std::optional<Installations> rocm;
  Json kfd;                                ///< KFD topology nodes (raw properties) and io_links, as read
  Json smi;                                ///< ROCm SMI's answers, as read
  Json amd_smi;                            ///< AMD SMI's answers, as read
  std::optional<std::string> smi_library;  ///< "amd_smi" or "rocm_smi": which one answered
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("rocm", s.rocm);
    v("kfd", s.kfd);
    v("smi", s.smi);
    v("amd_smi", s.amd_smi);
    v("smi_library", s.smi_library);
  }
};

struct Software {
  std::optional<std::map<std::string, KernelModule>> kernel_modules;
  std::optional<std::vector<Package>> packages;
  std::optional<Installations> cuda;
  std::optional<std::vector<GpuLibrary>> libraries;
  std::optional<PythonSoftware> python;
  std::optional<std::vector<Compiler>> compilers;
  std::optional<std::vector<Compiler>> tools;  ///< build tools: cmake
  std::optional<Glibc> glibc;
  std::optional<Libstdcxx> libstdcxx;
  std::optional<NvidiaSoftware> nvidia;
  std::optional<AmdSoftware> amd;
  Json python_probe;           ///< `--python`'s answer (torch/jax/tensorflow), as printed
  Json nvidia_unmatched_gpus;  ///< probe GPUs without a PCI address, as reported
  Json amd_unmatched_gpus;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("kernel_modules", s.kernel_modules);
    v("packages", s.packages);
    v("cuda", s.cuda);
    v("libraries", s.libraries);
    v("python", s.python);
    v("compilers", s.compilers);
    v("tools", s.tools);
    v("glibc", s.glibc);
    v("libstdcxx", s.libstdcxx);
    v("nvidia", s.nvidia);
    v("amd", s.amd);
    v("python_probe", s.python_probe);
    v("nvidia_unmatched_gpus", s.nvidia_unmatched_gpus);
    v("amd_unmatched_gpus", s.amd_unmatched_gpus);
  }
};

// ---- kernel log ----

struct XidRecord {
  std::optional<uint64_t> code;
  std::optional<std::string> pci;
  std::optional<uint64_t> pid;
  std::optional<std::string> process;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("code", s.code);
    v("pci", s.pci);
    v("pid", s.pid);
    v("process", s.process);
  }
};

struct KernelLogRecord {
  std::optional<uint64_t> seq;
  std::optional<double> monotonic_s;
  std::optional<std::string> time;  ///< UTC ISO-8601 with milliseconds
  std::optional<uint64_t> priority;
  std::optional<uint64_t> facility;
  std::optional<std::string> log_class;  ///< "nvidia.xid", "amdgpu", ... (JSON "class")
  std::optional<std::string> message;
  std::optional<XidRecord> xid;
  std::optional<std::string> boot;     ///< "previous" for a record of the boot before; absent: this boot
  std::optional<std::string> boot_id;  ///< the journal's boot id (32 hex digits), with `boot`
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("seq", s.seq);
    v("monotonic_s", s.monotonic_s);
    v("time", s.time);
    v("priority", s.priority);
    v("facility", s.facility);
    v("class", s.log_class);
    v("message", s.message);
    v("xid", s.xid);
    v("boot", s.boot);
    v("boot_id", s.boot_id);
  }
};

/// The previous boot's GPU records, from the persistent systemd journal.
struct PreviousBootKernelLog {
  std::optional<std::string> source;            ///< "journal"
  std::optional<std::string> journal;           ///< the directory read ("/var/log/journal")
  std::optional<std::string> boot_id;           ///< 32 hex digits
  std::optional<std::string> first_entry_time;  ///< UTC ISO-8601: the boot's first journal entry
  std::optional<std::string> last_entry_time;   ///< UTC ISO-8601: its last entry, where it ended
  std::optional<uint64_t> records_total;        ///< kernel entries read
  std::optional<uint64_t> gpu_records_total;
  std::optional<uint64_t> malformed_records;
  std::optional<bool> truncated;
  std::optional<std::map<std::string, uint64_t>> counts;  ///< by class
  std::optional<std::vector<KernelLogRecord>> records;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("source", s.source);
    v("journal", s.journal);
    v("boot_id", s.boot_id);
    v("first_entry_time", s.first_entry_time);
    v("last_entry_time", s.last_entry_time);
    v("records_total", s.records_total);
    v("gpu_records_total", s.gpu_records_total);
    v("malformed_records", s.malformed_records);
    v("truncated", s.truncated);
    v("counts", s.counts);
    v("records", s.records);
  }
};

struct KernelLog {
  std::optional<std::string> source;  ///< "/dev/kmsg", "syslog", "file"
  std::optional<std::string> boot_time;
  std::optional<uint64_t> records_total;
  std::optional<uint64_t> gpu_records_total;
  std::optional<uint64_t> malformed_records;
  std::optional<bool> truncated;
  std::optional<double> since_monotonic_s;
  std::optional<std::map<std::string, uint64_t>> counts;  ///< by class
  std::optional<std::vector<KernelLogRecord>> records;
  std::optional<PreviousBootKernelLog> previous_boot;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("source", s.source);
    v("boot_time", s.boot_time);
    v("records_total", s.records_total);
    v("gpu_records_total", s.gpu_records_total);
    v("malformed_records", s.malformed_records);
    v("truncated", s.truncated);
    v("since_monotonic_s", s.since_monotonic_s);
    v("counts", s.counts);
    v("records", s.records);
    v("previous_boot", s.previous_boot);
  }
};

// ---- environment ----

struct Environment {
  /// GPU-stack variables, secrets already redacted ("<redacted>").
  std::optional<std::map<std::string, std::string>> variables;
  std::optional<std::vector<std::string>> redacted;  ///< names whose value was redacted
  std::optional<uint64_t> count_total;               ///< every variable, collected or not
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("variables", s.variables);
    v("redacted", s.redacted);
    v("count_total", s.count_total);
  }

  /// The value of `name`, nullopt when it was not set (or not collected).
  std::optional<std::string> Get(std::string_view name) const;
};

// ---- topology ----

/// Peer-to-peer support between two GPUs, per capability (nvmlDeviceGetP2PStatus): "ok",
/// "chipset_not_supported", "gpu_not_supported", "ioh_topology_not_supported",
/// "disabled_by_regkey", "not_supported", "unknown".
struct PeerAccess {
  std::optional<std::string> read, write, nvlink, atomics;
  /// The first of read and write whose status is known and not "ok": {"read", "not_supported"};
  /// nullopt when neither is refused.
  std::optional<std::pair<std::string, std::string>> Refused() const {
    if (read && *read != "ok") return std::make_pair(std::string("read"), *read);
    if (write && *write != "ok") return std::make_pair(std::string("write"), *write);
    return std::nullopt;
  }
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("read", s.read);
    v("write", s.write);
    v("nvlink", s.nvlink);
    v("atomics", s.atomics);
  }
};

/// How two GPUs of the machine reach each other.
struct GpuPeer {
  std::optional<std::string> a, b;  ///< the two GPUs' PCI addresses
  /// The connection in `nvidia-smi topo -m`'s words: "NV12" (a bonded set of 12 NVLinks),
  /// "PIX", "PXB", "PHB", "NODE", "SYS" (PCIe paths, nearest first), "XGMI" (AMD).
  std::optional<std::string> path;
  /// The PCIe common ancestor alone (nvmlDeviceGetTopologyCommonAncestor), in the same words.
  std::optional<std::string> pcie_path;
  std::optional<uint64_t> nvlinks;  ///< active NVLinks between them (through NVSwitches: the fewer of the two GPUs')
  std::optional<bool> via_switch;   ///< their NVLinks meet in NVSwitches, not GPU to GPU
  std::optional<PeerAccess> p2p;
  std::optional<std::string> source;  ///< "nvml", "kfd"
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("a", s.a);
    v("b", s.b);
    v("path", s.path);
    v("pcie_path", s.pcie_path);
    v("nvlinks", s.nvlinks);
    v("via_switch", s.via_switch);
    v("p2p", s.p2p);
    v("source", s.source);
  }
};

struct Topology {
  std::optional<std::vector<GpuPeer>> peers;  ///< one per pair of GPUs of one vendor
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("peers", s.peers);
  }
};

// ---- the snapshot ----

struct Snapshot {
  std::optional<int64_t> schema_version;
  std::optional<std::string> tool_version;
  std::optional<std::string> collected_at;  ///< UTC ISO-8601
  std::optional<double> collection_ms;
  /// Each collector's own time in ms ("software.toolchain", "kernel_log", "nvidia"); they run in
  /// parallel, so the slowest sets collection_ms.
  std::optional<std::map<std::string, double>> collector_ms;
  std::optional<std::string> root;  ///< --root; nullopt on the live machine (JSON null)
  std::optional<int64_t> id;        ///< the history database's id, when saved
  std::optional<Host> host;
  std::optional<std::vector<Gpu>> gpus;  ///< nullopt: the GPU scan did not happen
  std::optional<Topology> topology;      ///< between the GPUs; absent with fewer than two
  std::optional<Software> software;
  std::optional<KernelLog> kernel_log;
  std::optional<Environment> env;
  std::vector<NotCollected> not_collected;
  std::vector<Finding> findings;  ///< raised while collecting (a hung probe, ...)
  /// Not part of the JSON form: members the lenient reading left out because they had another
  /// type than the schema's ("host.cpu.logical_cpus: a string where an integer belongs"), at
  /// most 64. Empty for every snapshot gputriage writes.
  std::vector<std::string> read_problems;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("schema_version", s.schema_version);
    v("tool_version", s.tool_version);
    v("collected_at", s.collected_at);
    v("collection_ms", s.collection_ms);
    v("collector_ms", s.collector_ms);
    v("root", s.root);
    v("id", s.id);
    v("host", s.host);
    v("gpus", s.gpus);
    v("topology", s.topology);
    v("software", s.software);
    v("kernel_log", s.kernel_log);
    v("env", s.env);
    v("not_collected", s.not_collected);
    v("findings", s.findings);
  }

  /// The GPUs, or an empty list when the scan did not happen.
  const std::vector<Gpu>& GpuList() const;
  /// software.python.torch, or null.
  const TorchInstall* Torch() const;
  /// env.variables[name], nullopt when unset.
  std::optional<std::string> EnvValue(std::string_view name) const;
};

/// A GPU of a snapshot by its code architecture: "sm_90" or "gfx90a", with the full target id
/// ("gfx90a:sramecc+:xnack-") when the features are known.
struct GpuArch {
  std::string arch;
  std::string target_id;
  std::string pci_address;
};

/// The architectures of `snapshot`'s GPUs (NVIDIA from the compute capability, AMD from the
/// gfx target), in GPU order; GPUs whose architecture is unknown are left out.
std::vector<GpuArch> GpuArchitectures(const Snapshot& snapshot);

/// "gfx90a:sramecc+:xnack-" -> "gfx90a".
std::string ProcessorOfTarget(std::string_view target_id);

/// The largest snapshot file gputriage reads (a file, standard input, a bundle's snapshot.json).
/// Collected snapshots are 12 KiB (the captured H200 tree) to about 60 KiB on a live machine;
/// 2,000 kernel-log records and vendor dumps of 8 GPUs stay within a few MiB.
inline constexpr size_t kSnapshotMaxBytes = 32u << 20;

/// Checks that `json` is a snapshot this build can read (an object with an integer
/// schema_version from 1 to kSnapshotSchemaVersion); the error names `source`.
Result<void> CheckSnapshotVersion(const Json& json, std::string_view source);

/// The typed snapshot of `json` after CheckSnapshotVersion. Lenient: a member that is absent or
/// of another type stays unknown. Never throws.
Result<Snapshot> SnapshotFromJson(const Json& json, std::string_view source);

/// Lenient reading without the version check, for snapshots this process built itself (the
/// collectors' assembled sections) and for tests. Never throws.
Snapshot SnapshotFromJsonUnchecked(const Json& json);

/// The JSON form (docs/snapshot-schema.md): exactly what the collectors wrote, for every member
/// this model knows.
Json ToJson(const Snapshot& snapshot);

/// The JSON form of one part, as ToJson(Snapshot) writes it inside the snapshot: for outputs
/// that quote a part (the snapshot diff's before and after values).
Json ToJson(const PciLink& link);
Json ToJson(const GpuPeer& peer);
Json ToJson(const KernelModule& module);
Json ToJson(const Package& package);
Json ToJson(const Installation& installation);
Json ToJson(const GpuLibrary& library);
Json ToJson(const Compiler& compiler);

}  // namespace gputriage::core
