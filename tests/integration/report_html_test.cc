// `gputriage report --format html` on a real crash bundle: a job whose output holds markup,
// links and a token, killed by SIGSEGV under `gputriage run`, with the kernel-log records of a
// real H200 capture placed in its bundle. The page is parsed by python3's html.parser: tags
// balanced, nothing that runs or loads, the timeline's markers all there, no secret.
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "core/subprocess.h"
#include "integration_util.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

constexpr std::string_view kHtmlToken = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

struct ExecOut {
  int status = -1;
  std::string out, err;
};

ExecOut Exec(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  ro.max_stderr_bytes = 1 << 20;
  ro.extra_env = env;
  auto r = core::RunWithTimeout(args, ro);
  ExecOut o;
  if (!r.ok()) {
    o.err = r.error().message;
    return o;
  }
  o.status = r->exit_code.value_or(-1);
  o.out = r->stdout_data;
  o.err = r->stderr_tail;
  return o;
}

std::string OnlyBundle(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string()[0] != '.') found.push_back(entry.path());
  }
  return found.size() == 1 ? found.front() : "";
}

// The kmsg records of tests/fixtures/kernel_log/h200-run-kmsg-...: "prio,seq,usec,flags;message"
// as process.json keeps them. None names this run's job: they are another process's (pids 452
// and 474 of the capture) or no process's — except the Xid 43, which the test makes the job's by
// giving it the job's pid (as the bundle writer does for a record naming a pid of the job).
Json CapturedRecords(int job_pid, std::string* raw) {
  std::ifstream in(std::string(GT_FIXTURES_DIR) + "/kernel_log/h200-run-kmsg-cuda-oob-xid13-xid31-torch-xid43.txt");
  Json records = Json::array();
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t semi = line.find(';');
    std::vector<std::string> fields;
    std::stringstream header(line.substr(0, semi));
    for (std::string f; std::getline(header, f, ',');) fields.push_back(f);
    std::string message = line.substr(semi + 1);
    Json r = {{"message", message},
              {"class", "nvidia.nvrm"},
              {"monotonic_us", std::stoull(fields.at(2))},
              {"job_pid", nullptr}};
    if (size_t xid = message.find("Xid (PCI:"); xid != std::string::npos) {
      r["class"] = "nvidia.xid";
      r["xid"] = std::stoi(message.substr(message.find("): ", xid) + 3));
    }
    if (size_t pid = message.find("pid=474"); pid != std::string::npos) {
      message.replace(pid, 7, "pid=" + std::to_string(job_pid));
      r["message"] = message;
      r["job_pid"] = job_pid;
    }
    *raw += line.substr(0, semi + 1) + message + "\n";
    records.push_back(r);
  }
  // And one the kernel printed without a time (a syslog line copied in has none).
  records.push_back({{"message", "NVRM: GPU 0000:00:06.0: GPU has fallen off the bus."},
                     {"class", "nvidia.nvrm"},
                     {"monotonic_us", nullptr},
                     {"job_pid", nullptr}});
  return records;
}

// What python3's html.parser makes of `html`: {"errors": [...], "markers": {class: n}, "svg": n,
// "records": n (rows of the kernel-log table), "scripts": n, "handlers": [...], "loads": [...]}.
Json ParseWithPython(const std::string& html, const std::string& dir) {
  const std::string page = dir + "/report.html", script = dir + "/check.py";
  std::ofstream(page, std::ios::binary) << html;
  std::ofstream(script) << R"PY(
import json, sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

class Check(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.markers = [], [], {}
        self.svg = self.scripts = self.rows = 0
        self.handlers, self.loads, self.links = [], [], []

    def attrs(self, tag, attrs):
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append(f"{tag} {name}")
            if name in ("src", "srcset", "data", "poster", "background", "xlink:href", "action", "formaction"):
                self.loads.append(f"{tag} {name}={value}")
            if name == "href":
                self.links.append(value)
        if tag in ("script", "iframe", "object", "embed", "img", "link", "base", "form", "foreignobject"):
            self.scripts += 1
        cls = dict(attrs).get("class") or ""
        if tag == "g" and cls.startswith("marker "):
            kind = cls.split()[1]
            self.markers[kind] = self.markers.get(kind, 0) + 1
        if tag == "svg":
            self.svg += 1
        if tag == "tr" and cls in ("job", "other"):
            self.rows += 1

    def handle_starttag(self, tag, attrs):
        self.attrs(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.attrs(tag, attrs)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()

c = Check()
c.feed(open(sys.argv[1], encoding="utf-8").read())
c.close()
c.errors += [f"<{t}> not closed" for t in c.stack]
print(json.dumps({"errors": c.errors, "markers": c.markers, "svg": c.svg, "records": c.rows,
                  "scripts": c.scripts, "handlers": c.handlers, "loads": c.loads, "links": c.links}))
)PY";
  ExecOut parsed = Exec({"python3", script, page});
  EXPECT_EQ(parsed.status, 0) << parsed.err;
  return Json::parse(parsed.out, nullptr, false);
}

void ExpectSafePage(const Json& page) {
  ASSERT_TRUE(page.is_object());
  EXPECT_EQ(page["errors"], Json::array()) << page.dump();
  EXPECT_EQ(page["scripts"], 0) << page.dump();
  EXPECT_EQ(page["handlers"], Json::array()) << page.dump();
  EXPECT_EQ(page["loads"], Json::array()) << page.dump();
  for (const Json& link : page["links"]) {
    const std::string url = link.get<std::string>();
    EXPECT_TRUE(url.starts_with("https://") || url.starts_with("http://") || url.starts_with("mailto:")) << url;
  }
  EXPECT_EQ(page["svg"], 1);
}

TEST(ReportHtml, ARealBundleWithKernelLogRecords) {
  testing::TempDir tmp;
  const std::vector<std::string> env = {"GPUTRIAGE_HOME=" + (tmp / "home")};
  const std::string script = std::string("echo '<script>alert(1)</script>' >&2; ") +
                             "echo '<img src=x onerror=alert(1)>' >&2; echo '[x](javascript:alert(1))' >&2; " +
                             "echo secret " + std::string(kHtmlToken) + " >&2; kill -SEGV $$";
  ExecOut run =
      Exec({GT_GPUTRIAGE_BIN, "run", "--bundle-dir", tmp / "bundles", "--no-snapshot", "--", "sh", "-c", script}, env);
  ASSERT_EQ(run.status, 139) << run.err;
  const std::string bundle = OnlyBundle(tmp / "bundles");
  ASSERT_FALSE(bundle.empty()) << run.err;

  // The captured records into the bundle, after what the run itself read (normally nothing).
  Json process = Json::parse(ReadAll(bundle + "/process.json"), nullptr, false);
  ASSERT_TRUE(process.is_object());
  const int pid = process["pid"].get<int>();
  std::string raw;
  Json captured = CapturedRecords(pid, &raw);
  ASSERT_EQ(captured.size(), 6u);
  int own_job = 0, own_other = 0;  // GPU records the run read itself (normally none)
  for (const Json& r : process["kernel_log"]) {
    own_job += !r["job_pid"].is_null();
    own_other += r["job_pid"].is_null() && !r["class"].get<std::string>().empty();
  }
  for (const Json& r : captured) process["kernel_log"].push_back(r);
  std::ofstream(bundle + "/process.json", std::ios::binary) << process.dump(2);
  std::ofstream(bundle + "/kmsg.log", std::ios::binary | std::ios::app) << raw;

  ExecOut html = Exec({GT_GPUTRIAGE_BIN, "report", "--format", "html", bundle}, env);
  ASSERT_EQ(html.status, 0) << html.err;
  EXPECT_EQ(html.out.find(kHtmlToken), std::string::npos);
  EXPECT_EQ(html.out.find(kHtmlToken.substr(0, 12)), std::string::npos);
  EXPECT_EQ(html.out.find("<script"), std::string::npos);
  EXPECT_NE(html.out.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos) << html.out;
  EXPECT_NE(html.out.find("secret &lt;redacted&gt;"), std::string::npos) << html.out;
  Json page = ParseWithPython(html.out, tmp.path());
  ExpectSafePage(page);
  // start, SIGSEGV, bundle; the job's Xid 43; five records of other processes or none.
  EXPECT_EQ(page["markers"]["m-start"], 1);
  EXPECT_EQ(page["markers"]["m-failure"], 1);
  EXPECT_EQ(page["markers"]["m-bundle"], 1);
  EXPECT_EQ(page["markers"].value("m-job", 0), 1 + own_job);
  EXPECT_EQ(page["markers"].value("m-other", 0), 5 + own_other);
  EXPECT_EQ(page["records"], 6 + own_job + own_other);
  EXPECT_NE(html.out.find("<td>Xid 31</td><td class=\"who\">other process / no pid</td>"), std::string::npos);
  EXPECT_NE(html.out.find(fmt::format("<td>Xid 43</td><td class=\"who\">this job (pid {})</td>", pid)),
            std::string::npos);
  // Without a snapshot, the records have the kernel's clock only: their own axis.
  EXPECT_NE(html.out.find("kernel clock, seconds since boot (not aligned with the run)"), std::string::npos);
  EXPECT_NE(html.out.find("1 record(s) have no time"), std::string::npos);

  // With the snapshot's boot time, 35 s before the run started: the records around the failure.
  const std::string started = Json::parse(ReadAll(bundle + "/manifest.json"))["timings"]["started_at"];
  ASSERT_EQ(started.size(), 20u);  // 2026-12-02T17:10:00Z
  const std::tm tm = [&] {
    std::tm t{};
    strptime(started.c_str(), "%Y-%m-%dT%H:%M:%SZ", &t);
    return t;
  }();
  std::tm boot_tm = tm;
  const time_t boot = timegm(&boot_tm) - 35;
  char boot_text[32];
  strftime(boot_text, sizeof boot_text, "%Y-%m-%dT%H:%M:%SZ", gmtime(&boot));
  std::ofstream(bundle + "/snapshot.json") << Json{{"schema_version", 1}, {"host", {{"boot_time", boot_text}}}}.dump();
  ExecOut aligned = Exec({GT_GPUTRIAGE_BIN, "report", "--format", "html", bundle}, env);
  ASSERT_EQ(aligned.status, 0) << aligned.err;
  Json page2 = ParseWithPython(aligned.out, tmp.path());
  ExpectSafePage(page2);
  EXPECT_EQ(aligned.out.find("not aligned with the run"), std::string::npos);
  EXPECT_NE(aligned.out.find("Approximate (to about a second)"), std::string::npos) << aligned.out;
  // The Xid 13 at 30.806421 s since boot, the start at 35 s: 4.19 s before the start, and the
  // failure came a few milliseconds after the start.
  std::smatch row;
  ASSERT_TRUE(std::regex_search(aligned.out, row,
                                std::regex(R"(<td class="num">(-[0-9.]+) s</td><td class="num">30\.806421</td>)"
                                           R"(<td>Xid 13</td>)")))
      << aligned.out;
  EXPECT_LT(std::stod(row[1]), -4.19);
  EXPECT_GT(std::stod(row[1]), -5.0);

  // The Markdown and JSON reports are as they were: the job's records only, no timeline.
  ExecOut md = Exec({GT_GPUTRIAGE_BIN, "report", bundle}, env);
  EXPECT_EQ(md.out.find("Xid (PCI:0000:00:06): 31"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find(fmt::format("Xid (PCI:0000:00:06): 43, pid={}", pid)), std::string::npos) << md.out;
  ExecOut json = Exec({GT_GPUTRIAGE_BIN, "report", "--format", "json", bundle}, env);
  Json report = Json::parse(json.out, nullptr, false);
  ASSERT_TRUE(report.is_object());
  EXPECT_FALSE(report.contains("timeline"));
}

// `report --baseline FILE`: a real snapshot taken with CUDA_LAUNCH_BLOCKING=1 set, a real run
// without it: the report names the change; a baseline that cannot be read is a usage error.
TEST(ReportCli, ChangesSinceABaselineSnapshotFile) {
  testing::TempDir tmp;
  const std::vector<std::string> env = {"GPUTRIAGE_HOME=" + (tmp / "home")};
  std::vector<std::string> baseline_env = env;
  baseline_env.push_back("CUDA_LAUNCH_BLOCKING=1");
  ExecOut snapshot = Exec({GT_GPUTRIAGE_BIN, "snapshot", "--json"}, baseline_env);
  ASSERT_EQ(snapshot.status, 0) << snapshot.err;
  const std::string baseline = tmp / "good.json";
  std::ofstream(baseline, std::ios::binary) << snapshot.out;
  ExecOut run =
      Exec({GT_GPUTRIAGE_BIN, "run", "--bundle-dir", tmp / "bundles", "--", "sh", "-c", "kill -SEGV $$"}, env);
  ASSERT_EQ(run.status, 139) << run.err;
  const std::string bundle = OnlyBundle(tmp / "bundles");
  ExecOut json = Exec({GT_GPUTRIAGE_BIN, "report", "--format", "json", "--baseline", baseline, bundle}, env);
  ASSERT_EQ(json.status, 0) << json.err;
  Json report = Json::parse(json.out, nullptr, false);
  ASSERT_TRUE(report["baseline"]["changes"].is_array()) << json.out;
  EXPECT_EQ(report["baseline"]["source"], baseline);
  bool removed = false;
  for (const Json& c : report["baseline"]["changes"]) {
    removed = removed || (c["kind"] == "env_removed" && c["path"] == "env.variables.CUDA_LAUNCH_BLOCKING");
  }
  EXPECT_TRUE(removed) << report["baseline"].dump(1);
  ExecOut md = Exec({GT_GPUTRIAGE_BIN, "report", "--baseline", baseline, bundle}, env);
  EXPECT_NE(md.out.find("### Changes since the baseline"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("`env.variables.CUDA_LAUNCH_BLOCKING`"), std::string::npos) << md.out;
  ExecOut missing = Exec({GT_GPUTRIAGE_BIN, "report", "--baseline", tmp / "absent.json", bundle}, env);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("--baseline: "), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("absent.json"), std::string::npos) << missing.err;
}

// The page in a real browser (Debian's chromium, headless): it loads with no Content-Security-
// Policy violation or script error, the SVG renders (a screenshot of the page is larger than the
// same page without its SVG, and than a blank page), and the DOM the browser built has the
// timeline's and the telemetry's labels, the repeat series' tables and the collapsible threads.
std::string Chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

ExecOut Browser(const std::string& dir, std::vector<std::string> args) {
  const std::string chromium = Chromium();
  std::vector<std::string> cmd = {chromium,
                                  "--headless",
                                  "--no-sandbox",
                                  "--disable-gpu",
                                  "--disable-dev-shm-usage",
                                  "--hide-scrollbars",
                                  "--no-first-run",
                                  "--user-data-dir=" + dir + "/chromium-profile",
                                  "--enable-logging=stderr",
                                  "--v=0"};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return Exec(cmd, {"HOME=" + dir});
}

uintmax_t Screenshot(const std::string& dir, const std::string& page, const std::string& png) {
  ExecOut shot = Browser(dir, {"--window-size=1200,3000", "--screenshot=" + png, "file://" + page});
  EXPECT_EQ(shot.status, 0) << shot.err;
  std::string bytes = ReadAll(png);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << png;
  return bytes.size();
}

TEST(ReportHtml, RendersInAHeadlessBrowser) {
  // Debian's chromium is a set of its own (scripts/install-deps --browser, ~490 MiB): skipped
  // without it, except where GPUTRIAGE_TEST_BROWSER=required says it must run (.ci/run).
  if (Chromium().empty()) {
    const char* required = std::getenv("GPUTRIAGE_TEST_BROWSER");
    ASSERT_FALSE(required && std::string(required) == "required")
        << "no chromium, and GPUTRIAGE_TEST_BROWSER=required: scripts/install-deps --browser installs it";
    GTEST_SKIP() << "no chromium: scripts/install-deps --browser installs Debian's";
  }
  testing::TempDir tmp;
  const std::vector<std::string> env = {"GPUTRIAGE_HOME=" + (tmp / "home")};
  // Two runs, both killed by SIGSEGV: one bundle, whose repeat.json has the series.
  ExecOut run = Exec(
      {GT_GPUTRIAGE_BIN, "run", "--repeat", "2", "--bundle-dir", tmp / "bundles", "--", "sh", "-c", "kill -SEGV $$"},
      env);
  ASSERT_EQ(run.status, 139) << run.err;
  const std::string bundle = OnlyBundle(tmp / "bundles");
  ASSERT_FALSE(bundle.empty()) << run.err;
  // The kernel-log records of a real H200 capture, and telemetry as the H100 machine's NVML
  // sampler wrote it in a real run (2026-12-05), so both charts have something to draw.
  Json process = Json::parse(ReadAll(bundle + "/process.json"), nullptr, false);
  ASSERT_TRUE(process.is_object());
  std::string raw;
  for (const Json& r : CapturedRecords(process["pid"].get<int>(), &raw)) process["kernel_log"].push_back(r);
  std::ofstream(bundle + "/process.json", std::ios::binary) << process.dump(2);
  std::ofstream(bundle + "/kmsg.log", std::ios::binary | std::ios::app) << raw;
  std::ofstream(bundle + "/telemetry.csv", std::ios::binary)
      << "t_s,device,temperature_c,power_w,sm_clock_mhz,memory_clock_mhz,memory_used_mib,throttle_reasons\n"
         "0.022,0,32,71.2,345,2619,0.0,gpu_idle\n0.222,0,32,71.1,345,2619,0.0,gpu_idle\n"
         "0.422,0,41,560.3,1980,2619,1228.8,\n0.622,0,45,564.7,1980,2619,1228.8,sw_power_cap\n";
  const std::string page = tmp / "report.html";
  ExecOut report = Exec({GT_GPUTRIAGE_BIN, "report", "--format", "html", "-o", page, bundle}, env);
  ASSERT_EQ(report.status, 0) << report.err;
  const std::string html = ReadAll(page);

  // Loads: the DOM the browser built, and nothing refused or thrown on the way.
  ExecOut dom = Browser(tmp.path(), {"--dump-dom", "file://" + page});
  ASSERT_EQ(dom.status, 0) << dom.err;
  EXPECT_EQ(dom.err.find("Refused to"), std::string::npos) << "a Content-Security-Policy violation:\n" << dom.err;
  EXPECT_EQ(dom.err.find("Uncaught"), std::string::npos) << dom.err;
  EXPECT_EQ(dom.err.find("CONSOLE"), std::string::npos) << dom.err;
  for (const char* label :
       {">start</text>", ">SIGSEGV</text>", ">bundle</text>", ">seconds from the failure</text>", ">this job</text>",
        ">other process / no pid</text>", ">Temperature (°C)</text>", ">Power (W)</text>"}) {
    EXPECT_NE(dom.out.find(label), std::string::npos) << label << " not in the browser's DOM";
  }
  EXPECT_NE(dom.out.find("<th align=\"right\">Run</th>"), std::string::npos) << "the repeat series' table";
  EXPECT_NE(dom.out.find("<details open=\"\"><summary>thread "), std::string::npos) << "the crashed thread, open";
  EXPECT_NE(dom.out.find("<td>Kernel</td>"), std::string::npos) << "the environment as a table";

  // Renders: screenshots of the page, of its two SVG charts alone, and of a blank page (a white
  // PNG compresses to almost nothing; drawn lines and text do not).
  std::string svgs;
  size_t charts = 0;
  const std::regex svg_element("<svg[\\s\\S]*?</svg>");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), svg_element); it != std::sregex_iterator(); ++it) {
    svgs += it->str();
    ++charts;
  }
  EXPECT_EQ(charts, 2u) << "the timeline and the telemetry";
  const std::string svg_page = tmp / "svg-only.html", blank_page = tmp / "blank.html";
  std::ofstream(svg_page, std::ios::binary) << "<!DOCTYPE html><html><body>" << svgs << "</body></html>";
  std::ofstream(blank_page, std::ios::binary) << "<!DOCTYPE html><html><body></body></html>";
  uintmax_t full = Screenshot(tmp.path(), page, tmp / "full.png");
  uintmax_t svg_only = Screenshot(tmp.path(), svg_page, tmp / "svg-only.png");
  uintmax_t blank = Screenshot(tmp.path(), blank_page, tmp / "blank.png");
  EXPECT_GT(full, blank * 10) << "the page renders: " << full << " bytes against a blank page's " << blank;
  EXPECT_GT(svg_only, blank * 2) << "the SVG renders: " << svg_only << " bytes against a blank page's " << blank;
}

}  // namespace
}  // namespace gputriage
