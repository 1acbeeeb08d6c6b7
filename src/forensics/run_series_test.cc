#include "forensics/run_series.h"

#include <gtest/gtest.h>

namespace gputriage::forensics {
namespace {

// FinishRunRequest's message for `request` with those words, or "ok".
std::string Problem(RunRequest request, std::string_view timeout, std::string_view core_limit = "4G") {
  auto finished = FinishRunRequest(timeout, core_limit, &request);
  return finished.ok() ? "ok" : finished.error().message;
}

TEST(FinishRunRequest, TurnsTheWordsIntoLimits) {
  RunRequest request;
  request.command = {"./train.py"};
  ASSERT_TRUE(FinishRunRequest("90s", "512M", &request).ok());
  EXPECT_EQ(request.timeout, std::chrono::milliseconds(90000));
  EXPECT_EQ(request.core_cap_bytes, 512ull << 20);
  RunRequest no_timeout;
  no_timeout.command = {"./train.py"};
  ASSERT_TRUE(FinishRunRequest("", "4G", &no_timeout).ok());
  EXPECT_FALSE(no_timeout.timeout);
  EXPECT_EQ(no_timeout.core_cap_bytes, 4ull << 30);
}

TEST(FinishRunRequest, SaysWhatIsWrongWithTheCommandLine) {
  RunRequest request;
  EXPECT_EQ(Problem(request, ""), "run: no command given (usage: gputriage run [OPTIONS] -- CMD [ARGS...])");
  request.command = {"true"};
  EXPECT_EQ(Problem(request, ""), "ok");
  request.repeat = 0;
  EXPECT_EQ(Problem(request, ""), "run: --repeat must be between 1 and 10000, not 0");
  request.repeat = 10001;
  EXPECT_EQ(Problem(request, ""), "run: --repeat must be between 1 and 10000, not 10001");
  request.repeat = 10000;
  EXPECT_EQ(Problem(request, "xx"), "run: --timeout 'xx' is not a duration (examples: 90, 30s, 500ms, 10m, 2h)");
  EXPECT_EQ(Problem(request, "0"), "run: --timeout '0' is not a duration (examples: 90, 30s, 500ms, 10m, 2h)");
  EXPECT_EQ(Problem(request, "2h", "zz"), "run: --core-limit 'zz' is not a size (examples: 512M, 4G)");
}

}  // namespace
}  // namespace gputriage::forensics
