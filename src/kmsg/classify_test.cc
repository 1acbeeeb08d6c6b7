#include "kmsg/classify.h"

#include <gtest/gtest.h>

namespace gputriage::kmsg {
namespace {

TEST(ClassifierTest, AllPatternsCompile) {
  EXPECT_TRUE(ClassifierPatternErrors().empty())
      << (ClassifierPatternErrors().empty() ? "" : ClassifierPatternErrors().front());
}

TEST(ClassifierTest, ClassNames) {
  EXPECT_EQ(LogClassName(LogClass::kNvidiaXid), "nvidia.xid");
  EXPECT_EQ(LogClassName(LogClass::kNvidiaNvrm), "nvidia.nvrm");
  EXPECT_EQ(LogClassName(LogClass::kAmdgpu), "amdgpu");
  EXPECT_EQ(LogClassName(LogClass::kKfd), "kfd");
  EXPECT_EQ(LogClassName(LogClass::kGpuReset), "gpu_reset");
  EXPECT_EQ(LogClassName(LogClass::kRas), "ras");
  EXPECT_EQ(LogClassName(LogClass::kIommu), "iommu");
  EXPECT_EQ(LogClassName(LogClass::kAer), "aer");
  EXPECT_EQ(LogClassName(LogClass::kMce), "mce");
  EXPECT_EQ(LogClassName(LogClass::kOom), "oom");
  EXPECT_EQ(LogClassName(LogClass::kNone), "");
}

struct Case {
  const char* message;
  LogClass expected;
};

// Real messages (from the fixtures and kernel sources), at least one per pattern, and the boot
// chatter each class must not swallow.
const Case kCases[] = {
    {"NVRM: Xid (PCI:0000:00:06): 43, pid=719, name=python3, channel 0x0000000a", LogClass::kNvidiaXid},
    {"NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: ESR 0x404000=0x80000002", LogClass::kNvidiaXid},
    {"NVRM: Xid (0000:01:00): 32, Channel ID 00000000 intr 00004000", LogClass::kNvidiaXid},
    {"amdgpu 0000:c6:00.0: amdgpu: GPU reset begin!", LogClass::kGpuReset},
    {"amdgpu 0000:c5:00.0: amdgpu: GPU reset begin!. Source:  3", LogClass::kGpuReset},
    {"amdgpu 0000:c6:00.0: amdgpu: GPU reset(2) succeeded!", LogClass::kGpuReset},
    {"amdgpu 0000:e3:00.0: amdgpu: GPU reset(1) failed", LogClass::kGpuReset},
    {"amdgpu 0000:e3:00.0: amdgpu: GPU reset end with ret = -62", LogClass::kGpuReset},
    {"amdgpu 0000:c5:00.0: amdgpu: GPU reset succeeded, trying to resume", LogClass::kGpuReset},
    {"amdgpu 0000:c5:00.0: amdgpu: MODE2 reset", LogClass::kGpuReset},
    {"amdgpu 0000:e3:00.0: amdgpu: BACO reset", LogClass::kGpuReset},
    {"amdgpu 0000:03:00.0: amdgpu: GPU mode1 reset", LogClass::kGpuReset},
    {"amdgpu 0000:03:00.0: amdgpu: ASIC reset failed with error, -62 for drm dev", LogClass::kGpuReset},
    {"[drm] VRAM is lost due to GPU reset!", LogClass::kGpuReset},
    {"mce: [Hardware Error]: Machine check events logged", LogClass::kMce},
    {"mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400", LogClass::kMce},
    {"Machine check: Processor context corrupt", LogClass::kMce},
    {"Memory failure: 0x1234: recovery action for dirty LRU page: Recovered", LogClass::kMce},
    {"amdgpu 0000:42:00.0: {1}[Hardware Error]: aca entry[00].STATUS=0x98000800003e0000", LogClass::kRas},
    {"{359}[Hardware Error]: event severity: corrected", LogClass::kRas},
    {"amdgpu 0000:1c:00.0: {1}uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!", LogClass::kRas},
    {"amdgpu 0000:03:00.0: amdgpu: 2 correctable hardware errors detected in umc block", LogClass::kRas},
    {"[drm] UVD VCPU state may lost due to RAS ERREVENT_ATHUB_INTERRUPT", LogClass::kRas},
    {"amdgpu 0000:03:00.0: amdgpu: GPU poison consumption detected", LogClass::kRas},
    {"NVRM: GPU 0000:01:00.0: ECC error detected", LogClass::kRas},
    {"EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0", LogClass::kRas},
    {"mimir invoked oom-killer: gfp_mask=0x6000c0(GFP_KERNEL), order=0, oom_score_adj=999", LogClass::kOom},
    {"Out of memory: Killed process 4242 (python3) total-vm:123kB", LogClass::kOom},
    {"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),task=python3,pid=4242", LogClass::kOom},
    {"Memory cgroup out of memory: Killed process 4242 (python3)", LogClass::kOom},
    {"oom_reaper: reaped process 4242 (python3), now anon-rss:0kB", LogClass::kOom},
    {"pcieport 0000:00:01.1: AER: Corrected error message received from 0000:01:00.0", LogClass::kAer},
    {"pcieport 0000:00:01.1: AER: aer_layer=Data Link Layer, aer_agent=Receiver ID", LogClass::kAer},
    {"nvidia 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)", LogClass::kAer},
    {"nvidia 0000:01:00.0:   [ 0] RxErr                  (First)", LogClass::kAer},
    {"pcieport 0000:00:01.1: DPC: containment event, status:0x1f01 source:0x0000", LogClass::kAer},
    {"amdgpu 0000:03:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000e "
     "address=0x1000 flags=0x0020]",
     LogClass::kIommu},
    {"AMD-Vi: Completion-Wait loop timed out", LogClass::kIommu},
    {"DMAR: DRHD: handling fault status reg 2", LogClass::kIommu},
    {"DMAR: [DMA Read NO_PASID] Request device [01:00.0] fault addr 0x7f000 [fault reason "
     "0x06] PTE Read access is not set",
     LogClass::kIommu},
    {"arm-smmu-v3 arm-smmu-v3.0.auto: event 0x10 received: unhandled context fault", LogClass::kIommu},
    {"kfd kfd: amdgpu: added device 1002:744c", LogClass::kKfd},
    {"amdgpu: Failed to quiesce KFD", LogClass::kKfd},
    {"amdgpu 0000:c5:00.0: amdgpu: remove_all_kfd_queues_mes: Failed to remove queue 0", LogClass::kKfd},
    {"NVRM: GPU 0000:06:00.0: GPU has fallen off the bus.", LogClass::kNvidiaNvrm},
    {"NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:26b5) installed in this system "
     "has\nNVRM: fallen off the bus and is not responding to commands.",
     LogClass::kNvidiaNvrm},
    {"NVRM: GPU6 _kgspIsHeartbeatTimedOut: Heartbeat timed out", LogClass::kNvidiaNvrm},
    {"nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context", LogClass::kNvidiaNvrm},
    {"nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver", LogClass::kNvidiaNvrm},
    {"[drm] [nvidia-drm] [GPU ID 0x00000100] Loading driver", LogClass::kNvidiaNvrm},
    {"amdgpu 0000:07:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:173)", LogClass::kAmdgpu},
    {"amdgpu: ATOM BIOS: 113-EXT91535-100", LogClass::kAmdgpu},
    {"[drm] amdgpu: 16368M of VRAM memory ready", LogClass::kAmdgpu},
    {"[drm] amdgpu kernel modesetting enabled.", LogClass::kAmdgpu},
    {"[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, signaled seq=1", LogClass::kAmdgpu},
    {"[drm:psp_hw_start [amdgpu]] *ERROR* PSP create ring failed!", LogClass::kAmdgpu},
    {"GCVM_L2_PROTECTION_FAULT_STATUS:0x00041B52", LogClass::kAmdgpu},
    {"[mmhub0] retry page fault (src_id:0 ring:0 vmid:0 pasid:0)", LogClass::kAmdgpu},
    {"UBSAN: shift-out-of-bounds in /var/lib/dkms/amdgpu/5.18.2/build/amd/amdgpu/gfx_v9_0.c:2514", LogClass::kAmdgpu},
    // Boot chatter and near misses.
    {"pcieport 0000:00:01.1: AER: enabled with IRQ 28", LogClass::kNone},
    {"mce: CPU supports 32 MCE banks", LogClass::kNone},
    {"AMD-Vi: Interrupt remapping enabled", LogClass::kNone},
    {"DMAR: IOMMU enabled", LogClass::kNone},
    {"iommu: Default domain type: Translated", LogClass::kNone},
    {"amdgpu 0000:03:00.0: amdgpu: Using BACO for runtime pm", LogClass::kAmdgpu},
    {"fbcon: amdgpudrmfb (fb0) is primary device", LogClass::kNone},
    {"snd_hda_intel 0000:03:00.1: bound 0000:03:00.0 (ops amdgpu_dm_audio_component_bind_ops "
     "[amdgpu])",
     LogClass::kNone},
    {"[drm] PCIE GART of 512M enabled (table at 0x000000807FD00000).", LogClass::kNone},
    {" oom_kill_process.cold.32+0xb/0x10", LogClass::kNone},
    {"Linux version 6.18.44", LogClass::kNone},
    {"", LogClass::kNone},
};

TEST(ClassifierTest, ClassifiesRealMessages) {
  for (const Case& c : kCases) {
    EXPECT_EQ(LogClassName(ClassifyMessage(c.message)), LogClassName(c.expected)) << c.message;
  }
}

TEST(ClassifierTest, ToleratesBinaryMessages) {
  static constexpr char kBytes[] = "NVRM: \0\xff\xfe Xid";
  std::string message(kBytes, sizeof(kBytes) - 1);
  EXPECT_EQ(ClassifyMessage(message), LogClass::kNvidiaNvrm);
  // Invalid UTF-8 between the parts of a pattern does not hide the match.
  EXPECT_EQ(ClassifyMessage("DMAR: \xff\xfe fault addr 0x1000"), LogClass::kIommu);
}

TEST(ParseXidTest, NewFormatWithPidNameAndChannel) {
  std::optional<XidInfo> xid = ParseXid("NVRM: Xid (PCI:0000:00:06): 43, pid=719, name=python3, channel 0x0000000a");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->code, 43u);
  EXPECT_EQ(xid->pci, "0000:00:06.0");
  EXPECT_EQ(xid->pid, 719u);
  EXPECT_EQ(xid->process, "python3");
}

TEST(ParseXidTest, OldFormatHasNoProcess) {
  std::optional<XidInfo> xid = ParseXid(
      "NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 0): Out Of "
      "Range Address");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->code, 13u);
  EXPECT_EQ(xid->pci, "0000:01:00.0");
  EXPECT_FALSE(xid->pid);
  EXPECT_FALSE(xid->process);
}

TEST(ParseXidTest, QuotedUnknownPidAndNameAreAbsent) {
  std::optional<XidInfo> xid = ParseXid(
      "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp "
      "Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->code, 13u);
  EXPECT_EQ(xid->pci, "0000:cb:00.0");
  EXPECT_FALSE(xid->pid);
  EXPECT_FALSE(xid->process);
}

TEST(ParseXidTest, CodeIsTheFirstNumberNotTheCausingXid) {
  std::optional<XidInfo> xid = ParseXid(
      "NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by "
      "previous Xid 149");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->code, 45u);
  EXPECT_EQ(xid->pci, "0000:dc:00.0");
  EXPECT_EQ(xid->pid, 1818990u);
  EXPECT_EQ(xid->process, "python3");
}

TEST(ParseXidTest, NameAtTheEndAndUpperCaseAddressWithFunction) {
  std::optional<XidInfo> xid = ParseXid("NVRM: Xid (PCI:0000:9B:00.1): 119, pid=7, name=gpud");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->code, 119u);
  EXPECT_EQ(xid->pci, "0000:9b:00.1");
  EXPECT_EQ(xid->pid, 7u);
  EXPECT_EQ(xid->process, "gpud");
}

TEST(ParseXidTest, ProcessNameWithInvalidUtf8) {
  std::optional<XidInfo> xid = ParseXid("NVRM: Xid (PCI:0000:00:06): 43, pid=1, name=\xc3\x28, x");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->process, "\xc3\x28");
}

TEST(ParseXidTest, RejectsLinesWithoutAnXid) {
  EXPECT_FALSE(ParseXid("NVRM: GPU at PCI:0000:00:06: GPU-f8927f9f"));
  EXPECT_FALSE(ParseXid("NVRM: Xid (PCI:0000:00:06): x, pid=1"));
  EXPECT_FALSE(ParseXid("NVRM: Xid (PCI:0000:00:06): 9999999999, pid=1"));
  EXPECT_FALSE(ParseXid(""));
}

}  // namespace
}  // namespace gputriage::kmsg
