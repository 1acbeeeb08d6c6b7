#include "core/text.h"

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

TEST(TextTest, ParseNumbers) {
  EXPECT_EQ(ParseU64("0x10de"), 0x10deu);
  EXPECT_EQ(ParseU64(" 42\n"), 42u);
  EXPECT_EQ(ParseU64("10de", 16), 0x10deu);
  EXPECT_EQ(ParseU64("42abc"), std::nullopt);
  EXPECT_EQ(ParseU64("99999999999999999999999"), std::nullopt);
  EXPECT_EQ(ParseU64(""), std::nullopt);
  EXPECT_EQ(ParseI64("-1"), -1);
  EXPECT_EQ(ParseDouble("24.62"), 24.62);
}

TEST(TextTest, SanitizeUtf8KeepsTextAndReplacesGarbage) {
  EXPECT_EQ(SanitizeUtf8("GPU 0 \xC2\xB0"
                         "C\ttab"),
            "GPU 0 \xC2\xB0"
            "C\ttab");
  EXPECT_EQ(SanitizeUtf8("a\xff"
                         "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(SanitizeUtf8(std::string("a\0b", 3)),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(SanitizeUtf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // truncated sequence
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

TEST(TextTest, Splitting) {
  EXPECT_EQ(SplitLines("a\r\nb\n").size(), 2u);
  EXPECT_EQ(SplitWhitespace("  a \t b  ").size(), 2u);
  EXPECT_EQ(Split("a::b", ':').size(), 3u);
  auto kv = ParseKeyValueLines("Model: \t\t NVIDIA H200\nno separator\n: empty key\n", ':');
  ASSERT_EQ(kv.size(), 1u);
  EXPECT_EQ(kv[0].first, "Model");
  EXPECT_EQ(kv[0].second, "NVIDIA H200");
}

}  // namespace
}  // namespace gputriage::core

namespace gputriage::core {
namespace {

TEST(ParseDurationSeconds, AcceptsTheUsualForms) {
  EXPECT_EQ(ParseDurationSeconds("90"), 90.0);
  EXPECT_EQ(ParseDurationSeconds("1.5s"), 1.5);
  EXPECT_EQ(ParseDurationSeconds("500ms"), 0.5);
  EXPECT_EQ(ParseDurationSeconds("10m"), 600.0);
  EXPECT_EQ(ParseDurationSeconds("2h"), 7200.0);
  EXPECT_EQ(ParseDurationSeconds("-1"), std::nullopt);
  EXPECT_EQ(ParseDurationSeconds("5 parsecs"), std::nullopt);
  EXPECT_EQ(ParseDurationSeconds(""), std::nullopt);
  EXPECT_EQ(ParseDurationSeconds("9999h"), std::nullopt);
}

TEST(ParseByteSize, AcceptsBinaryMultiples) {
  EXPECT_EQ(ParseByteSize("4096"), 4096u);
  EXPECT_EQ(ParseByteSize("512K"), 512u << 10);
  EXPECT_EQ(ParseByteSize("64MiB"), 64u << 20);
  EXPECT_EQ(ParseByteSize("4G"), 4ull << 30);
  EXPECT_EQ(ParseByteSize("1tb"), 1ull << 40);
  EXPECT_EQ(ParseByteSize("12Q"), std::nullopt);
  EXPECT_EQ(ParseByteSize("99999999999999T"), std::nullopt);
  EXPECT_EQ(ParseByteSize("G"), std::nullopt);
}

}  // namespace
}  // namespace gputriage::core
