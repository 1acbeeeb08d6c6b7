#include "core/config_file.h"

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

std::string ErrorOf(std::string_view text) {
  auto checked = CheckConfigSyntax(text, "/etc/gputriage.toml");
  return checked.ok() ? "" : checked.error().message;
}

TEST(ConfigSyntax, WhatCli11ReadsPasses) {
  EXPECT_EQ(ErrorOf(""), "");
  EXPECT_EQ(ErrorOf("# gputriage\n\ncolor = \"never\"\nredact = [\"corp-[0-9]+\", 'x]y']\n"
                    "[run]\ntimeout = \"30s\"  # a comment\n[doctor]\nexit-codes = \"nagios\"\n"
                    "[snapshot.diff]\n\"quoted key\" = 1\nlist = [\n  \"a\",\n  \"b\", # inside\n]\n"
                    "text = \"\"\"\nspans\nlines\n\"\"\"\n[[tables]]\n"),
            "");
}

// Failed before: CLI11 said "INI was not able to parse [run" with no line, and no file when the
// value of a key did not validate.
TEST(ConfigSyntax, AMistakeNamesTheFileAndTheLine) {
  EXPECT_EQ(ErrorOf("color = \"never\"\n[run\ntimeout = 1\n"),
            "config file /etc/gputriage.toml, line 2: `[run` is not a section header (expected [command])");
  EXPECT_EQ(ErrorOf("[run] x\n"),
            "config file /etc/gputriage.toml, line 1: `[run] x` is not a section header (expected [command])");
  EXPECT_EQ(ErrorOf("[]\n"),
            "config file /etc/gputriage.toml, line 1: `[]` is not a section header (expected [command])");
  EXPECT_EQ(ErrorOf("\n\ntimeout 30\n"),
            "config file /etc/gputriage.toml, line 3: `timeout 30` is neither `key = value`, a [section] nor a # "
            "comment");
  EXPECT_EQ(ErrorOf("++ = 1\n"), "config file /etc/gputriage.toml, line 1: `++` is not a key");
  EXPECT_EQ(ErrorOf("python =\n"), "config file /etc/gputriage.toml, line 1: `python` has no value");
  EXPECT_EQ(ErrorOf("x = \"open\n"), "config file /etc/gputriage.toml, line 1: a string is not closed: x = \"open");
  EXPECT_EQ(ErrorOf("a = 1\nredact = [1,\n2\n"),
            "config file /etc/gputriage.toml, line 2: the value begun here is never closed");
  EXPECT_EQ(ErrorOf("t = '''\nnever closed\n"),
            "config file /etc/gputriage.toml, line 1: the value begun here is never closed");
  EXPECT_EQ(ErrorOf(std::string_view("a = 1\n\0\n", 8)),
            "config file /etc/gputriage.toml: holds NUL bytes (not a TOML text file)");
  const std::string not_text =
      "config file /etc/gputriage.toml: not UTF-8 text (invalid UTF-8 or control bytes, which TOML does not allow)";
  EXPECT_EQ(ErrorOf("a = \"\xff\"\n"), not_text);
  EXPECT_EQ(ErrorOf("[run]\x1b[31m\n"), not_text);
  EXPECT_EQ(ErrorOf("[run]\r\ntimeout = \"1s\"\r\n"), "");  // CRLF line ends are TOML
  // A long line is shown cut.
  std::string shown = ErrorOf("[" + std::string(100, 'x') + "\n");
  EXPECT_NE(shown.find("`[" + std::string(59, 'x') + "...`"), std::string::npos) << shown;
}

}  // namespace
}  // namespace gputriage::core
