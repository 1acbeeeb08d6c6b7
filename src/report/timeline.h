// The run as a timeline for the HTML report: where the job's start, the GPU kernel-log records of
// the run, the failure and the bundle fall in time, t = 0 at the failure. Data (Timeline), a
// layout computed from it (positions, lanes, labels, caps: what the tests check) and the inline
// SVG drawn from the layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/telemetry.h"

namespace gputriage::report {

enum class TimelineKind {
  kStart,        ///< the job started
  kFailure,      ///< the signal, the exit or the timeout: t = 0
  kBundle,       ///< the crash bundle was written
  kJobRecord,    ///< a kernel-log record naming a process of the job
  kOtherRecord,  ///< a kernel-log record naming another process, or no process at all
};

/// One event. Texts are redacted and valid UTF-8; they are escaped when drawn.
struct TimelineEvent {
  TimelineKind kind = TimelineKind::kStart;
  std::string label;               ///< short: "start", "SIGSEGV", "Xid 79", "bundle"
  std::string text;                ///< what it is in full: the record's message, the start time
  std::optional<double> t_s;       ///< seconds from the failure (negative before); nullopt: unknown
  std::optional<double> kernel_s;  ///< records: the record's time on the kernel clock (s since boot)
  std::optional<int> job_pid;      ///< records: the job's pid the record names
};

/// The run's events. Records are kept in the order of the kernel log.
struct Timeline {
  bool recorded = false;               ///< false: no run was recorded (a log): nothing to draw
  std::vector<TimelineEvent> run;      ///< start, failure and bundle (those known)
  std::vector<TimelineEvent> records;  ///< GPU-related records and records naming the job
  /// True when the records' t_s are set (the run's start could be placed on the kernel clock);
  /// false: records have only kernel_s and are drawn on the kernel clock, apart from the run.
  bool records_aligned = false;
  std::string alignment;           ///< one sentence: how (or why not) records were placed against the failure
  size_t records_not_gpu = 0;      ///< records of the run neither GPU-related nor naming the job (not shown)
  std::vector<std::string> notes;  ///< what else the reader should know (records lost, log not collected)
  /// GPU telemetry of the run; t_s from the failure when telemetry_from_failure, else from the start.
  std::vector<core::TelemetrySample> telemetry;
  bool telemetry_from_failure = false;
  /// Why there is no telemetry (the manifest's reason), or what to know about it.
  std::string telemetry_note;
};

/// How a timeline is laid out.
struct TimelineOptions {
  double width = 960;        ///< of the SVG, in px
  size_t max_records = 200;  ///< record markers drawn at most; the others are counted as left out
};

/// One lane of markers: "run", "this job", "other process / no pid".
struct TimelineLane {
  std::string name;
  double y = 0;  ///< the markers' line
  bool empty = true;
};

/// A time axis under the lanes it serves.
struct TimelineAxis {
  double y = 0;
  double x0 = 0, x1 = 0;                              ///< the plot's extent
  std::vector<std::pair<double, std::string>> ticks;  ///< x and label
  std::string title;
};

/// One drawn marker.
struct TimelineMarker {
  TimelineKind kind = TimelineKind::kStart;
  std::string label;  ///< the event's
  std::string text;   ///< the event's, for the tooltip
  std::optional<double> t_s;
  size_t lane = 0;  ///< index into TimelineLayout::lanes
  double x = 0, y = 0;
  bool untimed = false;          ///< in the "no time" band: the record has no timestamp
  std::optional<int> label_row;  ///< 0 nearest the marker; nullopt: no room, the tooltip only
  double label_x = 0;            ///< the label's centre
};

struct TimelineLayout {
  double width = 0, height = 0;
  std::vector<TimelineLane> lanes;
  std::vector<TimelineAxis> axes;
  std::vector<TimelineMarker> markers;  ///< run events first, then records in time order
  std::optional<double> failure_x;      ///< where t = 0 is, for the line through the lanes
  double failure_y0 = 0, failure_y1 = 0;
  std::optional<std::pair<double, double>> untimed_band;  ///< x0, x1 of the "no time" band
  bool log_scale = false;                                 ///< the run's axis is logarithmic beyond ±1 s (a long run)
  size_t records_drawn = 0;
  size_t records_left_out = 0;  ///< over TimelineOptions::max_records, not drawn
  size_t records_untimed = 0;   ///< drawn in the "no time" band
};

/// Lays `timeline` out. Deterministic; never fails: an empty timeline gives the run's lane alone.
/// Past `options.max_records`, the records kept are the job's first, then those nearest the
/// failure (on the kernel clock: the newest); records without a time come last.
TimelineLayout LayoutTimeline(const Timeline& timeline, const TimelineOptions& options = {});

/// The layout as an inline <svg> element (no scripts, no links, no external references): one
/// <g class="marker ..."> per marker with a <title> tooltip holding the event's whole text.
std::string RenderTimelineSvg(const TimelineLayout& layout);

/// `text` escaped for HTML and SVG text and attribute values (& < > " ').
std::string EscapeHtml(std::string_view text);

}  // namespace gputriage::report
