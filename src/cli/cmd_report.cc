// `gputriage report BUNDLE|LOG... [--format md|html|json] [--snapshot FILE] [-o FILE]`: the bug
// report, filled from what was collected, secrets redacted.
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "cli/common.h"
#include "core/fs.h"
#include "kb/knowledge_base.h"
#include "report/report.h"
#include "store/data_home.h"
#include "store/snapshot_arg.h"
#include "store/snapshot_store.h"

namespace gputriage::cli {
namespace {

using core::Json;

int Report(const std::vector<std::string>& paths, const std::string& format, const std::string& snapshot_path,
           const std::string& baseline_path, const std::string& output) {
  if (format != "md" && format != "html" && format != "json") {
    return Fail(fmt::format("report: --format '{}' is not md, html or json", format), kExitUsage);
  }
  auto kb = kb::LoadEmbeddedKnowledgeBase();
  auto analyzer = kb.ok() ? kb::Analyzer::Create(*kb) : core::Result<std::unique_ptr<kb::Analyzer>>(kb.error());
  if (!analyzer.ok()) {
    return Fail("refusing to report: " + analyzer.error().message, kExitInternal);
  }
  // Only read (a stored --snapshot, earlier bundles with the same signature): read-only.
  store::SnapshotStore db = store::SnapshotStore::OpenDefaultReadOnlyOrUnavailable();
  report::ReportRequest request{.paths = paths};
  if (!snapshot_path.empty()) {
    auto snapshot = store::LoadSnapshotArg(&db, snapshot_path);
    if (!snapshot.ok()) {
      return Fail(snapshot.error().message, kExitUsage);
    }
    request.snapshot = std::move(*snapshot);
  }
  if (!baseline_path.empty()) {
    auto baseline = store::LoadSnapshotArg(&db, baseline_path);
    if (!baseline.ok()) return Fail("--baseline: " + baseline.error().message, kExitUsage);
    request.baseline = std::move(*baseline);
    request.baseline_source = baseline_path;
  }
  auto r = report::MakeReport(**analyzer, request, &db);
  if (!r.ok()) {
    return Fail(r.error().message, kExitUsage);
  }
  for (const Json& warning : r->json["warnings"]) PrintError("warning: " + warning.get<std::string>());
  std::string text = format == "json"   ? r->json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"
                     : format == "html" ? report::RenderHtml(r->json, r->timeline, r->threads)
                                        : report::RenderMarkdown(r->json);
  if (output.empty() || output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return kExitOk;
  }
  if (auto written = core::WriteOutputFile(output, text); !written.ok()) {
    bool refused = written.error().code == core::ErrorCode::kInvalidArgument;
    return Fail(written.error().message, refused ? kExitUsage : kExitInternal);
  }
  std::fprintf(stderr, "gputriage: report written to %s\n", output.c_str());
  return kExitOk;
}

}  // namespace

Command ReportCommand() {
  return Command{
      "report", "A bug report filled from a crash bundle or log: Markdown, HTML or JSON.",
      [](CLI::App& app) -> std::function<int()> {
        auto paths = std::make_shared<std::vector<std::string>>();
        auto format = std::make_shared<std::string>("md");
        auto snapshot = std::make_shared<std::string>();
        auto output = std::make_shared<std::string>();
        auto baseline = std::make_shared<std::string>();
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
        app.add_option("--snapshot", *snapshot,
                       "A snapshot for the Environment section (a bundle has its own): a JSON file, - for stdin, "
                       "or a stored snapshot's id, 'latest', 'previous'")
            ->type_name("SNAPSHOT");
        app.add_option("--baseline", *baseline,
                       "A snapshot from before the failure (a good run's, a stored one): the report adds \"Changes "
                       "since the baseline\", what differs on the machine (GPUs, links, driver, kernel, GPU-stack "
                       "packages, environment; as snapshot diff): a JSON file, - for stdin, or a stored snapshot's id, "
                       "'latest', 'previous'")
            ->type_name("SNAPSHOT");
        app.add_option("-o,--output", *output, "Write the report to FILE instead of stdout")->type_name("FILE");
        return [paths, format, snapshot, baseline, output]() {
          return Report(*paths, *format, *snapshot, *baseline, *output);
        };
      }};
}

}  // namespace gputriage::cli
