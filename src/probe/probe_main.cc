// gputriage-probe NAME [--root DIR]: runs one vendor probe and prints its section as JSON on
// stdout. `gputriage-probe telemetry [--period S] [--root DIR]` samples every GPU each period
// into CSV lines on stdout until its reader goes away (run's telemetry.csv). The snapshot starts it under a watchdog,
// so a probe stuck in the driver can be abandoned. Kept apart from the gputriage binary so that the process that loads
// NVML or ROCm SMI maps as little else as possible (peak memory of a snapshot is this process's).
#include <sys/prctl.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "collect/vendors/telemetry.h"
#include "collect/vendors/vendors.h"
#include "core/os_view.h"

int main(int argc, char** argv) {
  using namespace gputriage;
  std::optional<std::string> root;
  std::string name;
  double period_s = 0.5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--root") == 0 && i + 1 < argc) {
      root = argv[++i];
    } else if (std::strcmp(argv[i], "--period") == 0 && i + 1 < argc) {
      char* end = nullptr;
      period_s = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(period_s > 0)) {
        std::fprintf(stderr, "gputriage-probe: --period '%s' is not a number of seconds\n", argv[i]);
        return 2;
      }
    } else if (name.empty() && argv[i][0] != '-') {
      name = argv[i];
    } else {
      std::fprintf(stderr, "gputriage-probe: unexpected argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (name == "telemetry") {
    // The sampler must not outlive the run that reads it.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    auto os = core::OsViewFromOptions(root);
    if (!os.ok()) {
      std::fprintf(stderr, "gputriage-probe: %s\n", os.error().message.c_str());
      return 2;
    }
    return collect::RunTelemetryLoop(*os, period_s, stdout);
  }
  const collect::VendorProbe* probe = collect::FindVendorProbe(name);
  if (probe == nullptr) {
    std::fprintf(stderr,
                 "gputriage-probe: unknown probe '%s' (usage: gputriage-probe NAME [--root DIR] | gputriage-probe "
                 "telemetry [--period S] [--root DIR])\n",
                 name.c_str());
    return 2;
  }
  auto os = core::OsViewFromOptions(root);
  if (!os.ok()) {
    std::fprintf(stderr, "gputriage-probe: %s\n", os.error().message.c_str());
    return 2;
  }
  std::string text = core::Json(probe->collect(*os)).dump(-1, ' ', false, core::Json::error_handler_t::replace);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}
