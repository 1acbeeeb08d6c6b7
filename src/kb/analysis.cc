#include "kb/analysis.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/redact.h"
#include "core/signals.h"
#include "core/text.h"
#include "forensics/collectives.h"
#include "kb/next_steps.h"
#include "kb/scan.h"
#include "kb/verdict.h"
#include "kmsg/kmsg.h"

namespace gputriage::kb {
namespace {

// The general classifier's decision over the scan's scores: the strongest category among those
// with at least one strong signal (weak hints alone name no category).
struct GeneralDecision {
  std::optional<core::Category> general;  // with at least one strong signal
  std::optional<core::Category> hinted;   // the best score, hints included
  int best = 0;
  int total = 0;
  int best_hint = 0;
};

GeneralDecision DecideGeneral(const ScanFindings& found) {
  GeneralDecision d;
  for (core::Category category : core::AllCategories()) {
    size_t ci = static_cast<size_t>(category);
    // The last Python exception's category wins a tie.
    int score = found.scores[ci] + (found.last_exception_category == category ? 1 : 0);
    d.total += score;
    if (found.strong[ci] > 0 && score > d.best) {
      d.best = score;
      d.general = category;
    }
    if (score > d.best_hint) {
      d.best_hint = score;
      d.hinted = category;
    }
  }
  return d;
}

// Below this confidence (a handful of weak lines, or strong ones pulling different ways) the
// category's usual verdict is not assumed: bench/eval_corpus.py's calibration shows the category
// itself right for under a third of such reports.
constexpr double kThinEvidence = 0.3;

// Category, confidence, the default verdict and its first reason.
void DecideCategory(const ScanFindings& found, Analysis& a) {
  if (!a.matches.empty()) {
    const IssueMatch& top = a.matches.front();
    a.category = top.issue->category;
    a.confidence = std::min(0.95, 0.6 + top.score / 100.0);
    a.verdict = top.issue->verdict;
    a.verdict_reasons.push_back(fmt::format("known issue {}: {}", top.issue->id, top.issue->title));
    return;
  }
  GeneralDecision d = DecideGeneral(found);
  if (d.general) {
    a.category = *d.general;
    double share = d.total > 0 ? static_cast<double>(d.best) / d.total : 0;
    a.confidence = std::min(0.7, 0.15 + 0.05 * d.best) * (0.5 + 0.5 * share);
    a.verdict_reasons.push_back(
        fmt::format("no known issue matched; the error lines point to {} "
                    "(general signals, score {} of {})",
                    core::CategoryName(*d.general), d.best, d.total));
    // Thin evidence does not place the fault: below kThinEvidence the category's usual verdict
    // is not assumed (the stack's own messages and hardware evidence can still decide it).
    if (a.confidence >= kThinEvidence) {
      a.verdict = DefaultVerdict(*d.general);
    } else {
      a.verdict_reasons.push_back(
          fmt::format("confidence {:.2f} is below {:.2f}: too little evidence to place the fault by the category alone",
                      a.confidence, kThinEvidence));
    }
  } else if (d.hinted) {
    a.category = core::Category::kOther;
    a.confidence = 0.1;
    a.verdict_reasons.push_back(
        fmt::format("no known issue matched and no clear GPU error; only weak hints "
                    "of {} (words like those of such failures, score {})",
                    core::CategoryName(*d.hinted), d.best_hint));
  } else {
    a.category = core::Category::kOther;
    a.confidence = 0.05;
    a.verdict_reasons.push_back("no known issue matched and no GPU error signal was found");
  }
}

// The signature of a key line: redacted first, then cut to 400 bytes and normalised (digit runs
// become N: normalised first, a token would be shortened below its format and shown), and
// valid UTF-8 without control bytes (the line may be binary, the cut may split a character).
std::string Signature(std::string_view line) {
  std::string redacted = core::RedactText(line);
  if (redacted.size() > 400) redacted.resize(400);
  return core::SanitizeUtf8(forensics::NormalizeLine(redacted));
}

}  // namespace

core::Result<std::unique_ptr<Analyzer>> Analyzer::Create(const KnowledgeBase& kb) {
  std::unique_ptr<Analyzer> a(new Analyzer());
  a->kb_ = &kb;
  GT_ASSIGN_OR_RETURN(a->matcher_, Matcher::Build(kb.issues));
  GT_ASSIGN_OR_RETURN(GeneralClassifier general, GeneralClassifier::Build(kb.catalog.general_signals));
  a->general_ = std::make_unique<GeneralClassifier>(std::move(general));
  a->Begin("");
  return a;
}

Analyzer::~Analyzer() = default;

void Analyzer::Begin(std::string label) {
  if (!filter_cache_) filter_cache_ = std::make_unique<LineScan::FilterCache>();
  scan_ = std::make_unique<LineScan>(*matcher_, *general_, kb_->catalog, prefilter_, *filter_cache_);
  label_ = std::move(label);
  incomplete_inputs_.clear();
  library_findings_.clear();
  collective_findings_.clear();
}

void Analyzer::AddText(std::string_view text, std::string_view name) {
  auto stats = ReadLinesFromMemory(
      text, name, [&](std::string_view line, uint64_t n) { scan_->Line(LineSource::kUnknown, line, n, name); });
  if (stats.ok()) scan_->Count(*stats);
}

core::Result<ReadStats> Analyzer::AddLog(int fd, std::string_view prefix, std::string_view name,
                                         const ReadOptions& options) {
  BlockSink blocks = [&](std::string_view text, uint64_t first, uint64_t lines) {
    return scan_->Block(text, first, lines, name);
  };
  auto stats = ReadLinesFromFd(
      fd, prefix, name, [&](std::string_view line, uint64_t n) { scan_->Line(LineSource::kUnknown, line, n, name); },
      options, &blocks);
  if (!stats.ok()) return stats.error();
  scan_->Count(*stats);
  return stats;
}

void Analyzer::AddBundle(const core::Bundle& bundle) {
  if (!bundle.stderr_tail.empty()) {
    auto stats = ReadLinesFromMemory(bundle.stderr_tail, "stderr.tail", [&](std::string_view line, uint64_t n) {
      scan_->Line(LineSource::kStderr, line, n, "stderr.tail");
    });
    if (stats.ok()) scan_->Count(*stats);
  }
  if (!bundle.kmsg.empty()) {
    uint64_t n = 0;
    kmsg::ParseKmsgBuffer(bundle.kmsg,
                          [&](kmsg::Record&& r) { scan_->Line(LineSource::kKmsg, r.message, ++n, "kmsg.log"); });
  }
  AddProcess(bundle.process.primary, bundle.dir + "/process.json");
  if (bundle.repeat) scan_->SetRepeat(*bundle.repeat);
  if (bundle.libraries) library_findings_ = bundle.libraries->findings;
  if (bundle.collectives) collective_findings_ = forensics::CollectiveFindings(*bundle.collectives);
  // The version matrix on the bundle's snapshot, completed by the crashed process's libraries
  // (the libraries' own findings already hold what their versions alone violate).
  if (bundle.snapshot) {
    std::map<std::string, std::string> versions = catalog::SnapshotVersions(*bundle.snapshot);
    if (bundle.libraries) {
      for (const auto& [component, version] : catalog::ComponentVersions(bundle.libraries->libraries))
        versions.emplace(component, version);
    }
    for (const catalog::CompatViolation& v : catalog::EvaluateCompat(kb_->catalog.libraries.compat, versions)) {
      core::Finding f = catalog::CompatFinding(v);
      bool known = false;
      for (const core::Finding& g : library_findings_) known = known || g.id == f.id;
      if (!known) library_findings_.push_back(std::move(f));
    }
  }
  if (bundle.gpu_calls || bundle.escalation) {
    GpuCallEvidence gpu;
    if (bundle.gpu_calls) {
      gpu.candidates = bundle.gpu_calls->candidates;
      gpu.attributions = bundle.gpu_calls->attributions;
      gpu.errors = bundle.gpu_calls->errors;
      gpu.in_progress = bundle.gpu_calls->in_progress;
    }
    if (bundle.escalation) {
      gpu.kernel = bundle.escalation->kernel;
      gpu.location = bundle.escalation->location;
      gpu.escalation_summary = bundle.escalation->summary;
    }
    gpu_ = std::move(gpu);
  }
}

void Analyzer::AddProcess(const core::ProcessReport& report, const std::string& name) {
  scan_->Flush();
  if (const auto& cut = report.core_truncated) {
    incomplete_inputs_.push_back(
        fmt::format("{}: the core file is truncated ({} of {} bytes, {} memory segment(s) cut short): the evidence "
                    "from it is partial, and the confidence is halved",
                    name, cut->file_bytes, cut->expected_bytes, cut->segments_cut));
  }
  if (report.signal) scan_->Line(LineSource::kSignal, core::SignalName(*report.signal), 1, "signal");
  uint64_t n = 0;
  for (const core::ThreadState& t : report.threads) {
    for (const core::Frame& f : t.frames) {
      if (!f.function.empty()) scan_->Line(LineSource::kFrames, f.function, ++n, "frames");
    }
  }
  if (report.classification) {
    // A crash's own classification (a host-side crash is kOther and says nothing about the GPU).
    core::Category category = report.classification->category;
    if (category != core::Category::kOther) scan_->Prior(category, 4, {name, report.classification->summary});
    scan_->SetKeyLineIfEmpty(report.classification->summary);
  }
}

Analysis Analyzer::Finish(const Facts* facts) {
  scan_->Finish();
  const ScanFindings& found = scan_->findings();
  Analysis a;
  a.source = label_;
  a.stats = found.stats;
  a.matches = matcher_->Results(facts);
  a.evidence = found.evidence;
  DecideCategory(found, a);
  for (const std::string& incomplete : incomplete_inputs_) {
    a.confidence *= 0.5;
    a.verdict_reasons.push_back(incomplete);
  }
  AddVerdictEvidence(found, kb_->catalog.xid, facts, a);
  a.signature = Signature(found.key_line.empty() ? found.fallback_line : found.key_line);
  a.gpu_signature =
      facts ? scan_->signature().Finish(facts->gpu_archs, facts->versions) : scan_->signature().Finish({}, {});
  a.group_key = a.gpu_signature.empty() ? a.signature : a.gpu_signature.Key();
  a.next_steps = NextSteps(a.category, !a.matches.empty());
  if (found.python_fault) {
    const PythonFault& f = *found.python_fault;
    a.python_fault = f;
    a.verdict_reasons.push_back(fmt::format("Python's faulthandler ({}:{}): {}", f.input, f.line_number, f.Describe()));
    if (!f.frames.empty()) {
      // The innermost frame outside Python's own library is usually the program's line.
      a.next_steps.insert(a.next_steps.begin(),
                          fmt::format("Python was running {}:{} ({}) when the process died of '{}': the native code "
                                      "it called crashed; the python_fault frames (--json) are the whole Python stack.",
                                      f.frames[0].file, f.frames[0].line, f.frames[0].function, f.error));
    }
  }
  if (found.asynchronous) {
    a.verdict_reasons.push_back(
        "the runtime says the error was reported asynchronously: the traceback shows the API call "
        "that noticed it, not the kernel that failed");
    a.next_steps.insert(a.next_steps.begin(),
                        "Rerun with CUDA_LAUNCH_BLOCKING=1 (AMD: AMD_SERIALIZE_KERNEL=3) so the error "
                        "is raised at the launch of the kernel that failed; the traceback then points at it.");
  }
  if (a.matches.empty()) a.search_links = SearchLinks(a.signature);
  if (gpu_) {
    if (gpu_->kernel) {
      a.next_steps.insert(
          a.next_steps.begin(),
          fmt::format("The faulting kernel is {}{}: start there (escalation.json has the chain of evidence).",
                      *gpu_->kernel, gpu_->location ? " at " + *gpu_->location : ""));
    } else if (!gpu_->candidates.empty()) {
      a.next_steps.insert(a.next_steps.begin(),
                          fmt::format("The kernel that failed is among the {} launched since the last successful "
                                      "synchronisation (newest: {}); `gputriage run --escalate` names it.",
                                      gpu_->candidates.size(), gpu_->candidates.front().kernel.value_or("?")));
    }
    a.gpu = std::move(gpu_);
    gpu_.reset();
  }
  for (const core::Finding& f : library_findings_) {
    if (f.severity >= core::Severity::kError)
      a.next_steps.push_back(fmt::format("Libraries (libraries.json): {}. {}", f.title, f.fix));
  }
  a.library_findings = std::move(library_findings_);
  library_findings_.clear();
  // A rank that never entered a collective explains the others' timeouts: said first.
  for (auto it = collective_findings_.rbegin(); it != collective_findings_.rend(); ++it) {
    if (it->severity < core::Severity::kError) continue;
    a.verdict_reasons.push_back("PyTorch's flight recorder (collectives.json): " + it->title);
    a.next_steps.insert(a.next_steps.begin(), it->fix);
  }
  a.collective_findings = std::move(collective_findings_);
  collective_findings_.clear();
  return a;
}

Analysis Analyzer::AnalyzeText(std::string_view text, std::string_view name, const Facts* facts) {
  Begin(std::string(name));
  AddText(text, name);
  return Finish(facts);
}

}  // namespace gputriage::kb
