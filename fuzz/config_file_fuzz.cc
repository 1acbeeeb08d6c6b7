// Feeds arbitrary bytes to the config file's handling as a file gputriage reads at start-up: the
// syntax check (core/config_file.h) and, when it passes, CLI11's own TOML reader, which the CLI
// uses next. Beyond "no crash, no hang": the check's error always names the file, and text it
// accepts never makes CLI11's reader throw anything but its own ParseError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "core/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace core = gputriage::core;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto checked = core::CheckConfigSyntax(input, "fuzz.toml");
  if (!checked.ok()) {
    if (checked.error().message.rfind("config file fuzz.toml", 0) != 0) std::abort();
    return 0;
  }
  std::istringstream stream{std::string(input)};
  try {
    CLI::ConfigTOML toml;
    (void)toml.from_config(stream);
  } catch (const CLI::ParseError&) {
  }
  return 0;
}
