// Test support: runs the built gputriage as a user would (integration tests).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gputriage::testing {

struct CliOutput {
  int status = -1;  ///< exit status; -1 when it could not run or was killed
  std::string out;  ///< all of stdout
  std::string err;  ///< the tail of stderr
};

/// Runs `binary args...` with `env` ("NAME=value") added, `stdin_data` on stdin when given, under
/// a 60-second timeout.
CliOutput RunCli(const std::string& binary, std::vector<std::string> args, std::vector<std::string> env = {},
                 std::optional<std::string> stdin_data = std::nullopt);

}  // namespace gputriage::testing
