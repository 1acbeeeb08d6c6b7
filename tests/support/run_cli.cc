#include "run_cli.h"

#include <chrono>

#include "core/subprocess.h"

namespace gputriage::testing {

CliOutput RunCli(const std::string& binary, std::vector<std::string> args, std::vector<std::string> env,
                 std::optional<std::string> stdin_data) {
  args.insert(args.begin(), binary);
  core::RunOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  options.extra_env = std::move(env);
  options.stdin_data = std::move(stdin_data);
  auto result = core::RunWithTimeout(args, options);
  CliOutput output;
  if (!result.ok()) return output;
  output.status = result->exit_code.value_or(-1);
  output.out = result->stdout_data;
  output.err = result->stderr_tail;
  return output;
}

}  // namespace gputriage::testing
