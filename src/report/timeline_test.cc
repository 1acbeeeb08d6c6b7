#include "report/timeline.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "report/report.h"

namespace gputriage::report {
namespace {

using core::Json;

// The job started at 17:10:00 on a machine booted at 17:00:00: 600 s on the kernel clock. It ran
// 12.5 s, the capture after the signal took 40 ms: the failure is at 612.46 s since boot.
ReportInput ARun() {
  ReportInput in;
  in.source = "/bundles/20261202T171012Z-python3-474";
  in.manifest = core::BundleManifest{};
  in.manifest->created_at = "2026-12-02T17:10:13Z";
  in.manifest->exit_status = 139;
  in.manifest->timings = core::BundleTimings{
      .started_at = "2026-12-02T17:10:00Z", .duration_s = 12.5, .capture_ms = 40, .signal_to_bundle_ms = 300};
  in.process = core::ProcessFile{};
  in.process->primary.signal = 11;
  in.process->term_signal = 11;
  in.snapshot = core::Snapshot{};
  in.snapshot->host = core::Host{.boot_time = "2026-12-02T17:00:00Z"};
  return in;
}

core::RunKernelLogRecord Record(std::string message, std::string log_class, std::optional<uint64_t> us,
                                std::optional<int> job_pid = std::nullopt, std::optional<uint32_t> xid = std::nullopt) {
  return {.message = std::move(message),
          .log_class = std::move(log_class),
          .monotonic_us = us,
          .job_pid = job_pid,
          .xid = xid};
}

ReportInput RunWithRecords() {
  ReportInput in = ARun();
  in.process->kernel_log = {
      Record("NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
             "nvidia.xid", 605'000'000, std::nullopt, 79),
      Record("usb 1-1: new high-speed USB device number 3", "", 606'000'000),
      Record("NVRM: Xid (PCI:0000:00:06): 43, pid=474, name=python3, channel 0x0000000a", "nvidia.xid", 611'000'000,
             474, 43),
      Record("NVRM: GPU 0000:00:06.0: GPU has fallen off the bus.", "nvidia.nvrm", std::nullopt),
  };
  return in;
}

TEST(Timeline, RunEventsAndRecordsRelativeToTheFailure) {
  Timeline tl = BuildTimeline(RunWithRecords());
  ASSERT_TRUE(tl.recorded);
  ASSERT_EQ(tl.run.size(), 3u);
  EXPECT_EQ(tl.run[0].label, "start");
  EXPECT_NEAR(*tl.run[0].t_s, -12.46, 1e-9);
  EXPECT_EQ(tl.run[0].text, "the job started at 2026-12-02T17:10:00Z, 12.5 s before the failure");
  EXPECT_EQ(tl.run[1].label, "SIGSEGV");
  EXPECT_EQ(*tl.run[1].t_s, 0.0);
  EXPECT_EQ(tl.run[2].label, "bundle");
  EXPECT_NEAR(*tl.run[2].t_s, 0.3, 1e-9);

  // The USB record is neither GPU-related nor the job's: counted, not shown.
  EXPECT_EQ(tl.records_not_gpu, 1u);
  ASSERT_EQ(tl.records.size(), 3u);
  EXPECT_TRUE(tl.records_aligned);
  EXPECT_EQ(tl.alignment,
            "Approximate (to about a second): the run's start on the kernel's clock is the manifest's start time "
            "less the snapshot's boot time, both in whole seconds.");
  // A record without the job's pid is kept, as another process's (or nobody's).
  EXPECT_EQ(tl.records[0].kind, TimelineKind::kOtherRecord);
  EXPECT_EQ(tl.records[0].label, "Xid 79");
  EXPECT_NEAR(*tl.records[0].t_s, 605 - 612.46, 1e-6);
  EXPECT_EQ(tl.records[1].kind, TimelineKind::kJobRecord);
  EXPECT_EQ(tl.records[1].label, "Xid 43");
  EXPECT_EQ(tl.records[1].job_pid, 474);
  EXPECT_NEAR(*tl.records[1].t_s, 611 - 612.46, 1e-6);
  EXPECT_EQ(tl.records[2].label, "fallen off the bus");
  EXPECT_FALSE(tl.records[2].t_s.has_value());
  EXPECT_FALSE(tl.records[2].kernel_s.has_value());
}

TEST(Timeline, ALogHasNoRun) {
  ReportInput in;
  in.source = "job.log";
  EXPECT_FALSE(BuildTimeline(in).recorded);
}

TEST(Timeline, WithoutTheBootTimeRecordsStayOnTheKernelClock) {
  ReportInput in = RunWithRecords();
  in.snapshot.reset();
  Timeline tl = BuildTimeline(in);
  EXPECT_FALSE(tl.records_aligned);
  EXPECT_FALSE(tl.records[0].t_s.has_value());
  EXPECT_EQ(*tl.records[0].kernel_s, 605.0);
  EXPECT_NE(tl.alignment.find("`run --no-snapshot` leaves the snapshot out"), std::string::npos) << tl.alignment;
}

TEST(Timeline, ASnapshotOfAnotherBootIsNotUsed) {
  ReportInput in = RunWithRecords();
  in.snapshot->host->boot_time = "2026-11-30T08:00:00Z";
  Timeline tl = BuildTimeline(in);
  EXPECT_FALSE(tl.records_aligned);
  EXPECT_NE(tl.alignment.find("another boot?"), std::string::npos) << tl.alignment;
}

// The boot time says the run started at 606 s, but a record of the run is at 605 s: the start
// moves to the latest it can be.
TEST(Timeline, TheStartIsKeptInsideTheRecordsWindow) {
  ReportInput in = RunWithRecords();
  in.snapshot->host->boot_time = "2026-12-02T16:59:54Z";
  Timeline tl = BuildTimeline(in);
  ASSERT_TRUE(tl.records_aligned);
  EXPECT_NE(tl.alignment.find("moved into the window the records were read in"), std::string::npos);
  EXPECT_NEAR(*tl.records[0].t_s, -12.46, 1e-6);  // the first record is at the start
}

TEST(Timeline, NotesSayWhatIsMissing) {
  ReportInput in = ARun();
  in.manifest->kernel_log = core::BundleKernelLog{.records = 0, .lost = 2};
  in.manifest->files["kmsg.log"] = core::BundleFile{.present = false, .reason = "/dev/kmsg: Operation not permitted"};
  Timeline tl = BuildTimeline(in);
  EXPECT_EQ(tl.notes,
            (std::vector<std::string>{"2 kernel-log record(s) were lost while the job ran (the kernel's ring buffer "
                                      "wrapped before they were read).",
                                      "The kernel log was not collected during the run: /dev/kmsg: Operation not "
                                      "permitted."}));
}

TEST(Timeline, SecretsInRecordsAreRedacted) {
  ReportInput in = ARun();
  in.process->kernel_log = {Record("amdgpu: token=ghp_0123456789abcdefghijABCDEFGHIJ012345", "amdgpu", 610'000'000)};
  Timeline tl = BuildTimeline(in);
  ASSERT_EQ(tl.records.size(), 1u);
  EXPECT_EQ(tl.records[0].text.find("ghp_0123"), std::string::npos) << tl.records[0].text;
  EXPECT_EQ(RenderTimelineSvg(LayoutTimeline(tl)).find("ghp_0123"), std::string::npos);
}

const TimelineMarker* Find(const TimelineLayout& layout, const std::string& label) {
  for (const TimelineMarker& m : layout.markers) {
    if (m.label == label) return &m;
  }
  return nullptr;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(TimelineLayout, PositionsFollowTime) {
  Timeline tl = BuildTimeline(RunWithRecords());
  TimelineLayout layout = LayoutTimeline(tl);
  ASSERT_EQ(layout.markers.size(), 6u);  // start, failure, bundle and three records
  ASSERT_EQ(layout.lanes.size(), 3u);
  EXPECT_EQ(layout.lanes[0].name, "run");
  EXPECT_EQ(layout.lanes[1].name, "this job");
  EXPECT_EQ(layout.lanes[2].name, "other process / no pid");
  ASSERT_EQ(layout.axes.size(), 1u);  // records placed against the failure share the run's axis
  EXPECT_FALSE(layout.log_scale);
  const TimelineMarker *start = Find(layout, "start"), *failure = Find(layout, "SIGSEGV"),
                       *bundle = Find(layout, "bundle"), *xid79 = Find(layout, "Xid 79"),
                       *xid43 = Find(layout, "Xid 43"), *bus = Find(layout, "fallen off the bus");
  ASSERT_TRUE(start && failure && bundle && xid79 && xid43 && bus);
  EXPECT_EQ(failure->x, *layout.failure_x);
  EXPECT_LT(start->x, xid79->x);
  EXPECT_LT(xid79->x, xid43->x);
  EXPECT_LT(xid43->x, failure->x);
  EXPECT_LT(failure->x, bundle->x);
  // Linear: the distances are in proportion to the times.
  EXPECT_NEAR((failure->x - xid43->x) / (failure->x - start->x), 1.46 / 12.46, 1e-6);
  EXPECT_EQ(xid43->lane, 1u);
  EXPECT_EQ(xid79->lane, 2u);
  EXPECT_EQ(xid79->y, layout.lanes[2].y);
  // The record without a time is in the "no time" band, right of the plot.
  ASSERT_TRUE(layout.untimed_band.has_value());
  EXPECT_TRUE(bus->untimed);
  EXPECT_GE(bus->x, layout.untimed_band->first);
  EXPECT_LE(bus->x, layout.untimed_band->second);
  EXPECT_GT(layout.untimed_band->first, layout.axes[0].x1);
  EXPECT_EQ(layout.records_untimed, 1u);
  EXPECT_EQ(layout.records_left_out, 0u);
  // Every marker is labelled here: they are far apart.
  for (const TimelineMarker& m : layout.markers) EXPECT_TRUE(m.label_row.has_value()) << m.label;
  std::string svg = RenderTimelineSvg(layout);
  EXPECT_EQ(Count(svg, "<g class=\"marker "), 6u);
  EXPECT_EQ(Count(svg, "<g class=\"marker m-other\">"), 2u);
  EXPECT_NE(svg.find("<title>t = -7.5 s · other process / no pid\nNVRM: Xid (PCI:0000:00:06): 79, "
                     "pid=&#39;&lt;unknown&gt;&#39;, name=&lt;unknown&gt;, GPU has fallen off the bus.</title>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find(">0</text>"), std::string::npos);  // the axis has t = 0
}

TEST(TimelineLayout, NoRecordsStillDrawsTheRun) {
  Timeline tl = BuildTimeline(ARun());
  TimelineLayout layout = LayoutTimeline(tl);
  EXPECT_EQ(layout.markers.size(), 3u);
  EXPECT_TRUE(layout.lanes[1].empty);
  EXPECT_TRUE(layout.lanes[2].empty);
  EXPECT_FALSE(layout.untimed_band.has_value());
  std::string svg = RenderTimelineSvg(layout);
  EXPECT_EQ(Count(svg, "<g class=\"marker "), 3u);
  EXPECT_EQ(Count(svg, ">none</text>"), 2u);
}

// Records the run cannot be placed against: their own panel, on the kernel clock.
TEST(TimelineLayout, RecordsOnTheKernelClockGetTheirOwnAxis) {
  ReportInput in = RunWithRecords();
  in.snapshot.reset();
  Timeline tl = BuildTimeline(in);
  TimelineLayout layout = LayoutTimeline(tl);
  ASSERT_EQ(layout.axes.size(), 2u);
  EXPECT_EQ(layout.axes[1].title, "kernel clock, seconds since boot (not aligned with the run)");
  const TimelineMarker *xid79 = Find(layout, "Xid 79"), *xid43 = Find(layout, "Xid 43");
  ASSERT_TRUE(xid79 && xid43);
  EXPECT_LT(xid79->x, xid43->x);
  EXPECT_GT(xid79->y, layout.axes[0].y);  // below the run's axis
  EXPECT_LT(xid79->y, layout.axes[1].y);
  EXPECT_LT(layout.failure_y1, layout.axes[1].y);  // the failure's line does not cross the kernel panel
}

// A thousand records, a few of them the job's and far from the failure: those are kept, then the
// others nearest the failure; the rest are counted.
TEST(TimelineLayout, CapsTheRecordsDrawn) {
  ReportInput in = ARun();
  in.manifest->timings->duration_s = 1000;
  for (int i = 0; i < 1000; ++i) {
    const bool job = i % 200 == 0;
    in.process->kernel_log.push_back(Record(fmt::format("amdgpu: ring gfx timeout {}", i), "amdgpu",
                                            (600 + i) * uint64_t{1'000'000},
                                            job ? std::optional<int>(474) : std::nullopt));
  }
  Timeline tl = BuildTimeline(in);
  ASSERT_TRUE(tl.records_aligned);
  TimelineLayout layout = LayoutTimeline(tl, {.max_records = 100});
  EXPECT_EQ(layout.records_drawn, 100u);
  EXPECT_EQ(layout.records_left_out, 900u);
  EXPECT_EQ(layout.markers.size(), 103u);
  size_t job = 0;
  double earliest_other = 1e9;
  for (const TimelineMarker& m : layout.markers) {
    if (m.kind == TimelineKind::kJobRecord) ++job;
    if (m.kind == TimelineKind::kOtherRecord) earliest_other = std::min(earliest_other, *m.t_s);
  }
  EXPECT_EQ(job, 5u);
  // The failure is at 600 + 1000 - 0.04 s: the 95 other records kept are the last ones.
  EXPECT_GT(earliest_other, -100.0);
  EXPECT_TRUE(layout.log_scale);  // 1000 s: logarithmic beyond ±1 s
  // Markers are in time order, left to right, lane by lane.
  double previous = -1;
  for (size_t i = 3; i < layout.markers.size(); ++i) {
    EXPECT_GE(layout.markers[i].x, previous);
    previous = layout.markers[i].x;
  }
  // Labels never overlap within a lane's row.
  for (size_t a = 0; a < layout.markers.size(); ++a) {
    for (size_t b = a + 1; b < layout.markers.size(); ++b) {
      const TimelineMarker &ma = layout.markers[a], &mb = layout.markers[b];
      if (!ma.label_row || ma.label_row != mb.label_row || ma.lane != mb.lane) continue;
      const double wa = ma.label.size() * 6.2 + 6, wb = mb.label.size() * 6.2 + 6;
      EXPECT_GE(std::abs(ma.label_x - mb.label_x), (wa + wb) / 2 - 0.01) << ma.label << " / " << mb.label;
    }
  }
  EXPECT_TRUE(Find(layout, "SIGSEGV")->label_row.has_value());
  // A burst of one event is labelled now and then, not at every marker.
  size_t labelled = 0;
  for (const TimelineMarker& m : layout.markers) labelled += m.kind == TimelineKind::kOtherRecord && m.label_row;
  EXPECT_GE(labelled, 1u);
  EXPECT_LE(labelled, 10u);
  std::string svg = RenderTimelineSvg(LayoutTimeline(tl));
  EXPECT_EQ(Count(svg, "<g class=\"marker "), 203u);  // the default cap: 200 records
}

// A lone Xid long before a flood of VM faults near the failure is still drawn.
TEST(TimelineLayout, EachKindOfEventIsDrawnPastTheCap) {
  ReportInput in = ARun();
  in.manifest->timings->duration_s = 100;
  in.process->kernel_log.push_back(
      Record("NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has "
             "fallen off the bus.",
             "nvidia.xid", 601'000'000, std::nullopt, 79));
  for (int i = 0; i < 1000; ++i) {
    in.process->kernel_log.push_back(Record("amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24)",
                                            "amdgpu", 690'000'000 + i * 10'000));
  }
  Timeline tl = BuildTimeline(in);
  TimelineLayout layout = LayoutTimeline(tl, {.max_records = 50});
  EXPECT_EQ(layout.records_drawn, 50u);
  EXPECT_EQ(layout.records_left_out, 951u);
  const TimelineMarker* xid = Find(layout, "Xid 79");
  ASSERT_NE(xid, nullptr);
  EXPECT_NEAR(*xid->t_s, 601 - 699.96, 1e-6);
}

TEST(TimelineLayout, ALongRunHasALogarithmicAxis) {
  ReportInput in = ARun();
  in.manifest->timings->duration_s = 3 * 3600;
  in.process->kernel_log = {Record("NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>'", "nvidia.xid",
                                   (600 + 3 * 3600 - 2) * uint64_t{1'000'000}, std::nullopt, 79)};
  TimelineLayout layout = LayoutTimeline(BuildTimeline(in));
  ASSERT_TRUE(layout.log_scale);
  std::vector<std::string> ticks;
  for (const auto& [x, label] : layout.axes[0].ticks) ticks.push_back(label);
  EXPECT_NE(std::find(ticks.begin(), ticks.end(), "-1 h"), ticks.end());
  EXPECT_NE(std::find(ticks.begin(), ticks.end(), "0"), ticks.end());
  // Two seconds before the failure is not crushed against it: at least 60 px apart.
  EXPECT_GT(*layout.failure_x - Find(layout, "Xid 79")->x, 60);
  EXPECT_LT(Find(layout, "start")->x, Find(layout, "Xid 79")->x);
}

TEST(TimelineLayout, RecordsWithoutAnyTime) {
  ReportInput in = ARun();
  for (int i = 0; i < 3; ++i) {
    in.process->kernel_log.push_back(Record("amdgpu: GPU reset begin!", "gpu_reset", std::nullopt));
  }
  Timeline tl = BuildTimeline(in);
  EXPECT_EQ(tl.alignment, "No record has a time: they are drawn apart, in the order of the kernel log.");
  TimelineLayout layout = LayoutTimeline(tl);
  EXPECT_EQ(layout.axes.size(), 1u);
  EXPECT_EQ(layout.records_untimed, 3u);
  EXPECT_LT(layout.markers[3].x, layout.markers[4].x);
  EXPECT_LT(layout.markers[4].x, layout.markers[5].x);
  EXPECT_EQ(layout.markers[3].label, "GPU reset");
}

TEST(TimelineLayout, UnknownDurationPutsTheStartInTheNoTimeBand) {
  ReportInput in = ARun();
  in.manifest->timings = core::BundleTimings{};
  TimelineLayout layout = LayoutTimeline(BuildTimeline(in));
  const TimelineMarker* start = Find(layout, "start");
  ASSERT_TRUE(start);
  EXPECT_TRUE(start->untimed);
  EXPECT_TRUE(Find(layout, "bundle")->untimed);
  EXPECT_FALSE(Find(layout, "SIGSEGV")->untimed);
}

}  // namespace
}  // namespace gputriage::report
