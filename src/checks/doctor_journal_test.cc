// doctor on the previous boot's kernel log: records the systemd journal kept through a reboot
// are rated by the same rules as this boot's, under their own ids, and say which boot.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "capture_tree.h"
#include "checks/doctor.h"
#include "collect/kernel_log/journal_fixture.h"
#include "collect/snapshot.h"
#include "core/os_view.h"
#include "core/snapshot.h"

namespace gputriage::checks {
namespace {

using core::Json;
using kernel_log::test_support::JournalEntry;
using kernel_log::test_support::KernelEntriesFromDmesg;
using kernel_log::test_support::KernelEntry;
using kernel_log::test_support::ServiceEntry;

constexpr const char* kPreviousBoot = "8a1c3f0e5b7d4e2a9c6b1d0f3e5a7c9b";
constexpr const char* kCurrentBoot = "f00dfeed0123456789abcdef01234567";
constexpr uint64_t kPreviousBootS = 1796083200;  // 2026-12-01T00:00:00Z
constexpr uint64_t kCurrentBootS = 1796218671;   // 2026-12-02T13:37:51Z

const catalog::Catalog& JournalKb() {
  auto loaded = catalog::BuiltinCatalog();
  EXPECT_TRUE(loaded.ok()) << loaded.error().message;
  return **loaded;
}

const core::Finding* FindById(const std::vector<core::Finding>& findings, const std::string& id) {
  for (const auto& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

std::string KernelFixture(const char* name) {
  return gputriage::testing::ReadFixture(std::string("kernel_log/") + name);
}

/// The previous boot: an amdgpu ring timeout and reset, then an Xid 79 (real logs), the last
/// entry at 2026-12-02T11:20:00Z; the current boot: nothing wrong.
std::vector<JournalEntry> Journal() {
  std::vector<JournalEntry> entries;
  entries.push_back(KernelEntry(kPreviousBoot, kPreviousBootS, 1000, "Linux version 6.8.0-49-generic", 5));
  for (JournalEntry& e :
       KernelEntriesFromDmesg(KernelFixture("amdgpu-ring-gfx-timeout-ring-reset-failed-mes-remove-queue-mode2-"
                                            "coredump-strixhalo.txt"),
                              kPreviousBoot, kPreviousBootS)) {
    entries.push_back(std::move(e));
  }
  for (JournalEntry& e :
       KernelEntriesFromDmesg(KernelFixture("nvrm-xid79-fallen-off-bus-rc-all-channels-rtx5090-driver580-595-no-"
                                            "timestamps.txt"),
                              kPreviousBoot, kPreviousBootS, 127100000000ull)) {
    entries.push_back(std::move(e));
  }
  entries.push_back(ServiceEntry(kPreviousBoot, kPreviousBootS, 127200000000ull, "nvidia-persistenced",
                                 "device 0000:06:00.0 - failed to open."));
  entries.push_back(KernelEntry(kCurrentBoot, kCurrentBootS, 1000, "Linux version 6.8.0-51-generic", 5));
  return entries;
}

TEST(DoctorPreviousBootTest, Xid79AndRingTimeoutFromTheJournalAreRatedAndSaySo) {
  std::string missing = kernel_log::test_support::JournalRemoteMissing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  gputriage::testing::TempTree tree;
  ASSERT_EQ(kernel_log::test_support::WriteJournalFile(
                tree.Real("/var/log/journal/5e1f0c2a9b8d4c7e8f6a5b4c3d2e1f00/system.journal"), Journal()),
            "");
  tree.Write("/proc/sys/kernel/random/boot_id", "f00dfeed-0123-4567-89ab-cdef01234567\n");
  tree.Write("/dev/kmsg", "6,0,1000,-;Linux version 6.8.0-51-generic\n");
  core::Result<core::OsView> os = core::OsView::Rooted(tree.root());
  ASSERT_TRUE(os.ok()) << os.error().message;

  // The whole path: the snapshot collector, its typed model, doctor's checks.
  core::Snapshot snapshot = collect::CollectSnapshot(*os, collect::SnapshotOptions{});
  ASSERT_TRUE(snapshot.kernel_log && snapshot.kernel_log->previous_boot);
  const core::PreviousBootKernelLog& previous = *snapshot.kernel_log->previous_boot;
  EXPECT_EQ(previous.boot_id, kPreviousBoot);
  EXPECT_EQ(previous.last_entry_time, "2026-12-02T11:20:00.000Z");
  ASSERT_TRUE(previous.records.has_value());
  EXPECT_EQ(previous.records->size(), 23u);
  EXPECT_EQ(previous.records->front().boot, "previous");
  EXPECT_EQ(previous.records->front().boot_id, kPreviousBoot);

  std::vector<core::Finding> findings = RunDoctorChecks(snapshot, JournalKb());
  const core::Finding* xid = FindById(findings, "kmsg.nvidia_xid_79.previous_boot");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->severity, core::Severity::kCritical);
  EXPECT_EQ(xid->severity, JournalKb().xid.at(79).severity);
  EXPECT_EQ(xid->title,
            "NVIDIA Xid 79: GPU has fallen off the bus in the previous boot (ended 2026-12-02T11:20:00.000Z), last at "
            "2026-12-02T11:18:20.002Z");
  EXPECT_EQ(xid->detail.rfind(std::string("Logged in the previous boot (boot ") + kPreviousBoot +
                                  ", last journal entry at 2026-12-02T11:20:00.000Z) and kept by the systemd journal; "
                                  "the reboot cleared it from the kernel log. The driver tried to access the GPU",
                              0),
            0u)
      << xid->detail;
  ASSERT_EQ(xid->evidence.size(), 1u);
  EXPECT_EQ(xid->evidence[0].source, "journal, previous boot");
  EXPECT_EQ(xid->evidence[0].text,
            "[2026-12-02T11:18:20.002Z] NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.");

  const core::Finding* ring = FindById(findings, "kmsg.amdgpu_ring_timeout.previous_boot");
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->severity, core::Severity::kError);
  EXPECT_EQ(ring->title.rfind("amdgpu ring timeout (a GPU queue stopped making progress) in the previous boot (ended "
                              "2026-12-02T11:20:00.000Z)",
                              0),
            0u)
      << ring->title;
  // Nothing of that is this boot's.
  EXPECT_EQ(FindById(findings, "kmsg.nvidia_xid_79"), nullptr);
  EXPECT_EQ(FindById(findings, "kmsg.amdgpu_ring_timeout"), nullptr);
}

TEST(DoctorPreviousBootTest, TheSameXidInBothBootsIsTwoFindings) {
  Json xid = {{"class", "nvidia.xid"},
              {"message", "NVRM: Xid (PCI:0000:00:06): 43, pid=719, name=python3, channel 0x0000000a"},
              {"xid", {{"code", 43}, {"pci", "0000:00:06.0"}}}};
  Json now = xid;
  now["time"] = "2026-12-02T14:00:00.000Z";
  Json before = xid;
  before["time"] = "2026-12-01T10:00:00.000Z";
  before["boot"] = "previous";
  before["boot_id"] = kPreviousBoot;
  Json snapshot = {
      {"gpus", Json::array()},
      {"kernel_log",
       {{"records", {now}}, {"previous_boot", {{"boot_id", kPreviousBoot}, {"records", {before, before}}}}}}};
  std::vector<core::Finding> findings = RunDoctorChecks(core::SnapshotFromJsonUnchecked(snapshot), JournalKb());
  const core::Finding* current = FindById(findings, "kmsg.nvidia_xid_43");
  const core::Finding* earlier = FindById(findings, "kmsg.nvidia_xid_43.previous_boot");
  ASSERT_NE(current, nullptr);
  ASSERT_NE(earlier, nullptr);
  EXPECT_EQ(current->severity, earlier->severity);
  EXPECT_EQ(current->evidence.size(), 1u);
  EXPECT_EQ(earlier->evidence.size(), 2u);
  // Without the boot's end time the title says only which boot.
  EXPECT_EQ(earlier->title.rfind("NVIDIA Xid 43: ", 0), 0u);
  EXPECT_NE(earlier->title.find(" (2 records) in the previous boot, last at 2026-12-01T10:00:00.000Z"),
            std::string::npos)
      << earlier->title;
  EXPECT_EQ(current->title.find("previous boot"), std::string::npos);
}

}  // namespace
}  // namespace gputriage::checks
