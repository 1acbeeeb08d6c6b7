#include "store/diff.h"

#include <gtest/gtest.h>

#include <functional>

namespace gputriage::store {
namespace {

using core::Json;

// The diff reads the typed model; the tests write snapshots in their JSON form.
std::vector<Change> DiffSnapshots(const Json& before, const Json& after) {
  return store::DiffSnapshots(core::SnapshotFromJsonUnchecked(before), core::SnapshotFromJsonUnchecked(after));
}

// An H100 node as `gputriage snapshot --json` describes it (docs/snapshot-schema.md).
Json NvidiaSnapshot() {
  return Json::parse(R"({
    "schema_version": 1,
    "tool_version": "0.1.0",
    "collected_at": "2026-12-02T13:30:00Z",
    "collection_ms": 83.1,
    "root": null,
    "host": {
      "hostname": "gpu-node-07",
      "kernel": {"release": "6.8.0-45-generic", "version": "#45-Ubuntu SMP PREEMPT_DYNAMIC"},
      "os": {"pretty_name": "Ubuntu 24.04.1 LTS", "id": "ubuntu", "version_id": "24.04"},
      "cpu": {"model": "AMD EPYC 9654 96-Core Processor", "logical_cpus": 192, "flags_count": 120,
              "flags": {"avx": true, "avx2": true, "avx512f": true}},
      "memory": {"total_bytes": 1622561406976, "available_bytes": 1500000000000,
                 "hugepages_total": 0, "hugepage_size_bytes": 2097152},
      "uptime_s": 86400.5,
      "boot_time": "2026-12-01T13:30:00Z",
      "cmdline": {"flags": {"iommu": "pt", "amd_iommu": "on", "quiet": ""}},
      "iommu": {"groups": 96, "enabled": true},
      "virtualization": {"hypervisor": null, "container": null}
    },
    "gpus": [
      {
        "vendor": "nvidia", "pci_address": "0000:18:00.0",
        "vendor_id": "0x10de", "device_id": "0x2330", "subsystem_vendor_id": "0x10de",
        "subsystem_device_id": "0x16c1", "revision": "0xa1",
        "name": "NVIDIA H100 80GB HBM3", "pci_name": "GH100 [H100 SXM5 80GB]",
        "driver": "nvidia", "numa_node": 0, "iommu_group": 12,
        "link": {"current_speed_gts": 32.0, "current_width": 16, "max_speed_gts": 32.0,
                 "max_width": 16},
        "bars": [{"index": 0, "size_bytes": 16777216, "prefetchable": false, "is_64bit": true}],
        "aer": {"correctable_total": 0, "nonfatal_total": 0, "fatal_total": 0},
        "nvidia": {
          "pci_address": "0000:18:00.0", "index": 0, "name": "NVIDIA H100 80GB HBM3",
          "uuid": "GPU-5a1b2c3d-0000-1111-2222-333344445555", "serial": "1654922000123",
          "vbios_version": "96.00.89.00.01",
          "memory_total_bytes": 85520809984, "memory_used_bytes": 553648128,
          "temperature_c": 34, "power_draw_mw": 71234, "power_limit_mw": 700000,
          "clocks": {"graphics_mhz": 345, "sm_mhz": 345, "memory_mhz": 2619,
                     "max_graphics_mhz": 1980, "max_sm_mhz": 1980, "max_memory_mhz": 2619},
          "utilization": {"gpu_percent": 0, "memory_percent": 0},
          "ecc": {"mode_current": true, "mode_pending": true, "volatile_corrected": 0,
                  "volatile_uncorrected": 0, "aggregate_corrected": 2, "aggregate_uncorrected": 0},
          "retired_pages": {"single_bit_ecc": 0, "double_bit_ecc": 0, "pending": false},
          "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": false,
                            "failure": false},
          "throttle_reasons": {"mask": 1, "active": ["gpu_idle"]},
          "persistence_mode": true, "compute_mode": "default",
          "mig_mode": {"current": false, "pending": false},
          "nvlink": [{"link": 0, "active": true}],
          "pcie_replay_counter": 0,
          "pcie": {"current_gen": 5, "max_gen": 5, "current_width": 16, "max_width": 16}
        }
      },
      {
        "vendor": "nvidia", "pci_address": "0000:2a:00.0",
        "vendor_id": "0x10de", "device_id": "0x2330",
        "name": "NVIDIA H100 80GB HBM3", "pci_name": "GH100 [H100 SXM5 80GB]",
        "driver": "nvidia",
        "link": {"current_speed_gts": 32.0, "current_width": 16, "max_speed_gts": 32.0,
                 "max_width": 16},
        "nvidia": {"uuid": "GPU-77777777-8888-9999-aaaa-bbbbccccdddd", "serial": "1654922000456",
                   "vbios_version": "96.00.89.00.01", "temperature_c": 31}
      }
    ],
    "software": {
      "kernel_modules": {"nvidia": {"version": "550.90.07", "srcversion": "A1B2C3D4E5F6A7B8C9D0E1F"}},
      "nvidia": {"driver_version": "550.90.07", "cuda_driver_version": "12.4",
                 "nvml_version": "12.550.90.07"},
      "packages": [
        {"name": "nvidia-driver-550", "version": "550.90.07-0ubuntu1", "source": "dpkg"},
        {"name": "cuda-toolkit-12-4", "version": "12.4.1-1", "source": "dpkg"},
        {"name": "libnccl2", "version": "2.21.5-1+cuda12.4", "source": "dpkg"}
      ],
      "cuda": {"installations": [{"path": "/usr/local/cuda-12.4", "version": "12.4.1"}]},
      "libraries": [
        {"name": "libcuda.so.1", "path": "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
         "version": "550.90.07"},
        {"name": "libnccl.so.2", "path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
         "version": "2.21.5"}
      ],
      "python": {
        "site_packages": ["/opt/venv/lib/python3.12/site-packages"],
        "packages": [
          {"name": "torch", "version": "2.4.1+cu124", "path": "/opt/venv/lib/python3.12/site-packages"},
          {"name": "numpy", "version": "1.26.4", "path": "/opt/venv/lib/python3.12/site-packages"},
          {"name": "nvidia_nccl_cu12", "version": "2.20.5", "path": "/opt/venv/lib/python3.12/site-packages"}
        ],
        "torch": {"version": "2.4.1+cu124", "cuda": "12.4", "hip": null,
                  "bundled_libraries": ["libcudart.so.12"]}
      },
      "compilers": [{"name": "nvcc", "path": "/usr/local/cuda-12.4/bin/nvcc"}]
    },
    "kernel_log": {
      "source": "/dev/kmsg", "boot_time": "2026-12-01T13:30:00Z", "records_total": 4210,
      "gpu_records_total": 2, "truncated": false,
      "counts": {"nvidia.nvrm": 2},
      "records": [
        {"seq": 812, "monotonic_s": 12.5, "time": "2026-12-01T13:30:12Z", "priority": 6,
         "class": "nvidia.nvrm", "message": "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07"},
        {"seq": 813, "monotonic_s": 12.6, "time": "2026-12-01T13:30:12Z", "priority": 6,
         "class": "nvidia.nvrm", "message": "NVRM: GPU 0000:18:00.0: RmInitAdapter succeeded"}
      ]
    },
    "env": {"variables": {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "WARN",
                          "LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64",
                          "HF_TOKEN": "<redacted>"},
            "redacted": ["HF_TOKEN"]},
    "not_collected": [],
    "findings": []
  })");
}

// An MI300X node.
Json AmdSnapshot() {
  return Json::parse(R"({
    "schema_version": 1,
    "tool_version": "0.1.0",
    "collected_at": "2026-12-02T13:30:00Z",
    "collection_ms": 121.7,
    "root": null,
    "host": {
      "hostname": "mi300-03",
      "kernel": {"release": "5.15.0-119-generic", "version": "#129-Ubuntu SMP"},
      "os": {"pretty_name": "Ubuntu 22.04.4 LTS", "id": "ubuntu", "version_id": "22.04"},
      "memory": {"total_bytes": 2164154028032, "available_bytes": 2100000000000},
      "uptime_s": 3600,
      "cmdline": {"flags": {"iommu": "pt", "amdgpu.noretry": "1"}},
      "iommu": {"groups": 204, "enabled": true}
    },
    "gpus": [
      {
        "vendor": "amd", "pci_address": "0000:c1:00.0",
        "vendor_id": "0x1002", "device_id": "0x74a1", "revision": "0x00",
        "name": "AMD Instinct MI300X", "pci_name": "Aqua Vanjaram [Instinct MI300X]",
        "driver": "amdgpu", "gfx_arch": "gfx942",
        "link": {"current_speed_gts": 32.0, "current_width": 16, "max_speed_gts": 32.0,
                 "max_width": 16},
        "amd": {
          "pci_address": "0000:c1:00.0", "gfx_arch": "gfx942", "gfx_target_version": 90402,
          "kfd_node": 2, "marketing_name": "AMD Instinct MI300X", "compute_units": 304,
          "vram_total_bytes": 206141652992, "vram_used_bytes": 296689664,
          "gtt_total_bytes": 1082077016064, "gtt_used_bytes": 15220736, "busy_percent": 0,
          "clocks": {"sclk_mhz": 132, "mclk_mhz": 900},
          "temperatures_c": {"edge": 38, "junction": 41, "mem": 36},
          "power_mw": 138000, "power_cap_mw": 750000, "fan_rpm": null,
          "ras": {"umc": {"ue": 0, "ce": 1}, "gfx": {"ue": 0, "ce": 0}},
          "unique_id": "0x61d7a3f0b2c4e5d1", "vbios_version": "113-M3000100-102",
          "product_name": "AMD Instinct MI300X OAM", "serial_number": "692325000123"
        }
      }
    ],
    "software": {
      "kernel_modules": {"amdgpu": {"version": "6.8.5", "srcversion": "0123456789ABCDEF01234567"}},
      "packages": [
        {"name": "rocm-core", "version": "6.3.3.60303-74~22.04", "source": "dpkg"},
        {"name": "hip-runtime-amd", "version": "6.3.42134.60303-74~22.04", "source": "dpkg"},
        {"name": "amdgpu-dkms", "version": "1:6.10.5.60303-2109964.22.04", "source": "dpkg"}
      ],
      "amd": {"rocm": {"installations": [{"path": "/opt/rocm-6.3.3", "version": "6.3.3"}]}},
      "libraries": [{"name": "libamdhip64.so.6", "path": "/opt/rocm-6.3.3/lib/libamdhip64.so.6",
                     "version": "6.3.42134"}],
      "python": {
        "packages": [{"name": "torch", "version": "2.5.1+rocm6.2"},
                     {"name": "triton", "version": "3.1.0"}],
        "torch": {"version": "2.5.1+rocm6.2", "cuda": null, "hip": "6.2.41133"}
      }
    },
    "kernel_log": {
      "source": "/dev/kmsg", "records_total": 9001, "gpu_records_total": 1, "truncated": false,
      "counts": {"amdgpu": 1},
      "records": [{"seq": 1, "monotonic_s": 5.0, "priority": 6, "class": "amdgpu",
                   "message": "amdgpu 0000:c1:00.0: amdgpu: SMU is initialized successfully!"}]
    },
    "env": {"variables": {"HIP_VISIBLE_DEVICES": "0", "HSA_ENABLE_SDMA": "0"}, "redacted": []},
    "not_collected": [],
    "findings": []
  })");
}

// The changes from `base` to a copy of it that `mutate` edited.
std::vector<Change> DiffAfter(const Json& base, const std::function<void(Json&)>& mutate) {
  Json after = base;
  mutate(after);
  return DiffSnapshots(base, after);
}

// Prints a list of changes, so a failing test shows what it got.
std::string Show(const std::vector<Change>& changes) { return DiffToJson(changes).dump(2); }

Json& NvidiaGpu(Json& snapshot) { return snapshot["gpus"][0]; }
Json& AmdGpu(Json& snapshot) { return snapshot["gpus"][0]; }

TEST(DiffSnapshots, IdenticalSnapshotsHaveNoChanges) {
  EXPECT_TRUE(DiffSnapshots(NvidiaSnapshot(), NvidiaSnapshot()).empty());
  EXPECT_TRUE(DiffSnapshots(AmdSnapshot(), AmdSnapshot()).empty());
}

TEST(DiffSnapshots, VolatileReadingsAreNotChanges) {
  auto nvidia = DiffAfter(NvidiaSnapshot(), [](Json& s) {
    s["collected_at"] = "2026-12-09T08:00:00Z";
    s["collection_ms"] = 412.9;
    s["host"]["uptime_s"] = 5.0;
    s["host"]["boot_time"] = "2026-12-09T07:59:55Z";
    s["host"]["memory"]["available_bytes"] = 1000000000;
    s["host"]["memory"]["total_bytes"] = 1622561406976 - (64ll << 20);  // reserved memory moved
    Json& gpu = s["gpus"][0]["nvidia"];
    gpu["temperature_c"] = 81;
    gpu["power_draw_mw"] = 689000;
    gpu["memory_used_bytes"] = 80000000000;
    gpu["clocks"]["graphics_mhz"] = 1980;
    gpu["clocks"]["sm_mhz"] = 1980;
    gpu["utilization"] = {{"gpu_percent", 100}, {"memory_percent", 87}};
    gpu["throttle_reasons"] = {{"mask", 4}, {"active", {"sw_power_cap"}}};
    // Counters that reset with a driver reload only ever count as changes when they grow.
    gpu["ecc"]["aggregate_corrected"] = 1;
    s["kernel_log"]["records_total"] = 9999;
    s["kernel_log"]["counts"]["nvidia.nvrm"] = 40;
  });
  EXPECT_TRUE(nvidia.empty()) << Show(nvidia);
  auto amd = DiffAfter(AmdSnapshot(), [](Json& s) {
    Json& gpu = s["gpus"][0]["amd"];
    gpu["busy_percent"] = 100;
    gpu["vram_used_bytes"] = 190000000000;
    gpu["gtt_used_bytes"] = 1000000;
    gpu["temperatures_c"] = {{"edge", 70}, {"junction", 95}, {"mem", 80}};
    gpu["power_mw"] = 749000;
    gpu["clocks"] = {{"sclk_mhz", 2100}, {"mclk_mhz", 1300}};
  });
  EXPECT_TRUE(amd.empty()) << Show(amd);
}

TEST(DiffSnapshots, UnknownIsNotAChange) {
  // The later snapshot ran without NVML, without kmsg access and without --python: what it
  // could not read is missing, which must not read as "removed".
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) {
    for (Json& gpu : s["gpus"]) {
      gpu.erase("nvidia");
      gpu["name"] = gpu["pci_name"];  // pci.ids name when the driver did not answer
      gpu["link"]["current_speed_gts"] = nullptr;
    }
    s["software"].erase("python");
    s["software"].erase("nvidia");
    s["software"]["packages"] = nullptr;
    s.erase("kernel_log");
    s["env"] = "garbage";
    s["not_collected"] = {{{"item", "kernel_log"}, {"reason", "no permission"}}};
  });
  EXPECT_TRUE(changes.empty()) << Show(changes);
}

TEST(DiffSnapshots, NonObjectsAndOddShapesYieldNoChangesAndDoNotThrow) {
  EXPECT_TRUE(DiffSnapshots(Json(), Json()).empty());
  EXPECT_TRUE(DiffSnapshots(Json(5), Json::array({1, 2})).empty());
  EXPECT_TRUE(DiffSnapshots(NvidiaSnapshot(), Json("x")).empty());
  Json odd = {{"gpus", {1, "two", nullptr, Json::array()}},
              {"software", {{"packages", {{{"name", 5}}, "x"}}, {"kernel_modules", 3}}},
              {"kernel_log", {{"counts", {{"x", "many"}}}, {"records", {1, {{"xid", 3}}}}}},
              {"host", {{"cmdline", {{"flags", Json::array()}}}}}};
  EXPECT_TRUE(DiffSnapshots(odd, odd).empty());
  // The malformed entries are skipped; the well-formed sections still compare.
  std::vector<std::string> got;
  for (const Change& change : DiffSnapshots(odd, NvidiaSnapshot())) {
    got.push_back(change.kind + " " + change.path);
  }
  EXPECT_EQ(got, (std::vector<std::string>{
                     "kernel_log_new_class kernel_log.counts[nvidia.nvrm]",
                     "gpu_added gpus[0000:18:00.0]",
                     "gpu_added gpus[0000:2a:00.0]",
                     "component_added software.packages[cuda-toolkit-12-4]",
                     "component_added software.packages[libnccl2]",
                     "component_added software.packages[nvidia-driver-550]",
                 }));
}

TEST(DiffSnapshots, GpuRemovedAndAddedMatchByPciAddress) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) { s["gpus"][1]["pci_address"] = "0000:9a:00.0"; });
  ASSERT_EQ(changes.size(), 2u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "gpu_removed");
  EXPECT_EQ(changes[0].path, "gpus[0000:2a:00.0]");
  EXPECT_EQ(changes[0].summary, "GPU 0000:2a:00.0 (NVIDIA H100 80GB HBM3) is gone");
  EXPECT_EQ(changes[0].before, (Json{{"pci_address", "0000:2a:00.0"},
                                     {"vendor", "nvidia"},
                                     {"name", "NVIDIA H100 80GB HBM3"},
                                     {"device_id", "0x2330"},
                                     {"uuid", "GPU-77777777-8888-9999-aaaa-bbbbccccdddd"},
                                     {"serial", "1654922000456"}}));
  EXPECT_TRUE(changes[0].after.is_null());
  EXPECT_EQ(changes[1].kind, "gpu_added");
  EXPECT_EQ(changes[1].path, "gpus[0000:9a:00.0]");
  EXPECT_TRUE(changes[1].before.is_null());
  EXPECT_EQ(changes[1].summary, "GPU 0000:9a:00.0 (NVIDIA H100 80GB HBM3) appeared");
}

// Two GPUs of the H100 node joined through NVSwitches, as the NVML probe writes the pair.
Json WithPeer(Json snapshot, const std::string& path, uint64_t nvlinks, const std::string& read) {
  Json peer{{"a", "0000:18:00.0"},
            {"b", "0000:2a:00.0"},
            {"path", path},
            {"pcie_path", "NODE"},
            {"p2p", {{"read", read}, {"write", read}}},
            {"source", "nvml"}};
  if (nvlinks > 0) peer["nvlinks"] = nvlinks;
  snapshot["topology"] = Json{{"peers", Json::array({peer})}};
  return snapshot;
}

TEST(DiffSnapshots, PairThatLostNvLinksOrPeerAccessIsALinkChange) {
  Json before = WithPeer(NvidiaSnapshot(), "NV18", 18, "ok");
  auto changes = DiffSnapshots(before, WithPeer(NvidiaSnapshot(), "NODE", 0, "ok"));
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "link_downtrained");
  EXPECT_EQ(changes[0].path, "topology.peers[0000:18:00.0,0000:2a:00.0]");
  EXPECT_EQ(changes[0].summary, "GPUs 0000:18:00.0 and 0000:2a:00.0: NV18, p2p read ok -> NODE, p2p read ok");
  EXPECT_EQ(changes[0].before["nvlinks"], 18);

  changes = DiffSnapshots(before, WithPeer(NvidiaSnapshot(), "NV18", 18, "disabled_by_regkey"));
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "link_downtrained");

  changes = DiffSnapshots(WithPeer(NvidiaSnapshot(), "NV16", 16, "ok"), before);
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "link_restored");

  // The same pair, the same links: nothing; a snapshot without topology: unknown, nothing.
  EXPECT_TRUE(DiffSnapshots(before, before).empty());
  EXPECT_TRUE(DiffSnapshots(before, NvidiaSnapshot()).empty());
}

TEST(DiffSnapshots, ReorderedGpusAreNotChanges) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) { std::swap(s["gpus"][0], s["gpus"][1]); });
  EXPECT_TRUE(changes.empty()) << Show(changes);
}

TEST(DiffSnapshots, SwappedBoardIsGpuChanged) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) {
    NvidiaGpu(s)["nvidia"]["uuid"] = "GPU-00000000-1111-2222-3333-444455556666";
    NvidiaGpu(s)["nvidia"]["serial"] = "1654922000999";
  });
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "gpu_changed");
  EXPECT_EQ(changes[0].path, "gpus[0000:18:00.0]");
  EXPECT_EQ(changes[0].before,
            (Json{{"nvidia.uuid", "GPU-5a1b2c3d-0000-1111-2222-333344445555"}, {"nvidia.serial", "1654922000123"}}));
  EXPECT_EQ(changes[0].after,
            (Json{{"nvidia.uuid", "GPU-00000000-1111-2222-3333-444455556666"}, {"nvidia.serial", "1654922000999"}}));
  EXPECT_EQ(changes[0].summary,
            "GPU 0000:18:00.0: nvidia.uuid GPU-5a1b2c3d-0000-1111-2222-333344445555 -> "
            "GPU-00000000-1111-2222-3333-444455556666, nvidia.serial 1654922000123 -> "
            "1654922000999");
}

TEST(DiffSnapshots, VbiosAndNameChangesAreGpuChanged) {
  auto changes = DiffAfter(AmdSnapshot(), [](Json& s) {
    AmdGpu(s)["amd"]["vbios_version"] = "113-M3000100-103";
    AmdGpu(s)["name"] = "AMD Instinct MI325X";
  });
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "gpu_changed");
  EXPECT_EQ(changes[0].summary,
            "GPU 0000:c1:00.0: name AMD Instinct MI300X -> AMD Instinct MI325X, amd.vbios_version "
            "113-M3000100-102 -> 113-M3000100-103");
}

TEST(DiffSnapshots, LinkWidthDropIsDowntrained) {
  auto changes = DiffAfter(AmdSnapshot(), [](Json& s) { AmdGpu(s)["link"]["current_width"] = 8; });
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "link_downtrained");
  EXPECT_EQ(changes[0].path, "gpus[0000:c1:00.0].link");
  EXPECT_EQ(changes[0].before["current_width"], 16);
  EXPECT_EQ(changes[0].after["current_width"], 8);
  EXPECT_EQ(changes[0].summary, "GPU 0000:c1:00.0 link x16 -> x8, below its maximum x16 32 GT/s");
}

TEST(DiffSnapshots, LinkSpeedDropIsDowntrainedWithTheIdleCaveat) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) { NvidiaGpu(s)["link"]["current_speed_gts"] = 2.5; });
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "link_downtrained");
  EXPECT_EQ(changes[0].summary,
            "GPU 0000:18:00.0 link 32 GT/s -> 2.5 GT/s (the speed also drops when the GPU "
            "idles: compare under load), below its maximum x16 32 GT/s");
}

TEST(DiffSnapshots, LinkBackAtFullWidthIsRestored) {
  Json degraded = AmdSnapshot();
  AmdGpu(degraded)["link"]["current_width"] = 8;
  auto changes = DiffSnapshots(degraded, AmdSnapshot());
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "link_restored");
  EXPECT_EQ(changes[0].summary, "GPU 0000:c1:00.0 link x8 -> x16");
}

TEST(DiffSnapshots, BoundDriverChange) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) { NvidiaGpu(s)["driver"] = "vfio-pci"; });
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "driver_changed");
  EXPECT_EQ(changes[0].path, "gpus[0000:18:00.0].driver");
  EXPECT_EQ(changes[0].summary, "GPU 0000:18:00.0 driver nvidia -> vfio-pci");
  // An absent driver means none is bound.
  auto unbound = DiffAfter(AmdSnapshot(), [](Json& s) { AmdGpu(s).erase("driver"); });
  ASSERT_EQ(unbound.size(), 1u) << Show(unbound);
  EXPECT_EQ(unbound[0].summary, "GPU 0000:c1:00.0 driver amdgpu -> (none)");
  EXPECT_TRUE(unbound[0].after.is_null());
}

TEST(DiffSnapshots, NvidiaDriverUpdate) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) {
    s["software"]["kernel_modules"]["nvidia"] = {{"version", "560.35.03"}, {"srcversion", "FFFF"}};
    s["software"]["nvidia"]["driver_version"] = "560.35.03";
    s["software"]["nvidia"]["cuda_driver_version"] = "12.6";
  });
  ASSERT_EQ(changes.size(), 3u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "driver_changed");
  EXPECT_EQ(changes[0].path, "software.kernel_modules.nvidia.version");
  EXPECT_EQ(changes[0].summary, "kernel module nvidia 550.90.07 -> 560.35.03");
  EXPECT_EQ(changes[1].path, "software.nvidia.cuda_driver_version");
  EXPECT_EQ(changes[1].summary, "CUDA driver API 12.4 -> 12.6");
  EXPECT_EQ(changes[1].before, "12.4");
  EXPECT_EQ(changes[2].path, "software.nvidia.driver_version");
  EXPECT_EQ(changes[2].summary, "NVIDIA driver 550.90.07 -> 560.35.03");
}

TEST(DiffSnapshots, PerGpuNvidiaDriverVersionIsReportedOnceWithoutASoftwareSection) {
  Json before = NvidiaSnapshot();
  before["software"].erase("nvidia");
  for (Json& gpu : before["gpus"]) gpu["nvidia"]["driver_version"] = "550.90.07";
  auto changes = DiffAfter(before, [](Json& s) {
    for (Json& gpu : s["gpus"]) gpu["nvidia"]["driver_version"] = "560.35.03";
  });
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "driver_changed");
  EXPECT_EQ(changes[0].path, "gpus[0000:18:00.0].nvidia.driver_version");
  EXPECT_EQ(changes[0].summary, "NVIDIA driver 550.90.07 -> 560.35.03 (GPU 0000:18:00.0)");
}

TEST(DiffSnapshots, KernelModuleRebuiltOrGone) {
  auto rebuilt = DiffAfter(AmdSnapshot(), [](Json& s) {
    s["software"]["kernel_modules"]["amdgpu"]["srcversion"] = "FEDCBA9876543210FEDCBA98";
  });
  ASSERT_EQ(rebuilt.size(), 1u) << Show(rebuilt);
  EXPECT_EQ(rebuilt[0].kind, "driver_changed");
  EXPECT_EQ(rebuilt[0].path, "software.kernel_modules.amdgpu.srcversion");
  auto gone = DiffAfter(AmdSnapshot(), [](Json& s) { s["software"]["kernel_modules"] = Json::object(); });
  ASSERT_EQ(gone.size(), 1u) << Show(gone);
  EXPECT_EQ(gone[0].path, "software.kernel_modules.amdgpu");
  EXPECT_EQ(gone[0].summary, "kernel module amdgpu 6.8.5 is gone");
}

TEST(DiffSnapshots, RocmUpgrade) {
  auto changes = DiffAfter(AmdSnapshot(), [](Json& s) {
    s["software"]["packages"][0]["version"] = "6.4.1.60401-83~22.04";
    s["software"]["packages"].erase(1);
    s["software"]["packages"].push_back(
        {{"name", "hipblaslt"}, {"version", "0.12.0.60401-83~22.04"}, {"source", "dpkg"}});
    s["software"]["amd"]["rocm"]["installations"] = {{{"path", "/opt/rocm-6.4.1"}, {"version", "6.4.1"}}};
    s["software"]["libraries"][0]["version"] = "6.4.43482";
  });
  std::vector<std::pair<std::string, std::string>> got;
  for (const Change& change : changes) got.emplace_back(change.kind, change.summary);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, std::string>>{
                     {"component_removed", "ROCm installation /opt/rocm-6.3.3 6.3.3 removed"},
                     {"component_added", "ROCm installation /opt/rocm-6.4.1 6.4.1 added"},
                     {"component_version_changed", "library libamdhip64.so.6 6.3.42134 -> 6.4.43482"},
                     {"component_removed", "ROCm hip-runtime-amd 6.3.42134.60303-74~22.04 removed"},
                     {"component_added", "ROCm hipblaslt 0.12.0.60401-83~22.04 added"},
                     {"component_version_changed", "ROCm rocm-core 6.3.3.60303-74~22.04 -> 6.4.1.60401-83~22.04"},
                 }))
      << Show(changes);
  EXPECT_EQ(changes[5].path, "software.packages[rocm-core]");
  EXPECT_EQ(changes[5].before, "6.3.3.60303-74~22.04");
  EXPECT_EQ(changes[5].after, "6.4.1.60401-83~22.04");
  EXPECT_EQ(changes[0].path, "software.amd.rocm.installations[/opt/rocm-6.3.3]");
}

TEST(DiffSnapshots, RocmInstallationsFromTheAmdProbe) {
  // collect/snapshot.cc merges the AMD probe's data into software.amd.
  auto changes =
      DiffAfter(AmdSnapshot(), [](Json& s) { s["software"]["amd"]["rocm"]["installations"][0]["version"] = "6.3.4"; });
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "component_version_changed");
  EXPECT_EQ(changes[0].path, "software.amd.rocm.installations[/opt/rocm-6.3.3]");
  EXPECT_EQ(changes[0].summary, "ROCm installation /opt/rocm-6.3.3 6.3.3 -> 6.3.4");
}

TEST(DiffSnapshots, CudaInstallationAndPackages) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) {
    s["software"]["cuda"]["installations"][0]["version"] = "12.4.131";
    s["software"]["packages"][2]["version"] = "2.23.4-1+cuda12.6";
  });
  ASSERT_EQ(changes.size(), 2u) << Show(changes);
  EXPECT_EQ(changes[0].summary, "CUDA installation /usr/local/cuda-12.4 12.4.1 -> 12.4.131");
  EXPECT_EQ(changes[1].summary, "CUDA libnccl2 2.21.5-1+cuda12.4 -> 2.23.4-1+cuda12.6");
}

TEST(DiffSnapshots, PythonPackagesAndTorch) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) {
    Json& python = s["software"]["python"];
    python["packages"][0]["version"] = "2.5.1+cu124";
    python["packages"][1]["version"] = "2.1.3";
    python["packages"][2]["name"] = "nvidia-nccl-cu12";  // same package, pip's other spelling
    python["torch"]["version"] = "2.5.1+cu124";
  });
  ASSERT_EQ(changes.size(), 2u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "component_version_changed");
  EXPECT_EQ(changes[0].path, "software.python.packages[numpy]");
  EXPECT_EQ(changes[0].summary, "Python package numpy 1.26.4 -> 2.1.3");
  EXPECT_EQ(changes[1].path, "software.python.torch.version");
  EXPECT_EQ(changes[1].summary, "PyTorch 2.4.1+cu124 -> 2.5.1+cu124");
}

TEST(DiffSnapshots, CompilersToolsAndRuntimes) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) {
    Json& sw = s["software"];
    sw["compilers"] = Json::parse(R"([{"name": "nvcc", "path": "/usr/local/cuda-12.4/bin/nvcc", "version": "12.4.131"},
                                      {"name": "gcc", "path": "/usr/bin/gcc", "version": "13.3.0"}])");
    sw["tools"] = Json::parse(R"([{"name": "cmake", "path": "/usr/bin/cmake", "version": "3.28.3"}])");
    sw["glibc"] = {{"version", "2.39"}};
    sw["libstdcxx"] = {{"glibcxx", "GLIBCXX_3.4.33"}};
  });
  // Before, the compiler had no version and there were no tools or runtimes: only the new gcc
  // is a change; unknown versions are not.
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "component_added");
  EXPECT_EQ(changes[0].summary, "compiler /usr/bin/gcc 13.3.0 added");

  Json before = NvidiaSnapshot();
  before["software"]["compilers"][0]["version"] = "12.4.99";
  before["software"]["tools"] = Json::parse(R"([{"name": "cmake", "path": "/usr/bin/cmake", "version": "3.25.1"}])");
  before["software"]["glibc"] = {{"version", "2.36"}};
  before["software"]["libstdcxx"] = {{"glibcxx", "GLIBCXX_3.4.30"}};
  Json after = before;
  after["software"]["compilers"][0]["version"] = "12.4.131";
  after["software"]["tools"][0]["version"] = "3.28.3";
  after["software"]["glibc"]["version"] = "2.39";
  after["software"]["libstdcxx"]["glibcxx"] = "GLIBCXX_3.4.33";
  auto updated = DiffSnapshots(before, after);
  ASSERT_EQ(updated.size(), 4u) << Show(updated);
  EXPECT_EQ(updated[0].path, "software.compilers[/usr/local/cuda-12.4/bin/nvcc]");
  EXPECT_EQ(updated[0].summary, "compiler /usr/local/cuda-12.4/bin/nvcc 12.4.99 -> 12.4.131");
  EXPECT_EQ(updated[1].summary, "glibc 2.36 -> 2.39");
  EXPECT_EQ(updated[2].summary, "libstdc++ GLIBCXX_3.4.30 -> GLIBCXX_3.4.33");
  EXPECT_EQ(updated[3].summary, "tool /usr/bin/cmake 3.25.1 -> 3.28.3");
}

TEST(DiffSnapshots, TorchHipVersionAndRemoval) {
  auto hip = DiffAfter(AmdSnapshot(), [](Json& s) { s["software"]["python"]["torch"]["hip"] = "6.3.42131"; });
  ASSERT_EQ(hip.size(), 1u) << Show(hip);
  EXPECT_EQ(hip[0].path, "software.python.torch.hip");
  EXPECT_EQ(hip[0].summary, "PyTorch HIP 6.2.41133 -> 6.3.42131");
  auto removed = DiffAfter(AmdSnapshot(), [](Json& s) {
    s["software"]["python"].erase("torch");
    s["software"]["python"]["packages"].erase(0);
  });
  ASSERT_EQ(removed.size(), 1u) << Show(removed);
  EXPECT_EQ(removed[0].kind, "component_removed");
  EXPECT_EQ(removed[0].path, "software.python.torch");
  EXPECT_EQ(removed[0].summary, "PyTorch 2.5.1+rocm6.2 removed");
}

TEST(DiffSnapshots, KernelChanged) {
  auto changes = DiffAfter(AmdSnapshot(), [](Json& s) {
    s["host"]["kernel"] = {{"release", "6.8.0-45-generic"}, {"version", "#45-Ubuntu SMP"}};
  });
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "kernel_changed");
  EXPECT_EQ(changes[0].path, "host.kernel.release");
  EXPECT_EQ(changes[0].summary, "kernel 5.15.0-119-generic -> 6.8.0-45-generic");
}

TEST(DiffSnapshots, EnvironmentChanges) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) {
    Json& vars = s["env"]["variables"];
    vars["CUDA_VISIBLE_DEVICES"] = "0";
    vars.erase("NCCL_DEBUG");
    vars["NCCL_P2P_DISABLE"] = "1";
  });
  ASSERT_EQ(changes.size(), 3u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "env_changed");
  EXPECT_EQ(changes[0].path, "env.variables.CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(changes[0].summary, "env CUDA_VISIBLE_DEVICES 0,1 -> 0");
  EXPECT_EQ(changes[1].kind, "env_removed");
  EXPECT_EQ(changes[1].summary, "env NCCL_DEBUG removed (was WARN)");
  EXPECT_TRUE(changes[1].after.is_null());
  EXPECT_EQ(changes[2].kind, "env_added");
  EXPECT_EQ(changes[2].path, "env.variables.NCCL_P2P_DISABLE");
  EXPECT_EQ(changes[2].summary, "env NCCL_P2P_DISABLE=1 added");
  EXPECT_TRUE(changes[2].before.is_null());
}

TEST(DiffSnapshots, NewKernelLogClassAndXidCode) {
  Json before = NvidiaSnapshot();
  before["kernel_log"]["records"].push_back(
      {{"seq", 900},
       {"class", "nvidia.xid"},
       {"message", "NVRM: Xid (PCI:0000:18:00): 13, pid=1234, name=python3, Graphics Exception"},
       {"xid", {{"code", 13}, {"pci", "0000:18:00.0"}, {"pid", 1234}, {"process", "python3"}}}});
  before["kernel_log"]["counts"]["nvidia.xid"] = 1;
  // Unchanged class, same Xid: nothing new.
  EXPECT_TRUE(DiffSnapshots(before, before).empty());
  Json after = NvidiaSnapshot();
  for (int i = 0; i < 2; ++i) {
    after["kernel_log"]["records"].push_back(
        {{"seq", 1000 + i},
         {"class", "nvidia.xid"},
         {"message", "NVRM: Xid (PCI:0000:2a:00): 79, pid=2048, GPU has fallen off the bus."},
         {"xid", {{"code", 79}, {"pci", "0000:2a:00.0"}, {"pid", 2048}}}});
  }
  after["kernel_log"]["counts"]["nvidia.xid"] = 2;
  after["kernel_log"]["counts"]["aer"] = 0;  // present but zero: nothing new
  auto from_clean = DiffSnapshots(NvidiaSnapshot(), after);
  ASSERT_EQ(from_clean.size(), 2u) << Show(from_clean);
  EXPECT_EQ(from_clean[0].kind, "kernel_log_new_class");
  EXPECT_EQ(from_clean[0].path, "kernel_log.counts[nvidia.xid]");
  EXPECT_EQ(from_clean[0].summary, "kernel log: new nvidia.xid records (2)");
  EXPECT_TRUE(from_clean[0].before.is_null());
  EXPECT_EQ(from_clean[1].path, "kernel_log.xid[79]");
  EXPECT_EQ(from_clean[1].summary, "kernel log: new Xid 79 (2 records; GPU 0000:2a:00.0)");
  // Xid class already present before: only the new code is news.
  auto from_xid13 = DiffSnapshots(before, after);
  ASSERT_EQ(from_xid13.size(), 1u) << Show(from_xid13);
  EXPECT_EQ(from_xid13[0].path, "kernel_log.xid[79]");
}

TEST(DiffSnapshots, EccAndRetiredPagesIncreased) {
  auto changes = DiffAfter(NvidiaSnapshot(), [](Json& s) {
    Json& nv = NvidiaGpu(s)["nvidia"];
    nv["ecc"]["aggregate_uncorrected"] = 3;
    nv["retired_pages"]["double_bit_ecc"] = 2;
    nv["remapped_rows"]["pending"] = true;
    NvidiaGpu(s)["aer"]["nonfatal_total"] = 4;
  });
  ASSERT_EQ(changes.size(), 4u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "ecc_errors_increased");
  EXPECT_EQ(changes[0].path, "gpus[0000:18:00.0].nvidia.ecc.aggregate_uncorrected");
  EXPECT_EQ(changes[0].summary, "GPU 0000:18:00.0 ECC aggregate uncorrected errors 0 -> 3");
  EXPECT_EQ(changes[1].kind, "retired_pages_increased");
  EXPECT_EQ(changes[1].path, "gpus[0000:18:00.0].nvidia.remapped_rows.pending");
  EXPECT_EQ(changes[1].summary, "GPU 0000:18:00.0 row remapping pending false -> true");
  EXPECT_EQ(changes[2].kind, "retired_pages_increased");
  EXPECT_EQ(changes[2].summary, "GPU 0000:18:00.0 retired pages (double-bit ECC) 0 -> 2");
  EXPECT_EQ(changes[3].kind, "pcie_errors_increased");
  EXPECT_EQ(changes[3].summary, "GPU 0000:18:00.0 AER non-fatal errors 0 -> 4");
}

TEST(DiffSnapshots, AmdRasCountersIncreased) {
  auto changes = DiffAfter(AmdSnapshot(), [](Json& s) {
    AmdGpu(s)["amd"]["ras"]["umc"] = {{"ue", 2}, {"ce", 1}};
    AmdGpu(s)["amd"]["ras"]["sdma"] = {{"ue", 5}, {"ce", 0}};  // block unknown before
  });
  ASSERT_EQ(changes.size(), 1u) << Show(changes);
  EXPECT_EQ(changes[0].kind, "ecc_errors_increased");
  EXPECT_EQ(changes[0].path, "gpus[0000:c1:00.0].amd.ras.umc.ue");
  EXPECT_EQ(changes[0].summary, "GPU 0000:c1:00.0 RAS umc uncorrectable errors 0 -> 2");
}

TEST(DiffSnapshots, HostChanges) {
  auto changes = DiffAfter(AmdSnapshot(), [](Json& s) {
    Json& flags = s["host"]["cmdline"]["flags"];
    flags["iommu"] = "on";
    flags.erase("amdgpu.noretry");
    flags["pci"] = "realloc=off";
    s["host"]["iommu"]["enabled"] = false;
    s["host"]["memory"]["total_bytes"] = 1082077014016;
    s["host"]["os"]["pretty_name"] = "Ubuntu 24.04.1 LTS";
  });
  std::vector<std::string> summaries;
  for (const Change& change : changes) {
    EXPECT_EQ(change.kind, "host_changed");
    summaries.push_back(change.path + ": " + change.summary);
  }
  EXPECT_EQ(summaries, (std::vector<std::string>{
                           "host.cmdline.flags.iommu: kernel command line iommu=pt -> iommu=on",
                           "host.cmdline.flags.pci: kernel command line +pci=realloc=off",
                           "host.cmdline.flags[amdgpu.noretry]: kernel command line "
                           "-amdgpu.noretry=1",
                           "host.iommu.enabled: IOMMU enabled true -> false",
                           "host.memory.total_bytes: memory total 2015.5 GiB -> 1007.8 GiB",
                           "host.os.pretty_name: OS Ubuntu 22.04.4 LTS -> Ubuntu 24.04.1 LTS",
                       }))
      << Show(changes);
}

TEST(DiffSnapshots, OrderIsSeverityClassThenPath) {
  auto changes = DiffAfter(AmdSnapshot(), [](Json& s) {
    s["env"]["variables"]["HSA_ENABLE_SDMA"] = "1";
    s["software"]["packages"][0]["version"] = "6.4.1.60401-83~22.04";
    s["host"]["kernel"]["release"] = "6.8.0-45-generic";
    AmdGpu(s)["link"]["current_width"] = 4;
    s["gpus"].push_back({{"vendor", "amd"}, {"pci_address", "0000:05:00.0"}});
    s["kernel_log"]["counts"]["gpu_reset"] = 1;
  });
  std::vector<std::string> order;
  for (const Change& change : changes) order.push_back(change.kind + " " + change.path);
  EXPECT_EQ(order, (std::vector<std::string>{
                       "link_downtrained gpus[0000:c1:00.0].link",
                       "kernel_log_new_class kernel_log.counts[gpu_reset]",
                       "gpu_added gpus[0000:05:00.0]",
                       "kernel_changed host.kernel.release",
                       "component_version_changed software.packages[rocm-core]",
                       "env_changed env.variables.HSA_ENABLE_SDMA",
                   }));
  // The same pair diffs the same way every time, whatever order the input had.
  Json before = AmdSnapshot();
  Json after = before;
  after["env"]["variables"]["HSA_ENABLE_SDMA"] = "1";
  after["software"]["packages"][0]["version"] = "6.4.1";
  EXPECT_EQ(DiffSnapshots(before, after), DiffSnapshots(before, after));
}

TEST(ChangeSeverityClass, KnownKindsHaveClassesUnknownSortLast) {
  EXPECT_EQ(ChangeSeverityClass("gpu_removed"), 0);
  EXPECT_EQ(ChangeSeverityClass("driver_changed"), 1);
  EXPECT_EQ(ChangeSeverityClass("component_added"), 2);
  EXPECT_EQ(ChangeSeverityClass("env_added"), 3);
  EXPECT_EQ(ChangeSeverityClass("no_such_kind"), 4);
}

TEST(DiffToJson, HasTheDocumentedShape) {
  auto changes = DiffAfter(AmdSnapshot(), [](Json& s) { s["env"]["variables"]["HIP_VISIBLE_DEVICES"] = "1"; });
  EXPECT_EQ(DiffToJson(changes), Json::parse(R"({"changes": [{
      "kind": "env_changed", "path": "env.variables.HIP_VISIBLE_DEVICES",
      "before": "0", "after": "1", "summary": "env HIP_VISIBLE_DEVICES 0 -> 1"}]})"));
  EXPECT_EQ(DiffToJson({}), Json::parse(R"({"changes": []})"));
}

}  // namespace
}  // namespace gputriage::store
