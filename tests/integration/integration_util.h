// Helpers shared by the integration tests. Unity builds put several test files into one
// translation unit, so what more than one file needs lives here, once.
#pragma once

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "run_cli.h"

namespace gputriage {

/// tests/crashers/crasher, the real crashing program the run/pack/bundles tests supervise.
inline const std::string kCrasher = std::string(GT_CRASHERS_DIR) + "/crasher";

/// The whole file at `path`; "" when it cannot be read.
inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The peak RSS (KiB) of one `gputriage ARGS...`: this process's RUSAGE_CHILDREN holds the largest
// of every child it ever waited for (other tests' too, when the program runs them all), so a
// python3 that runs only this one reports its own. 0 when it could not be measured. Where the
// tool's code is sanitized (the default preset) ASan's quarantine is turned off for the run (it
// keeps freed memory, 256 MiB by default) and what the same binary takes for `--version` is
// subtracted (the sanitizers' own start-up), so the figure is what the work itself held.
inline long PeakRssKiB(std::vector<std::string> args) {
  auto measure = [](std::vector<std::string> args) -> long {
    std::vector<std::string> argv = {"-c",
                                     "import resource, subprocess, sys\n"
                                     "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
                                     "stderr=subprocess.DEVNULL)\n"
                                     "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
                                     GT_GPUTRIAGE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::CliOutput peak =
        testing::RunCli("/usr/bin/python3", argv,
                        {"ASAN_OPTIONS=quarantine_size_mb=0:thread_local_quarantine_size_kb=0:detect_leaks=0"});
    if (peak.status != 0 || peak.out.empty()) return 0;
    return std::stol(peak.out);
  };
  long peak = measure(std::move(args));
#if defined(GT_SANITIZED)
  long start_up = measure({"--version"});
  if (peak == 0 || start_up == 0) return 0;
  return std::max(1L, peak - start_up);
#else
  return peak;
#endif
}

}  // namespace gputriage
