// `gputriage analyze PATH... [--exe PATH] [--snapshot S] [--baseline S] [--json]`: explain a
// failure from what it left behind (logs, crash bundles, core files).
#include <chrono>
#include <memory>

#include "cli/common.h"
#include "cli/render.h"
#include "core/version.h"
#include "kb/inputs.h"
#include "kb/knowledge_base.h"

namespace gputriage::cli {
namespace {

int Analyze(const std::vector<std::string>& paths, const std::string& exe, const std::string& snapshot_arg,
            const std::string& baseline_arg, const std::string& kb_dir, bool json) {
  auto kb = kb::LoadKnowledgeBaseFrom(kb_dir);
  auto analyzer = kb.ok() ? kb::Analyzer::Create(*kb) : core::Result<std::unique_ptr<kb::Analyzer>>(kb.error());
  if (!analyzer.ok()) return Fail("refusing to analyze: " + analyzer.error().message, kExitInternal);
  kb::AnalysisRequest request{.paths = paths, .exe = exe};
  // --snapshot and --baseline: a file, "-", or a stored snapshot (id, "latest", "previous").
  auto snapshot = LoadSnapshotOption(snapshot_arg);
  auto baseline = LoadSnapshotOption(baseline_arg);
  if (!snapshot.ok()) return Fail("analyze: " + snapshot.error().message, kExitUsage);
  if (!baseline.ok()) return Fail("analyze: --baseline: " + baseline.error().message, kExitUsage);
  request.snapshot = std::move(*snapshot);
  request.baseline = std::move(*baseline);
  // A big log or a stream takes seconds: say how far it is (on a terminal only).
  auto progress = std::make_shared<Progress>();
  auto started = std::chrono::steady_clock::now();
  request.progress = [progress, started](std::string_view name, uint64_t bytes, uint64_t size) {
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::string rate = seconds > 0 ? fmt::format(", {:.0f} MB/s", static_cast<double>(bytes) / 1e6 / seconds) : "";
    progress->Show(size > 0 ? fmt::format("analyze: {}: {} of {} ({:.0f}%){}", name, HumanBytes(bytes),
                                          HumanBytes(size), 100.0 * static_cast<double>(bytes) / size, rate)
                            : fmt::format("analyze: {}: {} read{}", name, HumanBytes(bytes), rate));
  };
  auto outcome = kb::AnalyzeInputs(**analyzer, request);
  progress.reset();  // erased before the answer is printed
  if (!outcome.ok()) return Fail(outcome.error().message, kExitUsage);
  for (const std::string& warning : outcome->warnings) PrintError("warning: " + warning);
  if (json) {
    PrintJson(kb::ToJson(*outcome, core::kToolVersion));
  } else {
    std::fputs(RenderAnalysisOutcome(*outcome).c_str(), stdout);
    std::fflush(stdout);
  }
  return kb::RecognisedFailure(*outcome) ? kExitFindings : kExitOk;
}

}  // namespace

Command AnalyzeCommand() {
  return Command{"analyze",
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
                                  "bundle's own snapshot.json is used when this is not given. A JSON file, - for "
                                  "stdin, or a stored snapshot's id, 'latest', 'previous'")
                       ->type_name("SNAPSHOT");
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
