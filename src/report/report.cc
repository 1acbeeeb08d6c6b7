#include "report/report.h"

#include <cctype>
#include <map>

#include <fmt/format.h>

#include "core/process.h"
#include "core/redact.h"
#include "core/signals.h"
#include "core/text.h"
#include "kb/inputs.h"
#include "report/report_internal.h"
#include "store/diff.h"

namespace gputriage::report {

std::string Safe(std::string_view text) { return core::SanitizeUtf8(core::RedactText(text)); }

std::string Cut(std::string text, size_t max) {
  if (text.size() <= max) return text;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text;
}

namespace {

using core::Json;

Json SafeList(const std::vector<std::string>& texts) {
  Json out = Json::array();
  for (const std::string& text : texts) out.push_back(Safe(text));
  return out;
}

std::string LastLines(std::string_view text, size_t n) {
  std::vector<std::string_view> lines = core::SplitLines(text);
  size_t from = lines.size() > n ? lines.size() - n : 0;
  std::string out;
  for (size_t i = from; i < lines.size(); ++i) {
    out += std::string(lines[i]);
    out += '\n';
  }
  return out;
}

std::string InstallationText(const core::Installation& i) {
  std::string version = i.version.value_or("");
  return (version.empty() ? "version unknown" : version) + " at " + i.path.value_or("");
}

Json Installations(const std::optional<core::Installations>& installs) {
  Json out = Json::array();
  if (!installs || !installs->installations) return out;
  for (const core::Installation& i : *installs->installations) out.push_back(Safe(InstallationText(i)));
  return out;
}

Json Environment(const std::optional<core::Snapshot>& snapshot) {
  Json env = Json::object();
  if (!snapshot) {
    env["not_collected"] = "no snapshot: pass --snapshot FILE (gputriage snapshot --json) or report a bundle";
    return env;
  }
  const core::Snapshot& s = *snapshot;
  const core::Host host = s.host.value_or(core::Host{});
  env["os"] = Safe(host.os ? host.os->pretty_name.value_or("") : "");
  env["kernel"] = Safe(host.kernel ? host.kernel->release.value_or("") : "");
  env["hostname"] = Safe(host.hostname.value_or(""));
  Json gpus = Json::array();
  for (const core::Gpu& g : s.GpuList()) {
    std::string line = g.name ? *g.name : g.pci_name.value_or("");
    if (g.gfx_arch && !g.gfx_arch->empty()) line += " (" + *g.gfx_arch + ")";
    if (g.pci_address && !g.pci_address->empty()) line += " at " + *g.pci_address;
    if (g.driver && !g.driver->empty()) line += ", driver " + *g.driver;
    gpus.push_back(Safe(line));
  }
  env["gpus"] = gpus;
  const core::Software software = s.software.value_or(core::Software{});
  env["nvidia_driver"] = software.nvidia ? software.nvidia->driver_version.value_or("") : "";
  env["cuda_driver"] = software.nvidia ? software.nvidia->cuda_driver_version.value_or("") : "";
  Json rocm = Json::array();
  if (software.amd && software.amd->rocm && software.amd->rocm->installations) {
    for (const core::Installation& i : *software.amd->rocm->installations) {
      rocm.push_back(Safe(i.version.value_or("") + " at " + i.path.value_or("")));
    }
  }
  env["rocm"] = rocm;
  env["cuda_toolkits"] = Installations(software.cuda);
  if (const core::TorchInstall* torch = s.Torch()) {
    env["torch"] = Safe(fmt::format("{} (CUDA {}, HIP {})", torch->version.value_or("?"), torch->cuda.value_or("-"),
                                    torch->hip.value_or("-")));
  }
  Json vars = Json::object();
  if (s.env && s.env->variables) {
    for (const auto& [name, raw] : *s.env->variables) {
      std::string value = core::SanitizeUtf8(core::RedactValue(name, raw));
      if (value.size() > 120) value = Cut(std::move(value), 117) + "...";
      vars[Safe(name)] = value;
    }
  }
  env["gpu_environment_variables"] = vars;
  return env;
}

std::string FrameText(const core::Frame& f) {
  std::string fn = f.function.empty() ? core::Hex(f.pc) : f.function;
  std::string where;
  if (f.file && !f.file->empty()) {
    where = *f.file + (f.line ? fmt::format(":{}", *f.line) : "");
  } else if (!f.module.empty()) {
    where = f.module.substr(f.module.rfind('/') + 1) + "+" + (f.offset ? core::Hex(*f.offset) : "");
  }
  return where.empty() ? fn : fn + " (" + where + ")";
}

std::string Title(const ReportInput& in) {
  const kb::Analysis& a = in.analysis;
  std::string title;
  if (in.process && in.process->primary.classification) title = in.process->primary.classification->summary;
  if (title.empty() && !a.matches.empty()) title = a.matches.front().issue->title;
  if (title.empty()) title = a.signature.empty() ? "GPU job failure" : a.signature;
  // Redacted before it is cut: cut first, a token across the cut would not be recognised.
  return Cut(Safe(title), 200);
}

Json Reproduction(const ReportInput& in) {
  Json repro = Json::object();
  if (in.manifest) {
    const core::BundleManifest& m = *in.manifest;
    // Redacted as argv ("--password VALUE" spans two elements), then quoted for sh.
    const std::vector<std::string> argv = m.command.value_or(std::vector<std::string>{});
    repro["command"] = SafeList(core::RedactArgv(argv));
    repro["command_line"] = core::SanitizeUtf8(core::RedactedShellCommand(argv));
    repro["exit_status"] = m.exit_status ? Json(*m.exit_status) : Json(nullptr);
    repro["started_at"] = m.timings ? m.timings->started_at.value_or("") : "";
    repro["signature"] = Safe(m.signature.value_or(""));
  } else {
    repro["not_collected"] = "a log only: the command and its exit status are not known (`gputriage run` records them)";
  }
  if (in.same_signature_count) repro["same_signature_bundles"] = *in.same_signature_count;
  if (in.repeat) {
    const core::RepeatStats& r = *in.repeat;
    repro["repeat"] = {{"runs", r.runs},
                       {"failures", r.failures},
                       {"passes", r.passes},
                       {"same_signature", r.same_signature},
                       {"distinct_signatures", r.distinct_signatures},
                       {"verdict", r.verdict}};
    Json series = Json::array();
    for (const core::RepeatRun& run : r.series) {
      series.push_back({{"run", run.run},
                        {"failed", run.failed},
                        {"exit_status", run.exit_status},
                        {"timed_out", run.timed_out},
                        {"signature", run.signature ? Json(Safe(*run.signature)) : Json(nullptr)}});
    }
    Json signatures = Json::array();
    for (const core::SignatureCount& c : r.signatures) {
      signatures.push_back({{"signature", Safe(c.signature)}, {"count", c.count}});
    }
    repro["repeat"]["series"] = std::move(series);
    repro["repeat"]["signatures"] = std::move(signatures);
  } else if (in.manifest) {
    repro["repeat"] = {{"not_collected",
                        "run once; `gputriage run --repeat 5 -- CMD` tells a deterministic failure from a flaky one"}};
  }
  return repro;
}

// What the process file says: signal, classification, the crashed thread's frames, the faulting
// instruction, and the kernel-log records that name the job.
void AddProcess(const core::ProcessFile& file, Json& failure) {
  const core::ProcessReport& p = file.primary;
  Json pj = core::ToJson(p);  // the names process.json gives signal, si_code and address
  failure["signal"] = pj["signal"];
  failure["si_code"] = pj["si_code"];
  failure["fault_address"] = pj["fault_address"];
  failure["classification"] = pj["classification"];
  if (p.classification) {
    failure["classification"]["summary"] = Safe(p.classification->summary);
    failure["classification"]["detail"] = Safe(p.classification->detail);
    Json evidence = Json::array();
    for (const core::Evidence& e : p.classification->evidence) {
      evidence.push_back({{"source", Safe(e.source)}, {"text", Safe(e.text)}});
    }
    failure["classification"]["evidence"] = evidence;
  }
  Json frames = Json::array();
  if (!p.threads.empty()) {
    for (const core::Frame& f : p.threads.front().frames) {
      if (frames.size() == 16) break;
      frames.push_back(Safe(FrameText(f)));
    }
  }
  failure["crashed_thread_frames"] = frames;
  Json dis = Json::array();
  if (p.disassembly) {
    for (const core::Instruction& i : p.disassembly->instructions) {
      dis.push_back(fmt::format("{} {}: {}", i.faulting ? "=>" : "  ", core::Hex(i.address), Safe(i.text)));
    }
  }
  failure["disassembly"] = dis;
  Json klog = Json::array();
  for (const core::RunKernelLogRecord& rec : file.kernel_log) {
    if (rec.job_pid) klog.push_back(Safe(rec.message));
  }
  failure["kernel_log_for_job"] = klog;
  // Several processes captured (the ranks of a distributed job): which failed first.
  Json processes = Json::array();
  for (const core::JobProcess& jp : core::JobProcessTimeline(file)) {
    Json j{{"role", jp.role}, {"pid", jp.pid ? Json(*jp.pid) : Json(nullptr)}};
    if (jp.rank) j["rank"] = *jp.rank;
    if (jp.local_rank) j["local_rank"] = *jp.local_rank;
    j["signal"] = jp.signal ? Json(core::SignalName(*jp.signal)) : Json(nullptr);
    if (jp.stopped_at_s) j["stopped_at_s"] = *jp.stopped_at_s;
    processes.push_back(std::move(j));
  }
  if (!processes.empty()) failure["processes"] = std::move(processes);
}

Json Failure(const ReportInput& in) {
  const kb::Analysis& a = in.analysis;
  Json failure = Json::object();
  failure["category"] = core::CategoryName(a.category);
  failure["confidence"] = a.confidence;
  failure["verdict"] = core::VerdictName(a.verdict);
  failure["verdict_reasons"] = SafeList(a.verdict_reasons);
  if (!a.gpu_signature.empty()) failure["gpu_signature"] = Safe(a.gpu_signature.Key());
  if (in.process) AddProcess(*in.process, failure);
  failure["stderr_excerpt"] = Safe(LastLines(in.stderr_tail, 30));
  Json evidence = Json::array();
  for (const core::Evidence& e : a.evidence) evidence.push_back(Safe(e.source + ": " + e.text));
  failure["evidence"] = evidence;
  return failure;
}

Json Diagnostics(const ReportInput& in) {
  Json diag = Json::array();
  auto item = [&](const std::string& what, bool present, const std::string& why = "") {
    diag.push_back({{"item", what}, {"attached", present}, {"note", why}});
  };
  item("node snapshot (GPUs, drivers, versions, environment)", in.snapshot.has_value(),
       in.snapshot ? "" : "not collected");
  item("process report (signal, registers, stacks, disassembly)", in.process.has_value(),
       in.process ? "" : "no crash bundle");
  item("kernel log during the run", !in.kmsg.empty() || (in.manifest && in.manifest->Has("kmsg.log")), "");
  item("stderr of the job", !in.stderr_tail.empty(), "");
  item("GPU call record and escalation (run --record / --escalate)", in.analysis.gpu.has_value(),
       in.analysis.gpu ? "" : "not recorded");
  return diag;
}

// What the flight recorder and the escalation said: the kernel, the launches in flight, where
// the faulting address falls, the calls that failed. Null when the bundle has neither.
Json GpuCalls(const kb::Analysis& a) {
  if (!a.gpu) return nullptr;
  const kb::GpuCallEvidence& g = *a.gpu;
  Json in_flight = Json::array();
  for (size_t i = 0; i < g.candidates.size() && i < 10; ++i) {
    const core::GpuCall& c = g.candidates[i];
    std::string shape = core::LaunchShapeText(c);
    if (!shape.empty()) shape = " " + shape;
    in_flight.push_back(
        Safe(fmt::format("{}{} stream {} ({})", c.kernel.value_or("?"), shape, c.stream.value_or("?"), c.api)));
  }
  Json addresses = Json::array();
  for (const core::GpuAddressAttribution& t : g.attributions) addresses.push_back(Safe(t.address + ": " + t.summary));
  Json failed = Json::array();
  for (const core::GpuErrorCount& e : g.errors) {
    failed.push_back(
        Safe(fmt::format("{} returned {} ({}) x{}", e.api, e.result_name.value_or("?"), e.result, e.count)));
  }
  return {{"kernel", g.kernel ? Json(Safe(*g.kernel)) : Json(nullptr)},
          {"location", g.location ? Json(Safe(*g.location)) : Json(nullptr)},
          {"escalation", Safe(g.escalation_summary)},
          {"in_flight", in_flight},
          {"in_flight_total", g.candidates.size()},
          {"fault_addresses", addresses},
          {"failed_calls", failed}};
}

Json Troubleshooting(const ReportInput& in) {
  Json tried = Json::array();
  if (in.snapshot) {
    for (const char* name :
         {"CUDA_LAUNCH_BLOCKING", "AMD_SERIALIZE_KERNEL", "HIP_LAUNCH_BLOCKING", "HSA_OVERRIDE_GFX_VERSION",
          "PYTORCH_CUDA_ALLOC_CONF", "NCCL_P2P_DISABLE", "TORCH_USE_CUDA_DSA", "HSA_ENABLE_SDMA"}) {
      if (auto value = in.snapshot->EnvValue(name)) {
        tried.push_back(fmt::format("{}={} was set", name, core::SanitizeUtf8(core::RedactValue(name, *value))));
      }
    }
  }
  if (in.manifest && in.manifest->signature && in.same_signature_count) {
    tried.push_back(
        fmt::format("the same failure signature was recorded {} time(s) by gputriage run", *in.same_signature_count));
  }
  return tried;
}

Json KnownIssues(const kb::Analysis& a) {
  Json known = Json::array();
  for (size_t i = 0; i < a.matches.size() && i < 5; ++i) {
    const kb::IssueMatch& m = a.matches[i];
    Json refs = Json::array();
    for (const kb::Reference& ref : m.issue->references) refs.push_back(ref.url);
    Json lines = Json::array();
    for (const kb::Hit& h : m.hits) lines.push_back(Safe(fmt::format("{}:{}: {}", h.input, h.line_number, h.line)));
    known.push_back({{"id", m.issue->id},
                     {"title", m.issue->title},
                     {"category", core::CategoryName(m.issue->category)},
                     {"fix", m.issue->fixes.empty() ? "" : m.issue->fixes.front().action},
                     {"references", refs},
                     {"evidence", lines}});
  }
  return known;
}

// What changed on the machine from --baseline to the failure's snapshot (store::DiffSnapshots).
Json BaselineChanges(const ReportInput& in) {
  Json out = {{"source", Safe(in.baseline_source)}};
  if (!in.snapshot) {
    out["not_collected"] = "the failure has no snapshot to compare with the baseline";
    return out;
  }
  Json changes = Json::array();
  for (const store::Change& c : store::DiffSnapshots(*in.baseline, *in.snapshot)) {
    auto value = [](const Json& v) { return v.is_null() ? Json(nullptr) : Json(Safe(JsonText(v))); };
    changes.push_back({{"kind", c.kind},
                       {"path", Safe(c.path)},
                       {"before", value(c.before)},
                       {"after", value(c.after)},
                       {"summary", Safe(c.summary)}});
  }
  out["changes"] = std::move(changes);
  return out;
}

}  // namespace

std::vector<ThreadStack> BuildThreadStacks(const ReportInput& in) {
  std::vector<ThreadStack> out;
  if (!in.process) return out;
  const core::ProcessReport& p = in.process->primary;
  constexpr size_t kMaxThreads = 512, kMaxFrames = 64;
  for (const core::ThreadState& t : p.threads) {
    if (out.size() == kMaxThreads) break;
    bool crashed = p.signal.has_value() && out.empty();
    std::string role = crashed ? "crashed" : (p.pid && t.tid == *p.pid ? "main thread" : "");
    ThreadStack stack;
    stack.crashed = crashed;
    stack.title = Safe(fmt::format("thread {}{}{}, {} frame(s)", t.tid, t.name.empty() ? "" : " \"" + t.name + "\"",
                                   role.empty() ? "" : " (" + role + ")", t.frames.size()));
    for (size_t i = 0; i < t.frames.size() && i < kMaxFrames; ++i) {
      stack.frames.push_back(Safe(fmt::format("#{:<2} {}", i, FrameText(t.frames[i]))));
    }
    if (t.frames.size() > kMaxFrames) {
      stack.frames.push_back(fmt::format("... {} more frame(s) in process.json", t.frames.size() - kMaxFrames));
    }
    out.push_back(std::move(stack));
  }
  return out;
}

Json BuildReport(const ReportInput& in) {
  Json r;
  r["title"] = Title(in);
  r["source"] = Safe(in.source);
  r["environment"] = Environment(in.snapshot);
  r["reproduction"] = Reproduction(in);
  r["failure"] = Failure(in);
  r["gpu_calls"] = GpuCalls(in.analysis);
  r["diagnostics"] = Diagnostics(in);
  r["troubleshooting"] = Troubleshooting(in);
  r["known_issues"] = KnownIssues(in.analysis);
  r["next_steps"] = SafeList(in.analysis.next_steps);
  r["search_links"] = SafeList(in.analysis.search_links);
  if (in.baseline) r["baseline"] = BaselineChanges(in);
  return r;
}

core::Result<Report> MakeReport(kb::Analyzer& analyzer, const ReportRequest& request, store::SnapshotStore* store) {
  kb::AnalysisRequest analysis_request;
  analysis_request.paths = request.paths;
  analysis_request.snapshot = request.snapshot;
  analysis_request.log_tail_bytes = 1u << 20;
  GT_ASSIGN_OR_RETURN(kb::AnalysisOutcome outcome, kb::AnalyzeInputs(analyzer, analysis_request));
  ReportInput input;
  input.source = outcome.analysis.source;
  input.snapshot = outcome.snapshot;
  for (const kb::AnalyzedInput& in : outcome.inputs) {
    if (in.bundle) {
      input.manifest = in.bundle->manifest;
      input.repeat = in.bundle->repeat;
      input.process = in.bundle->process;
      input.stderr_tail = in.bundle->stderr_tail;
      input.kmsg = in.bundle->kmsg;
      input.telemetry = in.bundle->telemetry;
    } else if (in.kind == kb::AnalyzedInput::Kind::kLog) {
      input.stderr_tail += in.log_tail;
    }
  }
  input.baseline = request.baseline;
  input.baseline_source = request.baseline_source;
  input.analysis = std::move(outcome.analysis);
  std::vector<std::string> warnings = std::move(outcome.warnings);
  if (store != nullptr && input.manifest && input.manifest->signature && !input.manifest->signature->empty()) {
    if (auto count = store->CountBundlesWithSignature(*input.manifest->signature); count.ok()) {
      input.same_signature_count = *count;
    }
  }
  Report report{.json = BuildReport(input), .timeline = BuildTimeline(input), .threads = BuildThreadStacks(input)};
  report.json["warnings"] = std::move(warnings);  // inputs left out or damaged, each named
  return report;
}

namespace {

// Text from the inputs as Markdown text: '*', '\\', '<', '&' and an '_' that is not inside a word are escaped
// outside code spans, so a path such as ctypes/__init__.py is not set in bold; code spans the
// text means (`gputriage run`) stay.
std::string MdText(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t fence = 0;  // the length of the backtick run that opened the current code span; 0 outside
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '`') {
      size_t run = 0;
      while (i + run < text.size() && text[i + run] == '`') ++run;
      if (fence == 0 && text.find(std::string(run, '`'), i + run) != std::string_view::npos) {
        fence = run;
      } else if (run == fence) {
        fence = 0;
      }
      out.append(text.substr(i, run));
      i += run;
      continue;
    }
    // An '_' between two letters or digits never opens or closes emphasis (CUDA_LAUNCH_BLOCKING).
    auto alnum = [&](size_t j) { return j < text.size() && std::isalnum(static_cast<unsigned char>(text[j])); };
    bool intraword = text[i] == '_' && i > 0 && alnum(i - 1) && alnum(i + 1);
    // '<' and '&' outside code spans: the job's text must not become raw HTML (`<img src=...>`,
    // an unclosed <details> that swallows the rest of the report) or an entity.
    if (fence == 0 &&
        (text[i] == '*' || (text[i] == '_' && !intraword) || text[i] == '\\' || text[i] == '<' || text[i] == '&')) {
      out.push_back('\\');
    }
    out.push_back(text[i++]);
  }
  return out;
}

std::string MdList(const Json& list) {
  std::string out;
  if (!list.is_array()) return out;
  for (const Json& item : list) {
    if (item.is_string()) out += "- " + MdText(item.get<std::string>()) + "\n";
  }
  return out;
}

// A table cell: Markdown text on one line, with '|' escaped.
std::string MdCell(std::string_view text) {
  std::string out;
  for (char c : MdText(text)) {
    if (c == '|') {
      out += "\\|";
    } else {
      out.push_back(c == '\n' || c == '\r' ? ' ' : c);
    }
  }
  return out;
}

// The longest run of backticks in `text`: a code span or block is fenced with a longer one.
size_t LongestBacktickRun(std::string_view text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

// A value in a table cell as code: a span fenced longer than any backtick run inside. A value
// with '|' is plain text instead: md4c keeps the backslash of "\\|" inside a code span in a cell.
std::string MdCodeCell(std::string_view text) {
  if (text.find('|') != std::string_view::npos) return MdCell(text);
  std::string fence(LongestBacktickRun(text) + 1, '`');
  std::string body;
  for (char c : text) body.push_back(c == '\n' || c == '\r' ? ' ' : c);
  std::string pad = !body.empty() && (body.front() == '`' || body.back() == '`') ? " " : "";
  return fence + pad + body + pad + fence;
}

std::string Code(const std::string& text) {
  std::string fence(std::max<size_t>(3, LongestBacktickRun(text) + 1), '`');
  return fence + "\n" + text + (text.empty() || text.back() == '\n' ? "" : "\n") + fence + "\n";
}

std::string Val(const Json& j) { return JsonText(j); }

}  // namespace

std::string JsonText(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "-";
  return j.dump();
}

std::string MarkdownHead(const Json& r) {
  std::string md = fmt::format("## {}\n\n", MdText(Val(r["title"])));
  const Json& f = r["failure"];
  md += fmt::format("**Category:** {} (confidence {:.2f}) · **Verdict:** {}\n\n", Val(f["category"]),
                    f["confidence"].is_number() ? f["confidence"].get<double>() : 0.0, Val(f["verdict"]));
  return md;
}

std::string MarkdownBody(const Json& r) {
  const Json& f = r["failure"];
  std::string md = "### Environment\n\n";
  const Json& e = r["environment"];
  if (e.contains("not_collected")) {
    md += "_" + MdText(Val(e["not_collected"])) + "_\n\n";
  } else {
    auto row = [&](std::string_view what, const Json& value) {
      md += fmt::format("| {} | {} |\n", what, MdCell(Val(value)));
    };
    md += "| Component | Version or value |\n|---|---|\n";
    row("OS", e["os"]);
    row("Kernel", e["kernel"]);
    for (const Json& g : e["gpus"]) row("GPU", g);
    if (!Val(e["nvidia_driver"]).empty())
      row("NVIDIA driver", fmt::format("{} (CUDA {})", Val(e["nvidia_driver"]), Val(e["cuda_driver"])));
    for (const Json& v : e["rocm"]) row("ROCm", v);
    for (const Json& v : e["cuda_toolkits"]) row("CUDA toolkit", v);
    if (e.contains("torch")) row("PyTorch", e["torch"]);
    md += "\n";
    if (e["gpu_environment_variables"].is_object() && !e["gpu_environment_variables"].empty()) {
      md += "GPU-stack environment variables:\n\n| Variable | Value |\n|---|---|\n";
      for (auto it = e["gpu_environment_variables"].begin(); it != e["gpu_environment_variables"].end(); ++it) {
        md += fmt::format("| {} | {} |\n", MdCodeCell(it.key()), MdCodeCell(Val(it.value())));
      }
      md += "\n";
    }
  }
  if (r.contains("baseline")) {
    const Json& b = r["baseline"];
    md += fmt::format("### Changes since the baseline\n\nBaseline: {}\n\n", MdText(Val(b["source"])));
    if (b.contains("not_collected")) {
      md += "_" + MdText(Val(b["not_collected"])) + "_\n\n";
    } else if (b["changes"].empty()) {
      md += "_no change: the machine's GPUs, driver, software and environment are as in the baseline_\n\n";
    } else {
      md += "| Change | Where | Before | After |\n|---|---|---|---|\n";
      for (const Json& c : b["changes"]) {
        md += fmt::format("| {} | {} | {} | {} |\n", MdCell(Val(c["summary"])), MdCodeCell(Val(c["path"])),
                          c["before"].is_null() ? "" : MdCodeCell(Val(c["before"])),
                          c["after"].is_null() ? "" : MdCodeCell(Val(c["after"])));
      }
      md += "\n";
    }
  }
  md += "### Reproduction\n\n";
  const Json& rep = r["reproduction"];
  if (rep.contains("not_collected")) {
    md += "_" + MdText(Val(rep["not_collected"])) + "_\n\n";
  } else {
    md += Code(Val(rep["command_line"]));
    md += fmt::format("\nExit status {}; started {}.", Val(rep["exit_status"]), Val(rep["started_at"]));
    if (rep.contains("same_signature_bundles") && rep["same_signature_bundles"].is_number() &&
        rep["same_signature_bundles"].get<int>() > 0)
      md += fmt::format(" Same signature seen in {} bundle(s).", Val(rep["same_signature_bundles"]));
    md += "\n\n";
    if (rep.contains("repeat")) {
      const Json& rp = rep["repeat"];
      if (rp.contains("not_collected")) {
        md += "_Repeat statistics: " + Val(rp["not_collected"]) + "_\n\n";
      } else {
        md += fmt::format(
            "Repeated with `gputriage run --repeat {}`: failed {} of {} runs ({}), {} with this signature, "
            "{} distinct signature(s).\n\n",
            Val(rp["runs"]), Val(rp["failures"]), Val(rp["runs"]), Val(rp["verdict"]), Val(rp["same_signature"]),
            Val(rp["distinct_signatures"]));
        if (rp["series"].is_array() && !rp["series"].empty()) {
          // The runs in order, 100 at most here (repeat.json has them all).
          md += "| Run | Result | Exit status | Signature |\n|---:|---|---:|---|\n";
          size_t shown = 0;
          for (const Json& run : rp["series"]) {
            if (shown++ == 100) {
              md += fmt::format("| … | {} more runs in repeat.json | | |\n", rp["series"].size() - 100);
              break;
            }
            bool failed = run["failed"].is_boolean() && run["failed"].get<bool>();
            bool timed_out = run["timed_out"].is_boolean() && run["timed_out"].get<bool>();
            md += fmt::format("| {} | {} | {} | {} |\n", Val(run["run"]),
                              failed ? (timed_out ? "**failed** (timeout)" : "**failed**") : "passed",
                              Val(run["exit_status"]),
                              run["signature"].is_string() ? MdCodeCell(Val(run["signature"])) : "");
          }
          md += "\n";
        }
        if (rp["signatures"].is_array() && !rp["signatures"].empty()) {
          md += "| Failed runs | Signature |\n|---:|---|\n";
          for (const Json& c : rp["signatures"]) {
            md += fmt::format("| {} | {} |\n", Val(c["count"]), MdCodeCell(Val(c["signature"])));
          }
          md += "\n";
        }
      }
    }
  }
  md += "### What happened\n\n";
  if (f.contains("signal") && !f["signal"].is_null()) {
    md += fmt::format("`{}` ({}) at `{}`\n\n", Val(f["signal"]), Val(f["si_code"]), Val(f["fault_address"]));
  }
  if (f.contains("gpu_signature")) md += fmt::format("GPU signature: `{}`\n\n", Val(f["gpu_signature"]));
  md += MdList(f["verdict_reasons"]);
  if (f.contains("processes") && f["processes"].is_array()) {
    md +=
        "\nProcesses of the job, in the order they failed:\n\n| Process | Rank | Pid | Signal | Stopped at |\n"
        "|---|---:|---:|---|---:|\n";
    for (const Json& jp : f["processes"]) {
      std::string role = core::JobProcessRoleText(Val(jp["role"]));
      if (Val(jp["role"]) == "first_failure") role = "**" + role + "**";
      md +=
          fmt::format("| {} | {} | {} | {} | {} |\n", role, jp.contains("rank") ? Val(jp["rank"]) : "", Val(jp["pid"]),
                      jp["signal"].is_string() ? Val(jp["signal"]) : "still running",
                      jp["stopped_at_s"].is_number() ? fmt::format("+{:.2f} s", jp["stopped_at_s"].get<double>()) : "");
    }
  }
  if (f.contains("crashed_thread_frames") && !f["crashed_thread_frames"].empty()) {
    std::string frames;
    int i = 0;
    for (const Json& fr : f["crashed_thread_frames"]) frames += fmt::format("#{:<2} {}\n", i++, Val(fr));
    md += "\nCrashed thread:\n\n" + Code(frames);
  }
  if (f.contains("disassembly") && !f["disassembly"].empty()) {
    std::string dis;
    for (const Json& d : f["disassembly"]) dis += Val(d) + "\n";
    md += "\nFaulting instruction:\n\n" + Code(dis);
  }
  if (f.contains("kernel_log_for_job") && !f["kernel_log_for_job"].empty()) {
    std::string k;
    for (const Json& d : f["kernel_log_for_job"]) k += Val(d) + "\n";
    md += "\nKernel log (records naming the job):\n\n" + Code(k);
  }
  if (!Val(f["stderr_excerpt"]).empty()) md += "\nEnd of stderr:\n\n" + Code(Val(f["stderr_excerpt"]));
  if (r.contains("gpu_calls") && r["gpu_calls"].is_object()) {
    const Json& g = r["gpu_calls"];
    md += "\n### GPU calls (flight recorder)\n\n";
    if (g["kernel"].is_string()) {
      md += fmt::format("Faulting kernel: `{}`{}\n\n", Val(g["kernel"]),
                        g["location"].is_string() ? " at `" + Val(g["location"]) + "`" : "");
    }
    if (!Val(g["escalation"]).empty()) md += "Escalation: " + MdText(Val(g["escalation"])) + "\n\n";
    if (!g["in_flight"].empty()) {
      std::string lines;
      for (const Json& l : g["in_flight"]) lines += Val(l) + "\n";
      md += fmt::format("Launches since the last successful synchronisation ({} in all, newest first):\n\n",
                        g["in_flight_total"].get<size_t>()) +
            Code(lines);
    }
    md += MdList(g["fault_addresses"]);
    for (const Json& f : g["failed_calls"]) {  // the API name in code style: "__hip..." is not bold
      std::string line = Val(f);
      size_t space = line.find(' ');
      md += "- `" + line.substr(0, space) + "`" + (space == std::string::npos ? "" : line.substr(space)) + "\n";
    }
  }
  md += "\n### Diagnostics\n\n";
  for (const Json& d : r["diagnostics"]) {
    md += fmt::format("- [{}] {}{}\n", d["attached"].get<bool>() ? "x" : " ", Val(d["item"]),
                      Val(d["note"]).empty() ? "" : " — " + Val(d["note"]));
  }
  md += "\n### Troubleshooting attempted\n\n";
  md += r["troubleshooting"].empty() ? "_nothing recorded_\n" : MdList(r["troubleshooting"]);
  md += "\n### Known issues\n\n";
  if (r["known_issues"].empty()) md += "_none matched in gputriage's knowledge base_\n";
  for (const Json& k : r["known_issues"]) {
    md += fmt::format("- **{}** (`{}`, {})\n  - fix: {}\n", Val(k["title"]), Val(k["id"]), Val(k["category"]),
                      Val(k["fix"]));
    for (const Json& ref : k["references"]) md += "  - " + Val(ref) + "\n";
  }
  md += "\n### Next steps\n\n" + MdList(r["next_steps"]) + MdList(r["search_links"]);
  return md;
}

std::string RenderMarkdown(const Json& r) {
  return MarkdownHead(r) + MarkdownBody(r) + "\n<sub>Generated by gputriage report from " + MdText(Val(r["source"])) +
         ".</sub>\n";
}

}  // namespace gputriage::report
