// The GPU telemetry of a run (telemetry.csv) as an inline SVG for the HTML report: one panel per
// quantity (temperature, power, SM clock, memory used), one line per GPU, t = 0 at the failure,
// and a strip marking the samples where a slowdown reason (thermal, power brake, power cap,
// hardware slowdown) was active. Data (the layout: what the tests check), then the SVG.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/telemetry.h"

namespace gputriage::report {

struct TelemetryPanel {
  std::string title;                                                          ///< "Temperature (°C)"
  double y0 = 0, y1 = 0;                                                      ///< the panel's extent in px
  double min = 0, max = 0;                                                    ///< the value range drawn
  std::vector<std::pair<int, std::vector<std::pair<double, double>>>> lines;  ///< device, points (x, y px)
};

struct TelemetryMark {
  int device = 0;
  double x = 0;
  std::string text;  ///< "t=-2.0 s GPU 0: hw_thermal_slowdown"
};

struct TelemetryChart {
  double width = 0, height = 0;
  double x0 = 0, x1 = 0;  ///< the plot's horizontal extent
  double t_min = 0, t_max = 0;
  std::optional<double> failure_x;  ///< t = 0
  std::vector<TelemetryPanel> panels;
  double marks_y = 0;
  std::vector<TelemetryMark> marks;  ///< samples with a slowdown reason active
  std::vector<std::pair<double, std::string>> ticks;
  std::string axis_title;
  size_t samples = 0;
  size_t devices = 0;
};

/// Lays out `samples`, whose t_s are seconds from the failure when `relative_to_failure`, else from
/// the job's start. Panels with no value in any sample are left out. Deterministic; an empty input
/// gives a chart without panels.
TelemetryChart LayoutTelemetry(const std::vector<core::TelemetrySample>& samples, bool relative_to_failure,
                               double width = 960);

/// The chart as an inline <svg> (no scripts, links or external references).
std::string RenderTelemetrySvg(const TelemetryChart& chart);

}  // namespace gputriage::report
