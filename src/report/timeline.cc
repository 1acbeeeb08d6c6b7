#include "report/timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/signals.h"
#include "report/report.h"
#include "report/report_internal.h"

namespace gputriage::report {

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

namespace {

// ---- the events ----

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "850 ms", "4.2 s", "3.5 min", "2.1 h": a duration as a reader takes it in.
std::string Duration(double seconds) {
  double s = std::abs(seconds);
  if (s < 1) return fmt::format("{:.0f} ms", s * 1000);
  if (s < 60) return fmt::format("{:.1f} s", s);
  if (s < 3600) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

// "t = -4.2 s", "t = 0", "t = +850 ms".
std::string RelativeTime(double t) {
  if (t == 0) return "t = 0";
  return fmt::format("t = {}{}", t < 0 ? "-" : "+", Duration(t));
}

// A record's short name on the timeline. The class comes from kmsg's classifier (which knows the
// messages); the words picked out here are only the few events a reader looks for first.
std::string RecordLabel(const core::RunKernelLogRecord& r) {
  if (r.xid) return fmt::format("Xid {}", *r.xid);
  if (r.oom_kill) return "OOM kill";
  const std::string text = Lower(r.message);
  if (text.find("fallen off the bus") != std::string::npos) return "fallen off the bus";
  if (text.find("page fault") != std::string::npos || text.find("vm fault") != std::string::npos ||
      text.find("protection_fault") != std::string::npos) {
    return "VM fault";
  }
  if (text.find("ring") != std::string::npos && text.find("timeout") != std::string::npos) return "ring timeout";
  if (r.log_class == "gpu_reset") return "GPU reset";
  if (r.log_class == "nvidia.xid") return "Xid";
  if (r.log_class == "nvidia.nvrm") return "NVRM";
  if (r.log_class == "mce") return "machine check";
  if (r.log_class == "ras") return "hardware error";
  if (r.log_class == "oom") return "OOM";
  if (r.log_class == "aer") return "PCIe AER";
  if (r.log_class == "iommu") return "IOMMU fault";
  if (r.log_class == "kfd") return "KFD";
  if (r.log_class == "amdgpu") return "amdgpu";
  return r.log_class.empty() ? "kernel" : Safe(r.log_class);
}

std::string FailureLabel(const ReportInput& in) {
  if (in.process) {
    const core::ProcessFile& p = *in.process;
    if (p.timed_out) return "timeout";
    if (p.primary.signal) return core::SignalName(*p.primary.signal);
    if (p.term_signal) return core::SignalName(*p.term_signal);
    if (p.exit_code) return fmt::format("exit {}", *p.exit_code);
  }
  if (in.manifest && in.manifest->exit_status) return fmt::format("exit status {}", *in.manifest->exit_status);
  return "failure";
}

std::string FailureText(const ReportInput& in, const std::string& label) {
  std::string text = label;
  if (in.manifest && in.manifest->exit_status) text += fmt::format(" (exit status {})", *in.manifest->exit_status);
  if (in.process && in.process->primary.classification && !in.process->primary.classification->summary.empty()) {
    text += ": " + Cut(Safe(in.process->primary.classification->summary), 300);
  }
  return text;
}

// Places the records against the failure when the bundle lets it: the run's start on the kernel
// clock is the manifest's start time less the boot time of the snapshot (both in whole seconds),
// checked against the window the records were read in (every record came while the job ran: the
// start is at most the first record's time and at least the last one's less the run's length).
void AlignRecords(const ReportInput& in, std::optional<double> duration_s, std::optional<double> failure_after_start,
                  Timeline& tl) {
  double first = std::numeric_limits<double>::infinity(), last = -first;
  for (const TimelineEvent& e : tl.records) {
    if (!e.kernel_s) continue;
    first = std::min(first, *e.kernel_s);
    last = std::max(last, *e.kernel_s);
  }
  if (tl.records.empty()) return;
  if (first > last) {
    tl.alignment = "No record has a time: they are drawn apart, in the order of the kernel log.";
    return;
  }
  const std::string apart =
      "The kernel-log records are drawn on the kernel's clock (seconds since boot), apart from the run: ";
  if (!duration_s || !failure_after_start) {
    tl.alignment = apart + "the bundle does not say how long the run took.";
    return;
  }
  std::optional<double> started, boot;
  if (in.manifest && in.manifest->timings && in.manifest->timings->started_at) {
    started = core::ParseUtcIso(*in.manifest->timings->started_at);
  }
  if (in.snapshot && in.snapshot->host && in.snapshot->host->boot_time) {
    boot = core::ParseUtcIso(*in.snapshot->host->boot_time);
  }
  if (!started || !boot) {
    tl.alignment = apart +
                   "the bundle does not say when the run started on that clock (it takes the snapshot's boot time; "
                   "`run --no-snapshot` leaves the snapshot out).";
    return;
  }
  double start = *started - *boot;
  const double lo = last - *duration_s, hi = first;
  // Both times are whole seconds: the estimate is good to about a second. Further off, the
  // snapshot is of another boot (report --snapshot of another day or machine).
  constexpr double kSlack = 2.0;
  std::string how =
      "Approximate (to about a second): the run's start on the kernel's clock is the manifest's start time less "
      "the snapshot's boot time, both in whole seconds";
  if (lo <= hi) {
    if (start < lo - kSlack || start > hi + kSlack) {
      tl.alignment = apart + fmt::format(
                                 "the snapshot's boot time puts the run's start at {:.1f} s since boot, "
                                 "but its records were written between {:.1f} s and {:.1f} s (another boot?).",
                                 start, first, last);
      return;
    }
    if (start < lo || start > hi) {
      start = std::clamp(start, lo, hi);
      how += ", moved into the window the records were read in";
    }
  }
  const double failure = start + *failure_after_start;
  for (TimelineEvent& e : tl.records) {
    if (e.kernel_s) e.t_s = *e.kernel_s - failure;
  }
  tl.records_aligned = true;
  tl.alignment = how + ".";
}

void AddNotes(const ReportInput& in, Timeline& tl) {
  if (!in.manifest) return;
  if (in.manifest->kernel_log && in.manifest->kernel_log->lost.value_or(0) > 0) {
    tl.notes.push_back(
        fmt::format("{} kernel-log record(s) were lost while the job ran (the kernel's ring buffer "
                    "wrapped before they were read).",
                    *in.manifest->kernel_log->lost));
  }
  if (auto it = in.manifest->files.find("kmsg.log");
      it != in.manifest->files.end() && it->second.present.has_value() && !*it->second.present) {
    tl.notes.push_back("The kernel log was not collected during the run" +
                       (it->second.reason ? ": " + Safe(*it->second.reason) : std::string()) + ".");
  }
}

}  // namespace

Timeline BuildTimeline(const ReportInput& in) {
  Timeline tl;
  if (!in.manifest && !in.process) return tl;
  tl.recorded = true;
  const core::BundleTimings timings =
      in.manifest && in.manifest->timings ? *in.manifest->timings : core::BundleTimings{};
  // The failure comes before the run's end by at least the capture that followed the signal.
  std::optional<double> failure_after_start;
  if (timings.duration_s && *timings.duration_s >= 0) {
    failure_after_start = std::max(0.0, *timings.duration_s - timings.capture_ms.value_or(0) / 1000.0);
  }

  tl.telemetry = in.telemetry;
  if (failure_after_start) {
    for (core::TelemetrySample& s : tl.telemetry) s.t_s -= *failure_after_start;
    tl.telemetry_from_failure = true;
  }
  if (in.manifest) {
    if (auto it = in.manifest->files.find("telemetry.csv"); it != in.manifest->files.end()) {
      tl.telemetry_note = Safe(it->second.reason.value_or(it->second.note.value_or("")));
    }
  }

  TimelineEvent start{.kind = TimelineKind::kStart, .label = "start", .text = "the job started"};
  if (timings.started_at) start.text += " at " + Safe(*timings.started_at);
  if (failure_after_start) {
    start.t_s = -*failure_after_start;
    start.text += ", " + Duration(*failure_after_start) + " before the failure";
  }
  tl.run.push_back(std::move(start));

  const std::string failure_label = FailureLabel(in);
  tl.run.push_back(
      {.kind = TimelineKind::kFailure, .label = failure_label, .text = FailureText(in, failure_label), .t_s = 0.0});

  if (in.manifest) {
    TimelineEvent bundle{.kind = TimelineKind::kBundle, .label = "bundle", .text = "the crash bundle was written"};
    if (in.manifest->created_at) bundle.text += " at " + Safe(*in.manifest->created_at);
    if (timings.signal_to_bundle_ms) {
      bundle.t_s = *timings.signal_to_bundle_ms / 1000;
    } else if (timings.bundle_write_ms && timings.duration_s && failure_after_start) {
      // No signal (an exit or a timeout): at least the rest of the run and the writing after it.
      bundle.t_s = *timings.duration_s - *failure_after_start + *timings.bundle_write_ms / 1000;
    }
    if (bundle.t_s) bundle.text += ", " + Duration(*bundle.t_s) + " after the failure";
    tl.run.push_back(std::move(bundle));
  }

  if (in.process) {
    for (const core::RunKernelLogRecord& r : in.process->kernel_log) {
      if (r.log_class.empty() && !r.xid && !r.oom_kill && !r.job_pid) {
        ++tl.records_not_gpu;
        continue;
      }
      TimelineEvent e{.kind = r.job_pid ? TimelineKind::kJobRecord : TimelineKind::kOtherRecord,
                      .label = RecordLabel(r),
                      .text = Cut(Safe(r.message), 600)};
      if (r.monotonic_us) e.kernel_s = static_cast<double>(*r.monotonic_us) / 1e6;
      e.job_pid = r.job_pid;
      tl.records.push_back(std::move(e));
    }
  }
  AlignRecords(in, timings.duration_s, failure_after_start, tl);
  AddNotes(in, tl);
  return tl;
}

// ---- the layout ----

namespace {

constexpr double kLeft = 150;  // lane names
constexpr double kRight = 16;
constexpr double kTop = 6;
constexpr double kUntimedBand = 120;  // the "no time" band, when there is one
constexpr double kBandGap = 16;
constexpr double kLabelRowHeight = 13;
constexpr int kLabelRows = 3;
constexpr double kLaneHeight = kLabelRows * kLabelRowHeight + 22;
constexpr double kAxisHeight = 40;
constexpr double kCharWidth = 6.2;  // of an 11 px sans-serif label, on average
constexpr size_t kLabelChars = 22;
constexpr double kMinTickGap = 46;
constexpr double kLogAbove_s = 120;  // a run axis longer than this is logarithmic beyond ±1 s

// Time to x, linear or "symmetric log" (linear within ±1 s, logarithmic beyond): a run of hours
// with records in its last seconds keeps them apart.
class Scale {
 public:
  Scale(double lo, double hi, double x0, double x1, bool log) : x0_(x0), x1_(x1), log_(log) {
    double flo = F(lo), fhi = F(hi);
    if (fhi - flo < 1e-9) {
      flo -= log ? 0.3 : 1.0;
      fhi += log ? 0.3 : 1.0;
    }
    const double pad = (fhi - flo) * 0.04;
    flo_ = flo - pad;
    fhi_ = fhi + pad;
  }
  double X(double t) const { return x0_ + (F(t) - flo_) / (fhi_ - flo_) * (x1_ - x0_); }
  double lo() const { return Inverse(flo_); }
  double hi() const { return Inverse(fhi_); }
  bool log() const { return log_; }

 private:
  double F(double t) const { return log_ ? std::copysign(std::log10(1 + std::abs(t)), t) : t; }
  double Inverse(double f) const { return log_ ? std::copysign(std::pow(10.0, std::abs(f)) - 1, f) : f; }
  double x0_, x1_, flo_ = 0, fhi_ = 1;
  bool log_;
};

std::string TickLabel(double t, double step, bool relative) {
  if (relative && std::abs(t) < step * 1e-6) return "0";
  const std::string sign = relative && t > 0 ? "+" : "";
  if (relative && step < 1)
    return fmt::format("{}{:.{}f} ms", sign, t * 1000,
                       std::max(0, -static_cast<int>(std::floor(std::log10(step * 1000)))));
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step))));
  return fmt::format("{}{:.{}f} s", sign, t, decimals);
}

std::vector<std::pair<double, std::string>> Ticks(const Scale& scale, bool relative) {
  std::vector<std::pair<double, std::string>> ticks;
  const double lo = scale.lo(), hi = scale.hi();
  if (scale.log()) {
    static const std::vector<std::pair<double, std::string>> kMarks = {
        {1, "1 s"},    {10, "10 s"},    {60, "1 min"},  {600, "10 min"},
        {3600, "1 h"}, {36000, "10 h"}, {86400, "1 d"}, {864000, "10 d"}};
    std::vector<std::pair<double, std::string>> candidates = {{0, "0"}};
    for (const auto& [t, name] : kMarks) {
      candidates.push_back({-t, "-" + name});
      candidates.push_back({t, "+" + name});
    }
    for (const auto& [t, name] : candidates) {
      if (t < lo || t > hi) continue;
      const double x = scale.X(t);
      bool crowded = std::any_of(ticks.begin(), ticks.end(),
                                 [&](const auto& tick) { return std::abs(tick.first - x) < kMinTickGap; });
      if (!crowded) ticks.push_back({x, name});
    }
    std::sort(ticks.begin(), ticks.end());
    return ticks;
  }
  const double step = NiceStep(hi - lo);
  for (double t = std::ceil(lo / step) * step; t <= hi && ticks.size() < 20; t += step) {
    ticks.push_back({scale.X(t), TickLabel(t, step, relative)});
  }
  return ticks;
}

// Greedy label placement: each label on the first of kLabelRows rows where it overlaps nothing.
// A label already shown nearby (within four of its widths) is not repeated: a burst of the same
// event reads as one label over its markers.
class LabelRows {
 public:
  LabelRows(double x_min, double x_max) : x_min_(x_min), x_max_(x_max) {}
  // The row and the centre for `label` at `x`; nullopt when full or shown nearby.
  std::optional<std::pair<int, double>> Place(double x, const std::string& label, size_t chars) {
    const double half = (static_cast<double>(chars) * kCharWidth + 6) / 2;
    for (const auto& [shown, at] : shown_) {
      if (shown == label && std::abs(at - x) < 8 * half) return std::nullopt;
    }
    const double centre = std::clamp(x, x_min_ + half, std::max(x_min_ + half, x_max_ - half));
    for (int row = 0; row < kLabelRows; ++row) {
      bool free = true;
      for (const auto& [a, b] : taken_[row]) {
        if (centre - half < b + 4 && centre + half > a - 4) free = false;
      }
      if (free) {
        taken_[row].push_back({centre - half, centre + half});
        shown_.push_back({label, x});
        return std::make_pair(row, centre);
      }
    }
    return std::nullopt;
  }

 private:
  double x_min_, x_max_;
  std::vector<std::pair<double, double>> taken_[kLabelRows];
  std::vector<std::pair<std::string, double>> shown_;
};

std::string ShortLabel(const std::string& label) {
  if (label.size() <= kLabelChars) return label;
  return Cut(label, kLabelChars - 3) + "...";
}

size_t Chars(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

TimelineMarker MarkerOf(const TimelineEvent& e) {
  TimelineMarker m;
  m.kind = e.kind;
  m.label = ShortLabel(e.label);
  std::string when = e.t_s        ? RelativeTime(*e.t_s)
                     : e.kernel_s ? fmt::format("{:.6f} s since boot", *e.kernel_s)
                                  : "time unknown";
  std::string who;
  if (e.kind == TimelineKind::kJobRecord) who = e.job_pid ? fmt::format(" · the job (pid {})", *e.job_pid) : "";
  if (e.kind == TimelineKind::kOtherRecord) who = " · other process / no pid";
  m.text = when + who + "\n" + e.text;
  m.t_s = e.t_s;
  return m;
}

// The records to draw: past `max`, the job's first, then one of each kind of event (a lone Xid
// among a thousand VM faults is kept), then those nearest the failure (the newest when they
// cannot be placed against it); those without a time last.
std::vector<size_t> RecordsToDraw(const Timeline& tl, size_t max) {
  std::vector<size_t> order(tl.records.size());
  std::iota(order.begin(), order.end(), 0);
  if (order.size() <= max) return order;
  auto closeness = [&](size_t i) {
    const TimelineEvent& e = tl.records[i];
    return std::make_tuple(!e.t_s && !e.kernel_s, e.t_s ? std::abs(*e.t_s) : e.kernel_s ? -*e.kernel_s : 0.0);
  };
  std::map<std::pair<TimelineKind, std::string>, size_t> nearest_of_label;
  for (size_t i : order) {
    auto [it, added] = nearest_of_label.try_emplace({tl.records[i].kind, tl.records[i].label}, i);
    if (!added && closeness(i) < closeness(it->second)) it->second = i;
  }
  auto key = [&](size_t i) {
    const TimelineEvent& e = tl.records[i];
    const bool representative = nearest_of_label.at({e.kind, e.label}) == i;
    return std::make_tuple(e.kind != TimelineKind::kJobRecord, !representative, closeness(i));
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  order.resize(max);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

TimelineLayout LayoutTimeline(const Timeline& tl, const TimelineOptions& options) {
  TimelineLayout layout;
  layout.width = std::max(options.width, kLeft + kRight + kUntimedBand + 200);
  const std::vector<size_t> drawn = RecordsToDraw(tl, options.max_records);
  layout.records_drawn = drawn.size();
  layout.records_left_out = tl.records.size() - drawn.size();

  bool any_untimed = false, any_kernel_only = false;
  for (size_t i : drawn) {
    const TimelineEvent& e = tl.records[i];
    if (!e.t_s && !e.kernel_s) any_untimed = true;
    if (!e.t_s && e.kernel_s) any_kernel_only = true;
  }
  for (const TimelineEvent& e : tl.run) any_untimed |= !e.t_s.has_value();
  // Records that have only the kernel's clock get their own panel and axis.
  const bool two_panels = any_kernel_only;

  const double x0 = kLeft;
  const double x1 = layout.width - kRight - (any_untimed ? kUntimedBand + kBandGap : 0);
  if (any_untimed) layout.untimed_band = std::make_pair(x1 + kBandGap, layout.width - kRight);

  // The run's axis: every timed run event, and the records placed against the failure.
  double lo = 0, hi = 0;
  for (const TimelineEvent& e : tl.run) {
    if (e.t_s) lo = std::min(lo, *e.t_s), hi = std::max(hi, *e.t_s);
  }
  for (size_t i : drawn) {
    if (const auto& t = tl.records[i].t_s) lo = std::min(lo, *t), hi = std::max(hi, *t);
  }
  layout.log_scale = hi - lo > kLogAbove_s;
  const Scale run_scale(lo, hi, x0, x1, layout.log_scale);
  double klo = std::numeric_limits<double>::infinity(), khi = -klo;
  for (size_t i : drawn) {
    const TimelineEvent& e = tl.records[i];
    if (!e.t_s && e.kernel_s) klo = std::min(klo, *e.kernel_s), khi = std::max(khi, *e.kernel_s);
  }
  const Scale kernel_scale(two_panels ? klo : 0, two_panels ? khi : 1, x0, x1, false);

  // Lanes and axes, top to bottom.
  double y = kTop;
  auto add_lane = [&](const std::string& name) {
    layout.lanes.push_back({name, y + kLabelRows * kLabelRowHeight + 12, true});
    y += kLaneHeight;
    return layout.lanes.size() - 1;
  };
  auto add_axis = [&](const Scale& scale, bool relative, std::string title) {
    layout.axes.push_back({y + 4, x0, x1, Ticks(scale, relative), std::move(title)});
    y += kAxisHeight;
  };
  const double panel_top = y;
  const size_t run_lane = add_lane("run");
  size_t job_lane = 0, other_lane = 0;
  if (!two_panels) {
    job_lane = add_lane("this job");
    other_lane = add_lane("other process / no pid");
  }
  layout.failure_x = run_scale.X(0);
  layout.failure_y0 = panel_top;
  layout.failure_y1 = y;
  add_axis(run_scale, true,
           layout.log_scale ? "seconds from the failure (logarithmic beyond ±1 s)" : "seconds from the failure");
  if (two_panels) {
    job_lane = add_lane("this job");
    other_lane = add_lane("other process / no pid");
    add_axis(kernel_scale, false, "kernel clock, seconds since boot (not aligned with the run)");
  }
  layout.height = y + 4;

  // Markers: x from the event's time, or a slot in the "no time" band.
  std::vector<std::vector<size_t>> untimed_in_lane(layout.lanes.size());
  auto place = [&](const TimelineEvent& e, size_t lane) {
    TimelineMarker m = MarkerOf(e);
    m.lane = lane;
    m.y = layout.lanes[lane].y;
    layout.lanes[lane].empty = false;
    if (e.t_s) {
      m.x = run_scale.X(*e.t_s);
    } else if (e.kernel_s && e.kind != TimelineKind::kStart && e.kind != TimelineKind::kBundle) {
      m.x = kernel_scale.X(*e.kernel_s);
    } else {
      m.untimed = true;
      untimed_in_lane[lane].push_back(layout.markers.size());
    }
    layout.markers.push_back(std::move(m));
  };
  for (const TimelineEvent& e : tl.run) place(e, run_lane);
  std::vector<size_t> by_time = drawn;
  std::stable_sort(by_time.begin(), by_time.end(), [&](size_t a, size_t b) {
    const TimelineEvent &ea = tl.records[a], &eb = tl.records[b];
    auto key = [](const TimelineEvent& e) {
      return std::make_tuple(!e.t_s && !e.kernel_s, e.t_s.value_or(e.kernel_s.value_or(0)));
    };
    return key(ea) < key(eb);
  });
  const size_t first_record = layout.markers.size();
  for (size_t i : by_time) {
    const TimelineEvent& e = tl.records[i];
    place(e, e.kind == TimelineKind::kJobRecord ? job_lane : other_lane);
    layout.records_untimed += layout.markers.back().untimed;
  }
  if (layout.untimed_band) {
    const auto [b0, b1] = *layout.untimed_band;
    for (const std::vector<size_t>& lane : untimed_in_lane) {
      for (size_t k = 0; k < lane.size(); ++k) {
        layout.markers[lane[k]].x = b0 + (static_cast<double>(k) + 0.5) / static_cast<double>(lane.size()) * (b1 - b0);
      }
    }
  }

  // Labels: the run's events first (failure, start, bundle), then records nearest the failure.
  std::vector<size_t> label_order(layout.markers.size());
  std::iota(label_order.begin(), label_order.end(), 0);
  auto priority = [&](size_t i) {
    const TimelineMarker& m = layout.markers[i];
    const int group = m.kind == TimelineKind::kFailure ? 0 : i < first_record ? 1 : m.untimed ? 3 : 2;
    const double closeness = m.t_s ? std::abs(*m.t_s) : -m.x;
    return std::make_tuple(group, closeness);
  };
  std::stable_sort(label_order.begin(), label_order.end(),
                   [&](size_t a, size_t b) { return priority(a) < priority(b); });
  std::vector<LabelRows> rows(layout.lanes.size(), LabelRows(x0 - 40, layout.width - 2));
  for (size_t i : label_order) {
    TimelineMarker& m = layout.markers[i];
    if (auto placed = rows[m.lane].Place(m.x, m.label, Chars(m.label))) {
      m.label_row = placed->first;
      m.label_x = placed->second;
    }
  }
  return layout;
}

// ---- the SVG ----

namespace {

std::string KindClass(TimelineKind kind) {
  switch (kind) {
    case TimelineKind::kStart:
      return "m-start";
    case TimelineKind::kFailure:
      return "m-failure";
    case TimelineKind::kBundle:
      return "m-bundle";
    case TimelineKind::kJobRecord:
      return "m-job";
    case TimelineKind::kOtherRecord:
      return "m-other";
  }
  return "m-other";
}

std::string Shape(const TimelineMarker& m) {
  const std::string x = SvgNumber(m.x), y = SvgNumber(m.y);
  switch (m.kind) {
    case TimelineKind::kStart:
      return fmt::format(R"(<circle cx="{}" cy="{}" r="5" fill="#57606a"/>)", x, y);
    case TimelineKind::kFailure:
      return fmt::format(R"(<path d="M{0} {1}l8 8l-8 8l-8-8z" fill="#cf222e"/>)", x, SvgNumber(m.y - 8));
    case TimelineKind::kBundle:
      return fmt::format(R"(<rect x="{}" y="{}" width="9" height="9" fill="#0969da"/>)", SvgNumber(m.x - 4.5),
                         SvgNumber(m.y - 4.5));
    case TimelineKind::kJobRecord:
      return fmt::format(R"(<path d="M{0} {1}l6 6l-6 6l-6-6z" fill="#bc4c00"/>)", x, SvgNumber(m.y - 6));
    case TimelineKind::kOtherRecord:
      return fmt::format(R"(<path d="M{0} {1}l6 11h-12z" fill="#8250df"/>)", x, SvgNumber(m.y - 6));
  }
  return "";
}

}  // namespace

std::string RenderTimelineSvg(const TimelineLayout& layout) {
  std::string svg = fmt::format(
      R"(<svg class="timeline" viewBox="0 0 {0} {1}" width="{0}" height="{1}" role="img" aria-label="Timeline of the run, t = 0 at the failure" font-family="system-ui, sans-serif" font-size="11">)"
      "\n",
      SvgNumber(layout.width), SvgNumber(layout.height));
  if (layout.untimed_band) {
    const auto [b0, b1] = *layout.untimed_band;
    svg += fmt::format(R"(<rect x="{}" y="2" width="{}" height="{}" fill="#f6f8fa"/>)"
                       R"(<text x="{}" y="{}" text-anchor="middle" fill="#57606a">no time</text>)"
                       "\n",
                       SvgNumber(b0 - 6), SvgNumber(b1 - b0 + 12), SvgNumber(layout.height - 4),
                       SvgNumber((b0 + b1) / 2), SvgNumber(layout.height - 8));
  }
  for (const TimelineLane& lane : layout.lanes) {
    svg += fmt::format(R"(<text x="6" y="{}" fill="#24292f" font-weight="600">{}</text>)", SvgNumber(lane.y + 4),
                       EscapeHtml(lane.name));
    svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#d0d7de"/>)", SvgNumber(kLeft),
                       SvgNumber(lane.y), SvgNumber(layout.width - kRight), SvgNumber(lane.y));
    if (lane.empty) {
      svg += fmt::format(R"(<text x="{}" y="{}" fill="#8c959f" font-style="italic">none</text>)", SvgNumber(kLeft + 6),
                         SvgNumber(lane.y - 6));
    }
    svg += "\n";
  }
  if (layout.failure_x) {
    svg += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#cf222e" stroke-dasharray="4 3"/>)"
                       "\n",
                       SvgNumber(*layout.failure_x), SvgNumber(layout.failure_y0), SvgNumber(layout.failure_y1));
  }
  for (const TimelineAxis& axis : layout.axes) {
    svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#57606a"/>)", SvgNumber(axis.x0),
                       SvgNumber(axis.y), SvgNumber(axis.x1), SvgNumber(axis.y));
    for (const auto& [x, label] : axis.ticks) {
      svg += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#57606a"/>)"
                         R"(<text x="{0}" y="{3}" text-anchor="middle" fill="#57606a">{4}</text>)",
                         SvgNumber(x), SvgNumber(axis.y), SvgNumber(axis.y + 4), SvgNumber(axis.y + 15),
                         EscapeHtml(label));
    }
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" fill="#24292f">{}</text>)",
                       SvgNumber((axis.x0 + axis.x1) / 2), SvgNumber(axis.y + 30), EscapeHtml(axis.title));
    svg += "\n";
  }
  for (const TimelineMarker& m : layout.markers) {
    svg += fmt::format(R"(<g class="marker {}"><title>{}</title>{})", KindClass(m.kind), EscapeHtml(m.text), Shape(m));
    if (m.label_row) {
      const double label_y = m.y - 11 - *m.label_row * kLabelRowHeight;
      svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" fill="#24292f">{}</text>)", SvgNumber(m.label_x),
                         SvgNumber(label_y), EscapeHtml(m.label));
    }
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

double NiceStep(double span) {
  if (span <= 0) return 1;
  const double raw = span / 6;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string SvgNumber(double v) { return fmt::format("{:.1f}", v); }

}  // namespace gputriage::report
