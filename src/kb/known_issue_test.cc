#include "kb/known_issue.h"

#include <gtest/gtest.h>

namespace gputriage::kb {
namespace {

constexpr const char* kGood = R"(schema: gputriage.issue/1
id: sample-entry
title: "A sample"
vendor: nvidia
category: illegal-address
verdict: application
signals:
  - source: stderr
    pattern: 'an illegal memory access was encountered'
  - source: kmsg
    pattern: 'Xid \([^)]*\): 31,'
    required: false
conditions:
  - component: cuda
    versions: ">=12.0, <13"
  - gpu_arch: [sm_90]
explanation: "A kernel touched memory it must not."
fixes:
  - kind: code
    action: "Find the kernel with compute-sanitizer."
    cost: "A slower run."
references:
  - url: https://example.org/a
    note: "says so"
  - https://example.org/b
)";

TEST(KnownIssue, ParsesAWellFormedEntry) {
  auto issue = ParseKnownIssue(kGood, "kb/issues/sample-entry.yaml");
  ASSERT_TRUE(issue.ok()) << issue.error().message;
  EXPECT_EQ(issue->id, "sample-entry");
  EXPECT_EQ(issue->category, core::Category::kIllegalAddress);
  ASSERT_EQ(issue->signals.size(), 2u);
  EXPECT_EQ(issue->signals[0].source, Source::kStderr);
  EXPECT_TRUE(issue->signals[0].required);
  EXPECT_FALSE(issue->signals[1].required);
  EXPECT_EQ(issue->signals[1].line, 11);
  ASSERT_EQ(issue->conditions.size(), 2u);
  EXPECT_EQ(issue->conditions[0].versions, ">=12.0, <13");
  EXPECT_EQ(issue->conditions[1].gpu_arch, std::vector<std::string>{"sm_90"});
  ASSERT_EQ(issue->references.size(), 2u);
  EXPECT_EQ(issue->references[1].url, "https://example.org/b");
}

std::string Without(std::string text, const std::string& from, const std::string& to = "") {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(KnownIssue, ErrorsNameTheFileAndLine) {
  const char* file = "kb/issues/sample-entry.yaml";
  EXPECT_EQ(ParseKnownIssue(Without(kGood, "category: illegal-address", "category: crashes"), file).error().message,
            "kb/issues/sample-entry.yaml:5: category 'crashes' is not one of illegal-address|page-fault|"
            "device-assert|arch-mismatch|abi-mismatch|numerical|hang-timeout|oom|hardware|driver-runtime|"
            "compiler-jit|other");
  EXPECT_EQ(ParseKnownIssue(Without(kGood, "  - source: kmsg", "  - source: dmesg"), file).error().message,
            "kb/issues/sample-entry.yaml:10: unknown source 'dmesg' (stderr|kmsg|frames|signal|any)");
  EXPECT_EQ(ParseKnownIssue(kGood, "kb/issues/other-name.yaml").error().message,
            "kb/issues/other-name.yaml:2: id 'sample-entry' differs from the file name 'other-name'");
  EXPECT_EQ(ParseKnownIssue(Without(kGood, "title: \"A sample\"\n"), file).error().message,
            "kb/issues/sample-entry.yaml:1: missing 'title'");
  EXPECT_EQ(ParseKnownIssue("schema: [\n", file).error().message.rfind("kb/issues/sample-entry.yaml:", 0), 0u);
  EXPECT_EQ(ParseKnownIssue("just text", file).error().message,
            "kb/issues/sample-entry.yaml:1: expected a mapping (a known-issue entry)");
  std::string no_required = Without(kGood, "    pattern: 'an illegal memory access was encountered'",
                                    "    pattern: 'an illegal memory access was encountered'\n    required: false");
  EXPECT_EQ(ParseKnownIssue(no_required, file).error().message,
            "kb/issues/sample-entry.yaml:8: at least one signal must be required");
  EXPECT_EQ(ParseKnownIssue(Without(kGood, "    versions: \">=12.0, <13\"\n"), file).error().message,
            "kb/issues/sample-entry.yaml:14: 'component' and 'versions' go together");
}

}  // namespace
}  // namespace gputriage::kb
