#include "core/json_parse.h"

#include <string>

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(ParseJson, ParsesAnObject) {
  Result<Json> json = ParseJson(R"({"a": [1, {"b": "x"}]})", "t.json");
  ASSERT_TRUE(json.ok()) << json.error().message;
  EXPECT_EQ((*json)["a"][1]["b"], "x");
}

// Failed before: every JSON input went straight to nlohmann::json::parse, and a document nested
// 100,000 levels deep crashed `snapshot show` and `report` (the recursive walk over the value
// overflowed the stack).
TEST(ParseJson, RefusesNestingDeeperThanTheLimitNamingTheInput) {
  Result<Json> deep = ParseJson(Nested(100000), "deep.json");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(deep.error().message,
            "deep.json: JSON nested deeper than 256 levels at line 1, column 257 (byte 257); not a file gputriage "
            "writes");
  EXPECT_TRUE(ParseJson(Nested(kMaxJsonDepth), "ok.json").ok());
  EXPECT_FALSE(ParseJson(Nested(kMaxJsonDepth + 1), "deep.json").ok());
  // Objects count as arrays do.
  std::string objects;
  for (int i = 0; i < 300; ++i) objects += "{\"a\":";
  objects += "1" + std::string(300, '}');
  EXPECT_FALSE(ParseJson(objects, "objects.json").ok());
}

TEST(ParseJson, BracketsInsideStringsAreNotNesting) {
  std::string text = "{\"s\": \"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  Result<Json> json = ParseJson(text, "strings.json");
  ASSERT_TRUE(json.ok()) << json.error().message;
  EXPECT_EQ((*json)["s"].get<std::string>().size(), 2001u);
  EXPECT_EQ(FindJsonDepthExcess("[\"]\"[[", 2), 5u);
  EXPECT_EQ(FindJsonDepthExcess("[[]][[]]", 2), std::nullopt);
}

TEST(ParseJson, InvalidJsonGivesThePosition) {
  Result<Json> bad = ParseJson("{\n  \"a\": tru\n}", "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "bad.json: invalid JSON at line 2, column 11 (byte 13): syntax error while parsing value - invalid "
            "literal; last read: '\"a\": tru<U+000A>'");
  Result<Json> empty = ParseJson("", "empty.json");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("empty.json: invalid JSON at line 1, column 1 (byte 1)"), std::string::npos)
      << empty.error().message;
}

}  // namespace
}  // namespace gputriage::core
