#include "kb/matcher.h"

#include <gtest/gtest.h>

namespace gputriage::kb {
namespace {

KnownIssue Issue(std::string id, std::vector<Signal> signals, std::vector<Condition> conditions = {}) {
  KnownIssue i;
  i.id = std::move(id);
  i.file = "kb/issues/" + i.id + ".yaml";
  i.signals = std::move(signals);
  i.conditions = std::move(conditions);
  return i;
}

Signal S(Source source, std::string pattern, bool required = true, int line = 7) {
  return Signal{source, std::move(pattern), required, line};
}

TEST(Matcher, RequiredSignalsAllMatchAndRankBySpecificity) {
  std::vector<KnownIssue> issues = {
      Issue("general", {S(Source::kAny, "illegal memory access")}),
      Issue("specific", {S(Source::kAny, "illegal memory access"),
                         S(Source::kStderr, "in function ggml_backend_cuda_buffer_init_tensor")}),
      Issue("kernel-only", {S(Source::kKmsg, R"(Xid \([^)]*\): 31,)")}),
      Issue("with-frame", {S(Source::kFrames, "^cudnn::"), S(Source::kSignal, "^SIGSEGV$")}),
  };
  auto m = Matcher::Build(issues);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->pattern_count(), 6u);
  (*m)->Feed(LineSource::kStderr, "CUDA error: an illegal memory access was encountered", 1, "stderr");
  (*m)->Feed(LineSource::kStderr, "  current device: 0, in function ggml_backend_cuda_buffer_init_tensor at x.cu:1", 2,
             "stderr");
  // A kmsg-only pattern does not match stderr lines...
  (*m)->Feed(LineSource::kStderr, "NVRM: Xid (PCI:0000:00:06): 31, pid=1", 3, "stderr");
  auto r = (*m)->Results(nullptr);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].issue->id, "specific");
  EXPECT_EQ(r[1].issue->id, "general");
  ASSERT_EQ(r[0].hits.size(), 2u);
  EXPECT_EQ(r[0].hits[1].line_number, 2u);
  // ...but does match a line of unknown origin (a mixed log).
  (*m)->Feed(LineSource::kUnknown, "[ 90.29] NVRM: Xid (PCI:0000:00:06): 31, pid=785", 4, "log");
  (*m)->Feed(LineSource::kFrames, "cudnn::detail::wgrad_kernel", 1, "frames");
  EXPECT_EQ((*m)->Results(nullptr).size(), 3u);
  (*m)->Feed(LineSource::kSignal, "SIGSEGV", 1, "signal");
  EXPECT_EQ((*m)->Results(nullptr).size(), 4u);
  (*m)->Reset();
  EXPECT_TRUE((*m)->Results(nullptr).empty());
}

TEST(Matcher, ABadPatternNamesItsEntryAndLine) {
  std::vector<KnownIssue> issues = {Issue("bad", {S(Source::kAny, "(unclosed", true, 12)})};
  auto m = Matcher::Build(issues);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message.rfind("kb/issues/bad.yaml:12: pattern does not compile: ", 0), 0u) << m.error().message;
}

TEST(Matcher, ConditionsRuleOutOrAddToTheScore) {
  Condition rocm;
  rocm.component = "rocm";
  rocm.versions = ">=6.0, <6.2";
  Condition arch;
  arch.gpu_arch = {"gfx1100"};
  std::vector<KnownIssue> issues = {Issue("cond", {S(Source::kAny, "hipErrorNoBinaryForGpu")}, {rocm, arch})};
  auto m = Matcher::Build(issues);
  ASSERT_TRUE(m.ok());
  (*m)->Feed(LineSource::kUnknown, "hipErrorNoBinaryForGpu: Unable to find code object", 1, "log");
  auto unknown = (*m)->Results(nullptr);
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].condition_notes[0], "unknown: no snapshot to check against");
  Facts yes;
  yes.versions = {{"rocm", "6.1.3"}};
  yes.gpu_archs = {"gfx1100"};
  auto matched = (*m)->Results(&yes);
  ASSERT_EQ(matched.size(), 1u);
  EXPECT_GT(matched[0].score, unknown[0].score);
  EXPECT_EQ(matched[0].condition_notes[0], "true: rocm 6.1.3 is in >=6.0, <6.2");
  Facts no = yes;
  no.versions = {{"rocm", "6.2.0"}};
  EXPECT_TRUE((*m)->Results(&no).empty());
}

TEST(Matcher, Versions) {
  EXPECT_EQ(VersionInRange("6.1.3", ">=6.0, <6.2"), true);
  EXPECT_EQ(VersionInRange("6.2", ">=6.0, <6.2"), false);
  EXPECT_EQ(VersionInRange("2.5.1+rocm6.2", "<2.6"), true);
  EXPECT_EQ(VersionInRange("12.4.127", "==12.4"), false);
  EXPECT_EQ(VersionInRange("12.4", "==12.4"), true);
  EXPECT_EQ(VersionInRange("v580.159.04", ">=580"), true);
  EXPECT_EQ(VersionInRange("unknown", ">=1"), std::nullopt);
  EXPECT_EQ(VersionInRange("1.0", "about 2"), std::nullopt);
}

}  // namespace
}  // namespace gputriage::kb
