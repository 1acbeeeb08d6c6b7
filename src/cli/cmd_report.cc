// `gputriage report BUNDLE|LOG... [--format md|html|json] [--snapshot FILE] [-o FILE]`: the bug
// report, filled from what was collected, secrets redacted.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cli/common.h"
#include "core/json_read.h"
#include "kb/analysis.h"
#include "kb/knowledge_base.h"
#include "report/report.h"
#include "store/data_home.h"
#include "store/snapshot_store.h"

namespace gputriage::cli {
namespace {

using core::Json;

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<Json> ReadJson(const std::string& path) {
  auto text = ReadText(path);
  if (!text) return std::nullopt;
  Json j = Json::parse(*text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::optional<int> SignatureCount(const std::string& signature) {
  if (signature.empty()) return std::nullopt;
  auto db = store::DefaultDatabasePath();
  if (!db.ok()) return std::nullopt;
  auto opened = store::SnapshotStore::Open(*db);
  if (!opened.ok()) return std::nullopt;
  auto rows = opened->ListBundles(0);
  if (!rows.ok()) return std::nullopt;
  int n = 0;
  for (const store::BundleRow& row : *rows) n += row.signature == signature ? 1 : 0;
  return n;
}

int Report(const std::vector<std::string>& paths, const std::string& format, const std::string& snapshot_path,
           const std::string& output) {
  if (format != "md" && format != "html" && format != "json") {
    PrintError(fmt::format("report: --format '{}' is not md, html or json", format));
    return kExitUsage;
  }
  auto kb = kb::LoadEmbeddedKnowledgeBase();
  if (!kb.ok()) {
    PrintError("refusing to report: " + kb.error().message);
    return kExitInternal;
  }
  auto analyzer = kb::Analyzer::Create(*kb);
  if (!analyzer.ok()) {
    PrintError("refusing to report: " + analyzer.error().message);
    return kExitInternal;
  }
  report::ReportInput input;
  std::string label;
  for (const std::string& p : paths) label += (label.empty() ? "" : " ") + p;
  input.source = label;
  (*analyzer)->Begin(label);
  for (const std::string& path : paths) {
    struct stat st {};
    if (path != "-" && stat(path.c_str(), &st) != 0) {
      PrintError(fmt::format("{}: {}", path, std::strerror(errno)));
      return kExitUsage;
    }
    if (path != "-" && S_ISDIR(st.st_mode)) {
      if (auto added = (*analyzer)->AddBundle(path); !added.ok()) {
        PrintError(added.error().message);
        return kExitUsage;
      }
      input.manifest = ReadJson(path + "/manifest.json");
      input.repeat = ReadJson(path + "/repeat.json");
      input.process = ReadJson(path + "/process.json");
      if (!input.snapshot) {
        if (auto bundled = ReadJson(path + "/snapshot.json")) {
          if (auto typed = core::SnapshotFromJson(*bundled, path + "/snapshot.json"); typed.ok()) input.snapshot = *typed;
        }
      }
      input.stderr_tail = ReadText(path + "/stderr.tail").value_or("");
      input.kmsg = ReadText(path + "/kmsg.log").value_or("");
    } else {
      if (auto added = (*analyzer)->AddLog(path); !added.ok()) {
        PrintError(added.error().message);
        return kExitUsage;
      }
      if (path != "-") {
        std::string text = ReadText(path).value_or("");
        input.stderr_tail += text.size() > (1u << 20) ? text.substr(text.size() - (1u << 20)) : text;
      }
    }
  }
  if (!snapshot_path.empty()) {
    std::optional<Json> json = ReadJson(snapshot_path);
    if (!json) {
      PrintError(fmt::format("{}: not a readable JSON snapshot", snapshot_path));
      return kExitUsage;
    }
    auto typed = core::SnapshotFromJson(*json, snapshot_path);
    if (!typed.ok()) {
      PrintError(typed.error().message);
      return kExitUsage;
    }
    input.snapshot = std::move(*typed);
  }
  kb::Facts facts;
  if (input.snapshot) facts = kb::FactsFromSnapshot(*input.snapshot);
  input.analysis = (*analyzer)->Finish(input.snapshot ? &facts : nullptr);
  if (input.manifest) input.same_signature_count = SignatureCount(core::StringAt(*input.manifest, "signature"));
  Json r = report::BuildReport(input);
  std::string text = format == "json" ? r.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"
                     : format == "html" ? report::RenderHtml(r)
                                        : report::RenderMarkdown(r);
  if (output.empty() || output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    std::ofstream out(output, std::ios::binary);
    out << text;
    if (!out) {
      PrintError(fmt::format("{}: cannot write: {}", output, std::strerror(errno)));
      return kExitInternal;
    }
    std::fprintf(stderr, "gputriage: report written to %s\n", output.c_str());
  }
  return kExitOk;
}

}  // namespace

Command ReportCommand() {
  return Command{
      "report",
      "A bug report filled from a crash bundle or log: Markdown, HTML or JSON.",
      [](CLI::App& app) -> std::function<int()> {
        auto paths = std::make_shared<std::vector<std::string>>();
        auto format = std::make_shared<std::string>("md");
        auto snapshot = std::make_shared<std::string>();
        auto output = std::make_shared<std::string>();
        app.description(
            "Writes the bug report for a failure from what was collected: Environment (OS, "
            "kernel, GPUs, driver, ROCm/CUDA, PyTorch, GPU-stack environment variables), "
            "Reproduction (command, exit status, how often the same signature was seen), What "
            "happened (signal, crashed thread's frames, faulting instruction, kernel-log records "
            "naming the job, end of stderr), Diagnostics (a checklist of what is attached), "
            "Troubleshooting attempted (debug variables that were set), the matching known "
            "issues, and the next steps. Markdown is ready to paste into a GitHub issue; HTML is "
            "one self-contained file. Everything taken from the job or the machine is passed "
            "through secret redaction (tokens, keys, passwords).");
        app.add_option("paths", *paths, "A crash bundle directory, or logs (- for stdin)")->required();
        app.add_option("--format", *format, "md (default), html or json")->type_name("FORMAT");
        app.add_option("--snapshot", *snapshot, "A snapshot JSON for the Environment section (a bundle has its own)")
            ->type_name("FILE");
        app.add_option("-o,--output", *output, "Write the report to FILE instead of stdout")->type_name("FILE");
        return [paths, format, snapshot, output]() { return Report(*paths, *format, *snapshot, *output); };
      }};
}

}  // namespace gputriage::cli
