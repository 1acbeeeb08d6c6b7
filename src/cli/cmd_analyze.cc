// `gputriage analyze PATH... [--exe PATH] [--json]`: explain a failure from what it left
// behind. This version reads ELF core files (the kernel's or `run --core`'s) and crash bundles.
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cli/common.h"
#include "core/version.h"
#include "forensics/core_analysis.h"
#include "core/signals.h"
#include "kb/analysis.h"
#include "kb/knowledge_base.h"
#include "store/data_home.h"
#include "store/diff.h"
#include "store/snapshot_arg.h"
#include "store/snapshot_store.h"
#include "core/text.h"

namespace gputriage::cli {
namespace {

using core::Json;

std::string FrameLine(size_t index, const core::Frame& f) {
  std::string name = f.function.empty() ? "??" : f.function;
  std::string where;
  if (f.file) where = fmt::format(" at {}{}", *f.file, f.line ? fmt::format(":{}", *f.line) : "");
  std::string module = f.module.empty() ? "" : f.module.substr(f.module.rfind('/') + 1);
  std::string offset = f.offset ? "+" + core::Hex(*f.offset) : "";
  return fmt::format("  #{:<2} {} {}{} ({}{})\n", index, core::Hex(f.pc), name, where,
                     module.empty() ? "?" : module, offset);
}

std::string RenderReport(const std::string& source, const core::ProcessReport& r) {
  std::string out = fmt::format("{}: pid {}{}\n", source, r.pid,
                                r.command.empty() ? "" : fmt::format(" \"{}\"", r.command));
  if (r.signal) {
    std::string code = r.si_code ? fmt::format(" ({}: {})", core::SiCodeName(*r.signal, *r.si_code),
                                               core::SiCodeMeaning(*r.signal, *r.si_code))
                                 : "";
    out += fmt::format("signal: {}{}{}\n", core::SignalName(*r.signal), code,
                       r.fault_address ? " at " + core::Hex(*r.fault_address) : "");
  }
  if (r.classification) {
    out += fmt::format("what: {} ({})\n", r.classification->summary, r.classification->kind);
    if (!r.classification->detail.empty()) out += fmt::format("  {}\n", r.classification->detail);
  }
  if (!r.threads.empty()) {
    const core::ThreadState& t = r.threads.front();
    out += fmt::format("thread {}{} (crashed):\n", t.tid, t.name.empty() ? "" : " \"" + t.name + "\"");
    size_t shown = std::min<size_t>(t.frames.size(), 24);
    for (size_t i = 0; i < shown; ++i) out += FrameLine(i, t.frames[i]);
    if (t.frames.size() > shown) out += fmt::format("  ... {} more frames (--json)\n", t.frames.size() - shown);
    if (t.unwind_error) out += fmt::format("  (unwinding stopped: {})\n", *t.unwind_error);
  }
  if (r.disassembly) {
    out += "disassembly:\n";
    for (const core::Instruction& i : r.disassembly->instructions) {
      out += fmt::format("  {} {}: {}\n", i.faulting ? "=>" : "  ", core::Hex(i.address), i.text);
    }
    if (r.disassembly->note) out += fmt::format("  ({})\n", *r.disassembly->note);
  }
  if (r.threads.size() > 1) out += fmt::format("{} other threads (see --json)\n", r.threads.size() - 1);
  for (const core::NotCollected& n : r.not_collected) {
    out += fmt::format("not collected: {}: {}\n", n.item, n.reason);
  }
  return out;
}

bool IsElfCore(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[18] = {};
  in.read(header, sizeof header);
  if (in.gcount() < 18 || std::string_view(header, 4) != "\x7f" "ELF") return false;
  // e_type (little-endian) at offset 16: ET_CORE = 4.
  return header[16] == 4 && header[17] == 0;
}

core::Result<core::ProcessReport> LoadBundle(const std::string& dir) {
  std::ifstream in(dir + "/process.json");
  if (!in) return core::MakeError("{}: a crash bundle without process.json", dir);
  std::stringstream text;
  text << in.rdbuf();
  Json j = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return core::MakeError("{}/process.json: not valid JSON", dir);
  return core::ProcessReportFromJson(j);
}

std::string RenderAnalysis(const kb::Analysis& a) {
  std::string out = fmt::format("category: {} (confidence {:.2f})\nverdict: {}\n", a.category, a.confidence, a.verdict);
  for (const std::string& r : a.verdict_reasons) out += fmt::format("  {}\n", r);
  if (a.matches.empty()) {
    out += "known issues: none matched\n";
  } else {
    out += "known issues:\n";
    size_t shown = 0;
    for (const kb::IssueMatch& m : a.matches) {
      if (shown++ == 3) {
        out += fmt::format("  ... {} more (--json)\n", a.matches.size() - 3);
        break;
      }
      const kb::KnownIssue& i = *m.issue;
      out += fmt::format("  {}. {} [{}] ({}, {})\n", shown, i.title, i.id, i.category, i.verdict);
      for (const kb::Hit& h : m.hits) {
        out += fmt::format("     evidence {}:{}: {}\n", h.input, h.line_number, h.line);
      }
      for (const std::string& c : m.condition_notes) out += fmt::format("     condition {}\n", c);
      out += fmt::format("     why: {}\n", core::Trim(i.explanation));
      for (const kb::Fix& f : i.fixes) out += fmt::format("     fix ({}): {} — cost: {}\n", f.kind, f.action, f.cost);
      for (const kb::Reference& r : i.references) out += fmt::format("     see {}\n", r.url);
    }
  }
  if (a.matches.empty() && !a.evidence.empty()) {
    out += "evidence:\n";
    for (size_t i = 0; i < a.evidence.size() && i < 5; ++i) {
      out += fmt::format("  {}: {}\n", a.evidence[i].source, a.evidence[i].text);
    }
  }
  if (!a.signature.empty()) out += fmt::format("signature: {}\n", a.signature);
  out += "next steps:\n";
  for (const std::string& s : a.next_steps) out += fmt::format("  - {}\n", s);
  for (const std::string& l : a.search_links) out += fmt::format("  search: {}\n", l);
  return out;
}

core::Result<core::Snapshot> ReadSnapshotFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return core::MakeError("{}: {}", path, std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  Json j = Json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return core::MakeError("{}: not a JSON snapshot", path);
  return core::SnapshotFromJson(j, path);
}

core::Result<kb::KnowledgeBase> LoadKb(const std::string& dir) {
  if (dir.empty()) return kb::LoadEmbeddedKnowledgeBase();
  GT_ASSIGN_OR_RETURN(std::vector<kb::KbFile> files, kb::ReadKbDirectory(dir));
  return kb::LoadKnowledgeBase(files);
}

// What changed from the last good snapshot to the failure's, for the verdict's reasons. Changes
// that mean failing hardware (ECC counters up, retired pages, a GPU gone) count as hardware
// evidence too.
void AddBaselineChanges(const core::Snapshot& baseline, const core::Snapshot& snapshot, kb::Facts& facts) {
  for (const store::Change& c : store::DiffSnapshots(baseline, snapshot)) {
    if (facts.changes.size() < 20) facts.changes.push_back(c.summary);
    if (c.kind == store::change_kind::kEccErrorsIncreased || c.kind == store::change_kind::kRetiredPagesIncreased ||
        c.kind == store::change_kind::kGpuRemoved) {
      facts.hardware_alerts.push_back("since the last good snapshot: " + c.summary);
    }
  }
}

int Analyze(const std::vector<std::string>& paths, const std::string& exe, const std::string& snapshot_path,
            const std::string& baseline_arg, const std::string& kb_dir, bool json) {
  auto kb = LoadKb(kb_dir);
  if (!kb.ok()) {
    PrintError("refusing to analyze: " + kb.error().message);
    return kExitInternal;
  }
  auto analyzer = kb::Analyzer::Create(*kb);
  if (!analyzer.ok()) {
    PrintError("refusing to analyze: " + analyzer.error().message);
    return kExitInternal;
  }
  std::optional<core::Snapshot> snapshot;
  if (!snapshot_path.empty()) {
    auto loaded = ReadSnapshotFile(snapshot_path);
    if (!loaded.ok()) {
      PrintError(loaded.error().message);
      return kExitUsage;
    }
    snapshot = std::move(*loaded);
  }
  std::string label;
  for (const std::string& p : paths) label += (label.empty() ? "" : " ") + p;
  (*analyzer)->Begin(label);
  Json processes = Json::array();
  std::string text;
  int added = 0;
  for (const std::string& path : paths) {
    struct stat st {};
    if (path != "-" && stat(path.c_str(), &st) != 0) {
      PrintError(fmt::format("{}: {}", path, std::strerror(errno)));
      return kExitUsage;
    }
    if (path != "-" && S_ISDIR(st.st_mode)) {
      if (auto added_bundle = (*analyzer)->AddBundle(path); !added_bundle.ok()) {
        PrintError(added_bundle.error().message);
        return kExitUsage;
      }
      if (auto report = LoadBundle(path); report.ok()) {
        text += RenderReport(path, *report);
        Json pj = core::ToJson(*report);
        pj["source"] = path;
        processes.push_back(std::move(pj));
      }
      if (!snapshot) {
        if (auto bundled = ReadSnapshotFile(path + "/snapshot.json"); bundled.ok()) snapshot = std::move(*bundled);
      }
    } else if (path != "-" && IsElfCore(path)) {
      auto report = forensics::AnalyzeCore(path, exe);
      if (!report.ok()) {
        PrintError(report.error().message);
        return kExitUsage;
      }
      (*analyzer)->AddProcess(*report, path);
      text += RenderReport(path, *report);
      Json pj = core::ToJson(*report);
      pj["source"] = path;
      processes.push_back(std::move(pj));
    } else {
      if (auto read = (*analyzer)->AddLog(path); !read.ok()) {
        PrintError(read.error().message);
        return kExitUsage;
      }
    }
    ++added;
  }
  kb::Facts facts;
  if (snapshot) facts = kb::FactsFromSnapshot(*snapshot);
  if (!baseline_arg.empty()) {
    if (!snapshot) {
      PrintError("analyze: --baseline needs the failure's own snapshot to compare with (--snapshot FILE, or a "
                 "bundle that has snapshot.json)");
      return kExitUsage;
    }
    auto db_path = store::DefaultDatabasePath();
    std::optional<store::SnapshotStore> db;
    if (db_path.ok()) {
      if (auto opened = store::SnapshotStore::Open(*db_path); opened.ok()) db = std::move(*opened);
    }
    auto baseline = store::LoadSnapshotArg(db ? &*db : nullptr, baseline_arg);
    if (!baseline.ok()) {
      PrintError("analyze: --baseline: " + baseline.error().message);
      return kExitUsage;
    }
    AddBaselineChanges(*baseline, *snapshot, facts);
  }
  kb::Analysis analysis = (*analyzer)->Finish(snapshot ? &facts : nullptr);
  bool found = !analysis.matches.empty() || analysis.category != "other" || !processes.empty();
  int rc = found ? kExitFindings : kExitOk;
  if (json) {
    Json out = kb::ToJson(analysis);
    out["schema_version"] = 1;
    out["tool_version"] = core::kToolVersion;
    out["processes"] = processes;
    out["snapshot_used"] = snapshot.has_value();
    PrintJson(out);
  } else {
    if (!text.empty()) text += "\n";
    std::fputs((text + RenderAnalysis(analysis)).c_str(), stdout);
    std::fflush(stdout);
  }
  return rc;
}

}  // namespace

Command AnalyzeCommand() {
  return Command{
      "analyze",
      "Explain a failure from what it left: logs, crash bundles, core files -> category, known issues, fix.",
      [](CLI::App& app) -> std::function<int()> {
        auto paths = std::make_shared<std::vector<std::string>>();
        auto exe = std::make_shared<std::string>();
        auto snapshot = std::make_shared<std::string>();
        auto kb_dir = std::make_shared<std::string>();
        auto baseline = std::make_shared<std::string>();
        auto json = std::make_shared<bool>(false);
        app.description(
            "Reads every PATH as evidence of one failure and matches it against the known issues "
            "of the built-in knowledge base (kb/issues): prints the category with a confidence, "
            "the verdict (hardware, driver-firmware, library, application, unknown) and why, the "
            "matching known issues best first with the lines that matched, explanation, fixes "
            "and references, and the next diagnostic step; when nothing matches, search links "
            "for the normalised error signature. PATH is a log (stderr, dmesg or both mixed; "
            "gzip and zstd are read; - is stdin), a crash bundle directory (gputriage run), or "
            "an ELF core file (the kernel's, or `run --core`'s: its process report -- signal, "
            "stacks, disassembly, classification -- is printed too). Exit status 1 when a "
            "failure was recognised, 0 when nothing was, 2 when an input could not be read, "
            "3 when the knowledge base is broken.");
        app.add_option("paths", *paths, "Logs, bundle directories, core files; - for stdin")->required();
        app.add_option("--exe", *exe,
                       "The executable the core came from, when the path recorded in the core "
                       "is wrong (moved, or a different mount in a container)")
            ->type_name("PATH");
        app.add_option("--snapshot", *snapshot,
                       "A snapshot (gputriage snapshot --json) of the machine the failure happened "
                       "on, to check known issues' conditions (versions, GPU architecture, env); a "
                       "bundle's own snapshot.json is used when this is not given")
            ->type_name("FILE");
        app.add_option("--baseline", *baseline,
                       "A snapshot from when the job still worked: a stored snapshot's id, "
                       "'latest', 'previous', or a JSON file. What changed since (driver, ROCm/CUDA, "
                       "PyTorch, ECC counters, GPUs, links, environment) goes into the verdict's "
                       "reasons; needs the failure's own snapshot (--snapshot or the bundle's)")
            ->type_name("SNAPSHOT");
        app.add_flag("--json", *json,
                     "Print {category, confidence, verdict, verdict_reasons, matches: [{id, title, "
                     "category, fix, fixes, references, evidence, ...}], next_steps, signature, "
                     "search_links, processes} as JSON");
        app.add_option("--kb-dir", *kb_dir,
                       "Use the knowledge base in this kb/ directory instead of the built-in one "
                       "(for knowledge-base authors)")
            ->type_name("DIR");
        return [paths, exe, snapshot, baseline, kb_dir, json]() {
          return Analyze(*paths, *exe, *snapshot, *baseline, *kb_dir, *json);
        };
      }};
}

}  // namespace gputriage::cli
