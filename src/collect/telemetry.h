// `run`'s GPU telemetry: the sampler runs in a helper process (gputriage-probe telemetry), like the
// snapshot's vendor probes, because an NVML call can hang when the GPU is sick; this side reads its
// CSV lines and can always stop it.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/os_view.h"
#include "core/telemetry.h"

namespace gputriage::collect {

/// Starts `helper_command... telemetry --period <period_s>` (e.g. {"/usr/bin/gputriage-probe"} or
/// {"gputriage", "__probe"}) with its stdout on a pipe read by a thread. Never fails: a helper that
/// cannot start gives a session whose Stop() says why. Stop() ends the helper (SIGTERM, then
/// SIGKILL, then it is abandoned if it is stuck in the driver), within about 2 s.
std::unique_ptr<core::TelemetrySession> StartTelemetry(const std::vector<std::string>& helper_command, double period_s);

/// The helper's side (`gputriage __probe telemetry`, when gputriage-probe is not installed).
int RunTelemetryProbe(const core::OsView& os, double period_s, std::FILE* out);

/// The helper's output read into a recording: "# none: why", "# source=... period_s=...", the CSV
/// with monotonic times made relative to `origin_monotonic_s`. Exposed for tests.
core::TelemetryRecording ParseTelemetryStream(std::string_view text, double origin_monotonic_s);

}  // namespace gputriage::collect
