#include "forensics/kmsg_watch.h"

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/text.h"

namespace gputriage::forensics {
namespace {

kmsg::Record Rec(std::string message) {
  kmsg::Record r;
  r.message = std::move(message);
  return r;
}

TEST(KmsgWatch, PidsInRealMessages) {
  // tests/fixtures/kernel_log/h200-dmesg-xid31-xid43.txt
  EXPECT_EQ(PidsInMessage("NVRM: Xid (PCI:0000:00:06): 43, pid=719, name=python3, channel 0x0000000a"),
            std::vector<int>{719});
  // tests/fixtures/kernel_log/amdgpu-gfxhub0-no-retry-pagefault-cpc-gfx902-apu-rocm4.3.txt
  EXPECT_EQ(PidsInMessage("amdgpu 0000:07:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 "
                          "ring:173 vmid:8 pasid:32772, for process clinfo pid 1382 thread clinfo pid 1390)"),
            (std::vector<int>{1382, 1390}));
  EXPECT_EQ(PidsInMessage("NVRM: Xid (PCI:0000:01:00): 13, pid='<unknown>', name=<unknown>, Graphics"),
            std::vector<int>{});
  EXPECT_TRUE(PidsInMessage("pasid:32772 vmid:8").empty());
}

TEST(KmsgWatch, CorrelatesARealOomKill) {
  std::vector<kmsg::Record> records;
  const std::string text = testing::ReadCapture("forensics/oom-kill-memcg.txt");
  for (std::string_view line : core::SplitLines(text)) {
    records.push_back(Rec(std::string(line)));
  }
  records.push_back(Rec("NVRM: Xid (PCI:0000:00:06): 31, pid=785, name=oob, channel 0x0000000a"));
  ASSERT_EQ(records.size(), 3u);
  auto mine = Correlate(records, {26730});
  EXPECT_EQ(mine[0].job_pid, 26730);
  EXPECT_TRUE(mine[0].oom_kill);
  EXPECT_EQ(mine[1].job_pid, 26730);
  EXPECT_TRUE(mine[1].oom_kill);
  EXPECT_EQ(mine[1].log_class, "oom");
  EXPECT_FALSE(mine[2].job_pid);
  EXPECT_EQ(mine[2].xid, 31u);
  EXPECT_EQ(mine[2].log_class, "nvidia.xid");
  auto other = Correlate(records, {785});
  EXPECT_FALSE(other[0].oom_kill);  // another process's OOM kill is not this job's
  EXPECT_EQ(other[2].job_pid, 785);
}

TEST(KmsgWatch, CorrelatesRecordsSavedByARunOnTheH200) {
  std::vector<kmsg::Record> records;
  kmsg::ParseKmsgBuffer(testing::ReadCapture("kernel_log/h200-run-kmsg-cuda-oob-xid13-xid31-torch-xid43.txt"),
                        [&](kmsg::Record&& r) { records.push_back(std::move(r)); });
  ASSERT_EQ(records.size(), 5u);
  auto oob = Correlate(records, {452});
  EXPECT_FALSE(oob[0].job_pid);  // "NVRM: GPU at PCI:..." names no process
  EXPECT_EQ(oob[2].job_pid, 452);
  EXPECT_EQ(oob[2].xid, 13u);
  EXPECT_EQ(oob[3].job_pid, 452);
  EXPECT_EQ(oob[3].xid, 31u);
  EXPECT_FALSE(oob[0].other_process);  // naming no process, it may be anyone's
  EXPECT_FALSE(oob[4].job_pid);        // torch's Xid 43 belongs to pid 474
  EXPECT_TRUE(oob[4].other_process);
  auto torch = Correlate(records, {474, 475});
  EXPECT_EQ(torch[4].job_pid, 474);
  EXPECT_FALSE(torch[4].other_process);
  EXPECT_EQ(torch[4].xid, 43u);
}

TEST(KmsgWatch, OpenFailsWithTheReason) {
  KmsgWatch watch;
  auto opened = watch.Open("/nonexistent/kmsg");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().message, "/nonexistent/kmsg: No such file or directory");
  EXPECT_EQ(watch.fd(), -1);
  watch.Drain();  // harmless when not open
  EXPECT_TRUE(watch.records().empty());
}

}  // namespace
}  // namespace gputriage::forensics
