// `gputriage analyze PATH... [--exe PATH] [--json]`: explain a failure from what it left
// behind. This version reads ELF core files (the kernel's or `run --core`'s) and crash bundles.
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cli/common.h"
#include "core/version.h"
#include "forensics/core_analysis.h"
#include "forensics/siginfo.h"

namespace gputriage::cli {
namespace {

using core::Json;

std::string FrameLine(size_t index, const forensics::Frame& f) {
  std::string name = f.function.empty() ? "??" : f.function;
  std::string where;
  if (f.file) where = fmt::format(" at {}{}", *f.file, f.line ? fmt::format(":{}", *f.line) : "");
  std::string module = f.module.empty() ? "" : f.module.substr(f.module.rfind('/') + 1);
  std::string offset = f.offset ? "+" + forensics::Hex(*f.offset) : "";
  return fmt::format("  #{:<2} {} {}{} ({}{})\n", index, forensics::Hex(f.pc), name, where,
                     module.empty() ? "?" : module, offset);
}

std::string RenderReport(const std::string& source, const forensics::ProcessReport& r) {
  std::string out = fmt::format("{}: pid {}{}\n", source, r.pid,
                                r.command.empty() ? "" : fmt::format(" \"{}\"", r.command));
  if (r.signal) {
    std::string code = r.si_code ? fmt::format(" ({}: {})", forensics::SiCodeName(*r.signal, *r.si_code),
                                               forensics::SiCodeMeaning(*r.signal, *r.si_code))
                                 : "";
    out += fmt::format("signal: {}{}{}\n", forensics::SignalName(*r.signal), code,
                       r.fault_address ? " at " + forensics::Hex(*r.fault_address) : "");
  }
  if (r.classification) {
    out += fmt::format("what: {} ({})\n", r.classification->summary, r.classification->kind);
    if (!r.classification->detail.empty()) out += fmt::format("  {}\n", r.classification->detail);
  }
  if (!r.threads.empty()) {
    const forensics::ThreadState& t = r.threads.front();
    out += fmt::format("thread {}{} (crashed):\n", t.tid, t.name.empty() ? "" : " \"" + t.name + "\"");
    size_t shown = std::min<size_t>(t.frames.size(), 24);
    for (size_t i = 0; i < shown; ++i) out += FrameLine(i, t.frames[i]);
    if (t.frames.size() > shown) out += fmt::format("  ... {} more frames (--json)\n", t.frames.size() - shown);
    if (t.unwind_error) out += fmt::format("  (unwinding stopped: {})\n", *t.unwind_error);
  }
  if (r.disassembly) {
    out += "disassembly:\n";
    for (const forensics::Instruction& i : r.disassembly->instructions) {
      out += fmt::format("  {} {}: {}\n", i.faulting ? "=>" : "  ", forensics::Hex(i.address), i.text);
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

core::Result<forensics::ProcessReport> LoadBundle(const std::string& dir) {
  std::ifstream in(dir + "/process.json");
  if (!in) return core::MakeError("{}: a crash bundle without process.json", dir);
  std::stringstream text;
  text << in.rdbuf();
  Json j = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return core::MakeError("{}/process.json: not valid JSON", dir);
  return forensics::ProcessReportFromJson(j);
}

int Analyze(const std::vector<std::string>& paths, const std::string& exe, bool json) {
  Json results = Json::array();
  std::string text;
  int rc = kExitOk;
  for (const std::string& path : paths) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
      PrintError(fmt::format("{}: {}", path, std::strerror(errno)));
      rc = kExitUsage;
      continue;
    }
    core::Result<forensics::ProcessReport> report = core::MakeError("");
    if (S_ISDIR(st.st_mode)) {
      report = LoadBundle(path);
    } else if (IsElfCore(path)) {
      report = forensics::AnalyzeCore(path, exe);
    } else {
      PrintError(fmt::format("{}: not an ELF core file or a crash bundle directory; matching logs "
                             "against the knowledge base is not implemented in this version", path));
      rc = kExitUsage;
      continue;
    }
    if (!report.ok()) {
      PrintError(report.error().message);
      rc = std::max(rc, kExitFindings + 1);  // 2: the input could not be read
      continue;
    }
    if (report->classification && rc == kExitOk) rc = kExitFindings;
    Json j = forensics::ToJson(*report);
    j["source"] = path;
    results.push_back(std::move(j));
    text += RenderReport(path, *report);
  }
  if (json) {
    PrintJson(Json{{"schema_version", 1}, {"tool_version", core::kToolVersion}, {"results", results}});
  } else {
    std::fputs(text.c_str(), stdout);
  }
  return rc;
}

}  // namespace

Command AnalyzeCommand() {
  return Command{
      "analyze",
      "Explain a failure from what it left: ELF core files and crash bundles.",
      [](CLI::App& app) -> std::function<int()> {
        auto paths = std::make_shared<std::vector<std::string>>();
        auto exe = std::make_shared<std::string>();
        auto json = std::make_shared<bool>(false);
        app.description(
            "Reads each PATH and prints the process report: signal and si_code, fault address "
            "and what it falls in, every thread's registers and symbolised stack (elfutils), the "
            "disassembly at the faulting instruction, and the classification (null dereference, "
            "stack overflow, ISA mismatch, abort...). PATH is an ELF core file (the kernel's, "
            "or one written by `gputriage run --core`) or a crash bundle directory. Exit status "
            "1 when a failure was classified, 2 when an input could not be read.");
        app.add_option("paths", *paths, "Core files or bundle directories")->required();
        app.add_option("--exe", *exe,
                       "The executable the core came from, when the path recorded in the core "
                       "is wrong (moved, or a different mount in a container)")
            ->type_name("PATH");
        app.add_flag("--json", *json, "Print {results:[process report]} as JSON");
        return [paths, exe, json]() { return Analyze(*paths, *exe, *json); };
      }};
}

}  // namespace gputriage::cli
