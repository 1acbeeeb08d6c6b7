#include "core/redact_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

using ::testing::ElementsAre;

TEST(RedactJob, ProcessReportCommandThreadsAndClassification) {
  ProcessReport report;
  report.command = "python train.py --api-key k3y --lr 0.1";
  report.executable = "/usr/bin/python3";
  report.threads.push_back(ThreadState{.tid = 7, .name = "token=abc"});
  report.threads.front().frames.push_back(Frame{.pc = 0x401000, .function = "load_token_file"});
  report.classification = Classification{.kind = "null-dereference",
                                         .summary = "crashed reading https://u:pw@host/x",
                                         .detail = "password=hunter2",
                                         .evidence = {{"stderr", "Authorization: Bearer abcdefgh12345678"}}};
  RedactProcessReport(report);
  EXPECT_EQ(report.command, "python train.py --api-key <redacted> --lr 0.1");
  EXPECT_EQ(report.executable, "/usr/bin/python3");
  EXPECT_EQ(report.threads.front().name, "token=<redacted>");
  EXPECT_EQ(report.threads.front().frames.front().function, "load_token_file");
  EXPECT_EQ(report.classification->summary, "crashed reading https://u:<redacted>@host/x");
  EXPECT_EQ(report.classification->detail, "password=<redacted>");
  EXPECT_EQ(report.classification->evidence.front().text, "Authorization: Bearer <redacted>");
  ProcessReport again = report;
  RedactProcessReport(again);
  EXPECT_EQ(ToJson(again), ToJson(report));
}

TEST(RedactJob, BundleManifestAndProcessFile) {
  Bundle bundle;
  bundle.manifest = BundleManifest{};
  bundle.manifest->command = std::vector<std::string>{"mysql", "-pS3cret", "--password", "two words"};
  bundle.manifest->signature = "null-dereference token=abc";
  bundle.process.primary.command = "mysql -pS3cret --password two words";
  bundle.process.signature = "null-dereference token=abc";
  bundle.process.kernel_log.push_back(RunKernelLogRecord{.message = "audit: password=x"});
  bundle.process.hang_dumps.push_back(ProcessReport{.command = "sshpass -p S3cret ssh host"});
  bundle.stderr_tail = "token=abc\n";
  RedactBundle(bundle);
  EXPECT_THAT(*bundle.manifest->command, ElementsAre("mysql", "-p<redacted>", "--password", "<redacted>"));
  EXPECT_EQ(bundle.manifest->signature, "null-dereference token=<redacted>");
  EXPECT_EQ(bundle.process.primary.command, "mysql -p<redacted> --password <redacted> words");
  EXPECT_EQ(bundle.process.signature, "null-dereference token=<redacted>");
  EXPECT_EQ(bundle.process.kernel_log.front().message, "audit: password=<redacted>");
  EXPECT_EQ(bundle.process.hang_dumps.front().command, "sshpass -p <redacted> ssh host");
  EXPECT_EQ(bundle.stderr_tail, "token=abc\n");  // quoted lines are redacted where they are quoted
}

}  // namespace
}  // namespace gputriage::core
