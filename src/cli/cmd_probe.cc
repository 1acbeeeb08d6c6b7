// `gputriage __probe NAME [--root DIR]`: runs one vendor probe and prints its section as JSON;
// `gputriage __probe telemetry [--period S]` samples the GPUs into CSV lines until its reader goes.
// Internal: the snapshot starts it as a helper process so that a probe stuck in the driver can
// be abandoned by the watchdog.
#include "cli/common.h"
#include "collect/snapshot.h"
#include "collect/telemetry.h"

namespace gputriage::cli {

Command ProbeCommand() {
  return Command{
      "__probe", "Internal: run one vendor probe in this process and print its JSON.",
      [](CLI::App& app) -> std::function<int()> {
        auto name = std::make_shared<std::string>();
        auto root = std::make_shared<std::optional<std::string>>();
        auto period = std::make_shared<double>(0.5);
        app.add_option("name", *name, "Probe name (nvidia, amd, telemetry)")->required();
        app.add_option("--period", *period, "telemetry: seconds between samples")->check(CLI::Range(0.1, 10.0));
        AddRootOption(app, *root);
        return [name, root, period]() {
          auto os = core::OsViewFromOptions(*root);
          if (!os.ok()) {
            return Fail(os.error().message, kExitUsage);
          }
          if (*name == "telemetry") return collect::RunTelemetryProbe(*os, *period, stdout);
          auto result = collect::RunProbeInProcess(*os, *name);
          if (!result.ok()) {
            return Fail(result.error().message, kExitUsage);
          }
          std::string text = result->dump(-1, ' ', false, core::Json::error_handler_t::replace);
          std::fwrite(text.data(), 1, text.size(), stdout);
          return kExitOk;
        };
      },
      /*hidden=*/true};
}

}  // namespace gputriage::cli
