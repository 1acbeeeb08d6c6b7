// Wall-clock helpers for timestamps in snapshots, bundles and logs.
#pragma once

#include <optional>
#include <string>

namespace gputriage::core {

/// Seconds since the Unix epoch, now.
double NowEpochSeconds();

/// "2026-12-02T13:30:00Z" (whole seconds) or with `millis` "2026-12-02T13:30:00.123Z". UTC.
std::string FormatUtcIso(double epoch_seconds, bool millis = false);

/// Parses the format above (and without fraction); nullopt when it does not match.
std::optional<double> ParseUtcIso(const std::string& text);

}  // namespace gputriage::core
