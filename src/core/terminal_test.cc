#include "core/terminal.h"

#include <gtest/gtest.h>

#include <string>

namespace gputriage::core {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

std::string R(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += kReplacement;
  return out;
}

TEST(SanitizeForTerminal, EscapeSequencesLoseTheirControlCharacters) {
  // Set the window title, clear the screen, ring the bell: none of it reaches the terminal.
  EXPECT_EQ(SanitizeForTerminal("\x1b]0;owned\a\x1b[2Jname"), R(1) + "]0;owned" + R(1) + R(1) + "[2Jname");
  EXPECT_EQ(SanitizeForTerminal("a\rb\x7f"
                                "c\x08"),
            "a" + R(1) + "b" + R(1) + "c" + R(1));
  // 8-bit CSI and OSC, as UTF-8 (U+009B, U+009D), and the bidi override of Trojan Source.
  EXPECT_EQ(SanitizeForTerminal("x\xC2\x9B"
                                "31my\xC2\x9D"
                                "0;t"),
            "x" + R(1) + "31my" + R(1) + "0;t");
  EXPECT_EQ(SanitizeForTerminal("id\xE2\x80\xAE"
                                "txt.exe\xE2\x81\xA6"),
            "id" + R(1) + "txt.exe" + R(1));
  // Invalid UTF-8 and a lone C1 byte.
  EXPECT_EQ(SanitizeForTerminal("\xff\x9b"), R(2));
}

TEST(SanitizeForTerminal, NewlinesOnlyWhenAsked) {
  EXPECT_EQ(SanitizeForTerminal("one\ntwo"), "one" + R(1) + "two");
  EXPECT_EQ(SanitizeForTerminal("one\ntwo", /*keep_newlines=*/true), "one\ntwo");
}

TEST(SanitizeForTerminal, PrintableTextIsKeptAndTwiceIsOnce) {
  const std::string text = "ümlaut — 中文 🙂\ttab ¡ £ \xC2\xA0 nbsp";
  EXPECT_EQ(SanitizeForTerminal(text), text);
  const std::string dirty = "\x1b[31m\xC2\x9B\xE2\x80\xAE\n\xff";
  const std::string once = SanitizeForTerminal(dirty);
  EXPECT_EQ(SanitizeForTerminal(once), once);
}

}  // namespace
}  // namespace gputriage::core
