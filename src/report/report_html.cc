// `report --format html`: the Markdown report through md4c, with the run's timeline.
#include <fmt/format.h>

#include "report/markdown_html.h"
#include "report/report.h"
#include "report/report_internal.h"
#include "report/telemetry_chart.h"
#include "report/timeline.h"

namespace gputriage::report {
namespace {

// The kernel-log table lists this many records at most (the bundle has them all).
constexpr size_t kMaxTableRows = 500;

constexpr std::string_view kStyle =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;line-height:1.5;color:#1f2328;background:#fff;"
    "margin:0}\n"
    "main{max-width:64rem;margin:2rem auto;padding:0 1rem}\n"
    "h2{border-bottom:1px solid #d0d7de;padding-bottom:.3rem}\n"
    "h3{margin-top:1.8rem;border-bottom:1px solid #eaeef2;padding-bottom:.2rem}\n"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;padding:.8rem 1rem;border-radius:6px;"
    "font-size:.85rem}\n"
    "code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}\n"
    ":not(pre)>code{background:#eff1f3;padding:.1em .3em;border-radius:4px}\n"
    "li.task-list-item{list-style:none}li.task-list-item input{margin:0 .4em 0 -1.4em}\n"
    ".timeline svg,.telemetry svg{max-width:100%;height:auto;display:block;border:1px solid #d0d7de;"
    "border-radius:6px}\n"
    ".note{color:#57606a;font-size:.9rem;margin:.4rem 0}\n"
    ".legend{list-style:none;padding:0;margin:.5rem 0;display:flex;flex-wrap:wrap;gap:1.2rem;font-size:.85rem;"
    "color:#57606a}\n"
    ".key{display:inline-block;width:.65rem;height:.65rem;margin-right:.4rem}\n"
    ".k-start{background:#57606a;border-radius:50%}.k-failure{background:#cf222e;transform:rotate(45deg)}"
    ".k-bundle{background:#0969da}.k-job{background:#bc4c00;transform:rotate(45deg)}"
    ".k-other{background:#8250df;clip-path:polygon(50% 0,100% 100%,0 100%)}\n"
    "table.records{border-collapse:collapse;width:100%;font-size:.8rem;margin-top:.5rem}\n"
    "table.records th,table.records td{border:1px solid #d0d7de;padding:.2rem .4rem;text-align:left;"
    "vertical-align:top}\n"
    "table.records td.num{white-space:nowrap;font-variant-numeric:tabular-nums}\n"
    "table.records td.msg{font-family:ui-monospace,Menlo,Consolas,monospace;overflow-wrap:anywhere}\n"
    "tr.job td.who{color:#bc4c00}tr.other td.who{color:#8250df}\n"
    ".link-removed{text-decoration:underline dotted #cf222e}.image-removed{color:#57606a;font-style:italic}\n"
    "table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}\n"
    "th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}\n"
    "th{background:#f6f8fa}\n"
    "details{margin:.3rem 0}summary{cursor:pointer;font-family:ui-monospace,Menlo,Consolas,monospace;"
    "font-size:.85rem}\n"
    "footer{margin:2rem 0;color:#57606a;font-size:.8rem}\n";

// Nothing runs and nothing is fetched, even if something slipped past the escaping.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

// The Markdown as HTML; escaped in a <pre> when md4c cannot render it safely.
std::string MarkdownHtml(std::string_view markdown) {
  if (std::optional<std::string> html = MarkdownToSafeHtml(markdown)) return *html;
  return "<pre class=\"markdown\">" + EscapeHtml(markdown) + "</pre>\n";
}

std::string Legend() {
  return "<ul class=\"legend\"><li><span class=\"key k-start\"></span>the job's start</li>"
         "<li><span class=\"key k-failure\"></span>the failure (t = 0)</li>"
         "<li><span class=\"key k-bundle\"></span>the bundle written</li>"
         "<li><span class=\"key k-job\"></span>kernel log: this job</li>"
         "<li><span class=\"key k-other\"></span>kernel log: other process / no pid</li></ul>\n";
}

std::string Seconds(const std::optional<double>& s, bool sign) {
  if (!s) return "&#8212;";
  return fmt::format("{}{:.3f} s", sign && *s > 0 ? "+" : "", *s);
}

std::string RecordsTable(const Timeline& tl) {
  if (tl.records.empty()) return "";
  std::string html = fmt::format("<details{}><summary>The run's GPU kernel-log records ({})</summary>\n",
                                 tl.records.size() <= 20 ? " open" : "", tl.records.size());
  html +=
      "<table class=\"records\"><thead><tr><th>t</th><th>since boot</th><th>event</th><th>process</th>"
      "<th>message</th></tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < tl.records.size() && i < kMaxTableRows; ++i) {
    const TimelineEvent& e = tl.records[i];
    const bool job = e.kind == TimelineKind::kJobRecord;
    const std::string who =
        job ? (e.job_pid ? fmt::format("this job (pid {})", *e.job_pid) : "this job") : "other process / no pid";
    html += fmt::format(
        "<tr class=\"{}\"><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"who\">{}</td>"
        "<td class=\"msg\">{}</td></tr>\n",
        job ? "job" : "other", Seconds(e.t_s, true), e.kernel_s ? fmt::format("{:.6f}", *e.kernel_s) : "&#8212;",
        EscapeHtml(e.label), who, EscapeHtml(e.text));
  }
  html += "</tbody></table>\n";
  if (tl.records.size() > kMaxTableRows) {
    html += fmt::format(
        "<p class=\"note\">{} more records are not listed here: the bundle's process.json (kernel_log) and "
        "kmsg.log have them all.</p>\n",
        tl.records.size() - kMaxTableRows);
  }
  return html + "</details>\n";
}

// `text` escaped, its `code` spans as <code>.
std::string Note(const std::string& text) {
  std::string html = "<p class=\"note\">";
  bool code = false;
  for (char c : EscapeHtml(text)) {
    if (c != '`') {
      html.push_back(c);
      continue;
    }
    html += code ? "</code>" : "<code>";
    code = !code;
  }
  return html + (code ? "</code>" : "") + "</p>\n";
}

std::string TimelineSection(const Timeline& tl) {
  std::string html = "<section class=\"timeline\">\n<h3>Timeline</h3>\n";
  if (!tl.recorded) {
    return html +
           Note("No run was recorded: this report is from a log. `gputriage run -- CMD` records the run's timeline.") +
           "</section>\n";
  }
  const TimelineLayout layout = LayoutTimeline(tl);
  html += Note("t = 0 at the failure, negative before it. Hover over a marker for the whole record.");
  html += RenderTimelineSvg(layout);
  html += Legend();
  size_t job = 0;
  for (const TimelineEvent& e : tl.records) job += e.kind == TimelineKind::kJobRecord;
  if (tl.records.empty()) {
    html += Note("No GPU kernel-log record was written during the run.");
  } else {
    html +=
        Note(fmt::format("{} GPU kernel-log record(s) during the run: {} naming the job, {} naming another "
                         "process or no process (these are often what explains a hang).",
                         tl.records.size(), job, tl.records.size() - job));
  }
  if (layout.records_left_out > 0) {
    html += Note(fmt::format(
        "{} of them are drawn and {} are left out (drawn first: the job's, then one of each "
        "kind of event, then those nearest the failure); the table below lists {}.",
        layout.records_drawn, layout.records_left_out,
        tl.records.size() > kMaxTableRows ? fmt::format("the first {}", kMaxTableRows) : std::string("them all")));
  }
  if (layout.records_untimed > 0) {
    html +=
        Note(fmt::format("{} record(s) have no time: they are drawn in the \"no time\" band, in the order of "
                         "the kernel log.",
                         layout.records_untimed));
  }
  if (!tl.alignment.empty()) html += Note(tl.alignment);
  if (tl.records_not_gpu > 0) {
    html +=
        Note(fmt::format("{} other record(s) of the run are neither GPU-related nor about the job: not shown "
                         "(the bundle's kmsg.log has them).",
                         tl.records_not_gpu));
  }
  for (const std::string& note : tl.notes) html += Note(note);
  html += RecordsTable(tl);
  return html + "</section>\n";
}

std::string TelemetrySection(const Timeline& tl) {
  if (!tl.recorded) return "";
  std::string html = "<section class=\"telemetry\">\n<h3>GPU telemetry</h3>\n";
  if (tl.telemetry.empty()) {
    html += Note(tl.telemetry_note.empty() ? "The bundle has no GPU telemetry (telemetry.csv)."
                                           : "No GPU telemetry: " + tl.telemetry_note + ".");
    return html + "</section>\n";
  }
  const TelemetryChart chart = LayoutTelemetry(tl.telemetry, tl.telemetry_from_failure);
  html +=
      Note(fmt::format("{} sample(s) of {} GPU(s){}. Red marks: a slowdown reason (thermal, power brake, power cap, "
                       "hardware slowdown) was active; hover over one for the reasons.",
                       chart.samples, chart.devices,
                       tl.telemetry_from_failure ? ", t = 0 at the failure" : ", t = 0 at the job's start"));
  html += RenderTelemetrySvg(chart);
  if (!tl.telemetry_note.empty()) html += Note(tl.telemetry_note);
  return html + "</section>\n";
}

// Every thread's stack, each collapsible: the crashed one open.
std::string ThreadsSection(const std::vector<ThreadStack>& threads) {
  if (threads.empty()) return "";
  std::string html = fmt::format("<section class=\"threads\">\n<h3>Threads ({})</h3>\n", threads.size());
  for (const ThreadStack& t : threads) {
    html += fmt::format("<details{}><summary>{}</summary>\n<pre><code>", t.crashed ? " open" : "", EscapeHtml(t.title));
    for (const std::string& f : t.frames) html += EscapeHtml(f) + "\n";
    html += "</code></pre></details>\n";
  }
  return html + "</section>\n";
}

}  // namespace

std::string RenderHtml(const core::Json& r, const Timeline& timeline, const std::vector<ThreadStack>& threads) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta http-equiv=\"Content-Security-Policy\" content=\"" + std::string(kContentSecurityPolicy) + "\">\n";
  html += "<meta name=\"referrer\" content=\"no-referrer\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + EscapeHtml(JsonText(r["title"])) + "</title>\n";
  html += "<style>\n" + std::string(kStyle) + "</style>\n</head>\n<body>\n<main>\n";
  html += MarkdownHtml(MarkdownHead(r));
  html += TimelineSection(timeline);
  html += TelemetrySection(timeline);
  html += MarkdownHtml(MarkdownBody(r));
  html += ThreadsSection(threads);
  html += "<footer>Generated by gputriage report from " + EscapeHtml(JsonText(r["source"])) + ".</footer>\n";
  html += "</main>\n</body>\n</html>\n";
  return html;
}

}  // namespace gputriage::report
