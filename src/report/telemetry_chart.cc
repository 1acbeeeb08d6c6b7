#include "report/telemetry_chart.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "report/report_internal.h"
#include "report/timeline.h"

namespace gputriage::report {

namespace {

constexpr double kChartLeft = 150, kChartRight = 20, kChartTop = 8, kPanel = 70, kGap = 18, kMarks = 22, kAxis = 34;
// Colours for GPUs 0..7 (then repeating): distinguishable, and none is the failure's red.
constexpr const char* kColours[] = {"#0969da", "#1a7f37", "#8250df", "#bc4c00",
                                    "#1b7c83", "#9a6700", "#bf3989", "#57606a"};

struct Quantity {
  const char* title;
  std::function<std::optional<double>(const core::TelemetrySample&)> value;
};

const std::vector<Quantity>& Quantities() {
  static const std::vector<Quantity> kQuantities = {
      {"Temperature (°C)",
       [](const core::TelemetrySample& s) -> std::optional<double> {
         if (!s.temperature_c) return std::nullopt;
         return static_cast<double>(*s.temperature_c);
       }},
      {"Power (W)", [](const core::TelemetrySample& s) { return s.power_w; }},
      {"SM clock (MHz)",
       [](const core::TelemetrySample& s) -> std::optional<double> {
         if (!s.sm_clock_mhz) return std::nullopt;
         return static_cast<double>(*s.sm_clock_mhz);
       }},
      {"Memory used (GiB)",
       [](const core::TelemetrySample& s) -> std::optional<double> {
         if (!s.memory_used_mib) return std::nullopt;
         return *s.memory_used_mib / 1024.0;
       }},
  };
  return kQuantities;
}

std::string Value(double v) {
  if (std::fabs(v) >= 100 || v == std::floor(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}

}  // namespace

TelemetryChart LayoutTelemetry(const std::vector<core::TelemetrySample>& samples, bool relative_to_failure,
                               double width) {
  TelemetryChart c;
  c.width = width;
  c.x0 = kChartLeft;
  c.x1 = width - kChartRight;
  c.samples = samples.size();
  c.axis_title = relative_to_failure ? "seconds from the failure" : "seconds from the job's start";
  std::set<int> devices;
  if (samples.empty()) {
    c.height = kChartTop;
    return c;
  }
  c.t_min = c.t_max = samples.front().t_s;
  for (const core::TelemetrySample& s : samples) {
    c.t_min = std::min(c.t_min, s.t_s);
    c.t_max = std::max(c.t_max, s.t_s);
    devices.insert(s.device);
  }
  if (relative_to_failure) c.t_max = std::max(c.t_max, 0.0);
  if (c.t_max - c.t_min < 1) c.t_max = c.t_min + 1;
  c.devices = devices.size();
  auto x_of = [&](double t) { return c.x0 + (t - c.t_min) / (c.t_max - c.t_min) * (c.x1 - c.x0); };
  double y = kChartTop;
  for (const Quantity& q : Quantities()) {
    std::map<int, std::vector<std::pair<double, double>>> values;  // device -> (t, value)
    double lo = 0, hi = 0;
    bool any = false;
    for (const core::TelemetrySample& s : samples) {
      std::optional<double> v = q.value(s);
      if (!v) continue;
      lo = any ? std::min(lo, *v) : *v;
      hi = any ? std::max(hi, *v) : *v;
      any = true;
      values[s.device].emplace_back(s.t_s, *v);
    }
    if (!any) continue;
    double pad = std::max((hi - lo) * 0.1, hi == lo ? std::max(std::fabs(hi) * 0.05, 1.0) : 0.0);
    // Every quantity plotted is one that cannot go below zero: the axis does not either.
    double bottom = lo >= 0 ? std::max(lo - pad, 0.0) : lo - pad;
    TelemetryPanel panel{.title = q.title, .y0 = y, .y1 = y + kPanel, .min = bottom, .max = hi + pad, .lines = {}};
    for (auto& [device, points] : values) {
      std::sort(points.begin(), points.end());
      std::vector<std::pair<double, double>> px;
      for (const auto& [t, v] : points) {
        px.emplace_back(x_of(t), panel.y1 - (v - panel.min) / (panel.max - panel.min) * kPanel);
      }
      panel.lines.emplace_back(device, std::move(px));
    }
    c.panels.push_back(std::move(panel));
    y += kPanel + kGap;
  }
  c.marks_y = y + kMarks / 2;
  for (const core::TelemetrySample& s : samples) {
    std::vector<std::string> reasons;
    for (const std::string& r : s.throttle_reasons) {
      if (core::IsSlowdownReason(r)) reasons.push_back(r);
    }
    if (reasons.empty()) continue;
    c.marks.push_back({.device = s.device,
                       .x = x_of(s.t_s),
                       .text = fmt::format("t={:+.1f} s GPU {}: {}", s.t_s, s.device, fmt::join(reasons, ", "))});
  }
  y += kMarks;
  if (relative_to_failure && c.t_min <= 0 && c.t_max >= 0) c.failure_x = x_of(0);
  double step = NiceStep(c.t_max - c.t_min);
  for (double t = std::ceil(c.t_min / step) * step; t <= c.t_max + 1e-9; t += step) {
    c.ticks.emplace_back(x_of(t), Value(std::fabs(t) < 1e-9 ? 0 : t));
  }
  c.height = y + kAxis;
  return c;
}

std::string RenderTelemetrySvg(const TelemetryChart& c) {
  std::string svg = fmt::format(
      R"(<svg class="telemetry" viewBox="0 0 {0} {1}" width="{0}" height="{1}" role="img" aria-label="GPU telemetry during the run" font-family="system-ui, sans-serif" font-size="11">)"
      "\n",
      SvgNumber(c.width), SvgNumber(c.height));
  for (const TelemetryPanel& p : c.panels) {
    svg += fmt::format(R"(<g class="panel"><text x="6" y="{}" fill="#24292f" font-weight="600">{}</text>)",
                       SvgNumber(p.y0 + 12), EscapeHtml(p.title));
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" fill="#57606a">{}</text>)", SvgNumber(c.x0 - 6),
                       SvgNumber(p.y0 + 10), Value(p.max));
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" fill="#57606a">{}</text>)", SvgNumber(c.x0 - 6),
                       SvgNumber(p.y1), Value(p.min));
    svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#d0d7de"/>)", SvgNumber(c.x0),
                       SvgNumber(p.y0), SvgNumber(c.x1 - c.x0), SvgNumber(p.y1 - p.y0));
    for (const auto& [device, points] : p.lines) {
      std::string d;
      for (const auto& [x, y] : points) d += (d.empty() ? "M" : " L") + SvgNumber(x) + " " + SvgNumber(y);
      const char* colour = kColours[static_cast<size_t>(device) % std::size(kColours)];
      svg += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="1.5"><title>GPU {}</title></path>)", d,
                         colour, device);
      if (points.size() == 1) {
        svg += fmt::format(R"(<circle cx="{}" cy="{}" r="2.5" fill="{}"/>)", SvgNumber(points[0].first),
                           SvgNumber(points[0].second), colour);
      }
    }
    svg += "</g>\n";
  }
  svg +=
      fmt::format(R"(<text x="6" y="{}" fill="#24292f" font-weight="600">Slowdown</text>)", SvgNumber(c.marks_y + 4));
  if (c.marks.empty() && c.samples > 0) {
    svg += fmt::format(R"(<text x="{}" y="{}" fill="#8c959f" font-style="italic">none</text>)", SvgNumber(c.x0 + 6),
                       SvgNumber(c.marks_y + 4));
  }
  for (const TelemetryMark& m : c.marks) {
    svg += fmt::format(
        R"(<g class="slowdown"><rect x="{}" y="{}" width="3" height="12" fill="#cf222e"/><title>{}</title></g>)",
        SvgNumber(m.x - 1.5), SvgNumber(c.marks_y - 6), EscapeHtml(m.text));
  }
  svg += "\n";
  if (c.failure_x && !c.panels.empty()) {
    svg += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#cf222e" stroke-dasharray="4 3"/>)"
                       "\n",
                       SvgNumber(*c.failure_x), SvgNumber(c.panels.front().y0), SvgNumber(c.marks_y + 8));
  }
  double axis_y = c.height - kAxis + 6;
  svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#57606a"/>)", SvgNumber(c.x0), SvgNumber(axis_y),
                     SvgNumber(c.x1), SvgNumber(axis_y));
  for (const auto& [x, label] : c.ticks) {
    svg += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#57606a"/>)", SvgNumber(x),
                       SvgNumber(axis_y), SvgNumber(axis_y + 4));
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" fill="#57606a">{}</text>)", SvgNumber(x),
                       SvgNumber(axis_y + 15), label);
  }
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" fill="#57606a">{}</text>)", SvgNumber(c.x1),
                     SvgNumber(axis_y + 28), EscapeHtml(c.axis_title));
  // The legend: which colour is which GPU.
  std::set<int> devices;
  for (const TelemetryPanel& p : c.panels) {
    for (const auto& line : p.lines) devices.insert(line.first);
  }
  double lx = c.x0;
  for (int device : devices) {
    const char* colour = kColours[static_cast<size_t>(device) % std::size(kColours)];
    svg += fmt::format(
        R"(<rect x="{}" y="{}" width="10" height="3" fill="{}"/><text x="{}" y="{}" fill="#24292f">GPU {}</text>)",
        SvgNumber(lx), SvgNumber(axis_y + 24), colour, SvgNumber(lx + 14), SvgNumber(axis_y + 29), device);
    lx += 60;
  }
  svg += "\n</svg>\n";
  return svg;
}

}  // namespace gputriage::report
