// `gputriage analyze`: from what a failure left behind (a log, a crash bundle, a core's process
// report) to a category with a confidence, the known issues it matches with their evidence, a
// verdict (hardware, driver-firmware, library, application, unknown) and what to do next.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/bundle.h"
#include "core/category.h"
#include "core/gpu_calls.h"
#include "core/model.h"
#include "core/process.h"
#include "core/result.h"
#include "forensics/gpu_signature.h"
#include "kb/general_classifier.h"
#include "kb/knowledge_base.h"
#include "kb/log_reader.h"
#include "kb/matcher.h"
#include "kb/python_fault.h"

namespace gputriage::kb {

class LineScan;

/// What a bundle's flight record and escalation say about the GPU side (`run --record`,
/// `run --escalate`).
struct GpuCallEvidence {
  std::optional<std::string> kernel;    ///< the faulting kernel, when escalation named it
  std::optional<std::string> location;  ///< its file:line, from the sanitizer
  std::string escalation_summary;
  std::vector<core::GpuCall> candidates;  ///< launches in flight when the error surfaced, newest first
  std::vector<core::GpuAddressAttribution> attributions;
  std::vector<core::GpuErrorCount> errors;
  std::vector<core::GpuCall> in_progress;
};

struct Analysis {
  std::string source;  ///< what was analysed
  core::Category category = core::Category::kOther;
  double confidence = 0;  ///< 0..1
  core::Verdict verdict = core::Verdict::kUnknown;
  std::vector<std::string> verdict_reasons;
  std::vector<IssueMatch> matches;  ///< best first
  /// Lines the general classifier keyed on when no known issue decided the category.
  std::vector<core::Evidence> evidence;
  std::vector<std::string> next_steps;
  std::string signature;                  ///< the normalised key error line
  forensics::GpuSignature gpu_signature;  ///< error code, kernel, architecture, versions
  /// What failures of the same kind group by: the GPU signature when there is a GPU error,
  /// else the normalised key line.
  std::string group_key;
  /// NVIDIA Xid events seen: code, name and class from the Xid catalog, count, GPUs.
  core::Json xids = core::Json::array();
  /// amdgpu VM fault blocks, one event each, decoded (kb/vm_fault.h); the first 64.
  core::Json vm_faults = core::Json::array();
  /// Python's faulthandler report: which Python line went into the native code that crashed.
  std::optional<PythonFault> python_fault;
  /// AMD ACA error banks, decoded with kb/tables/amd-ras.yaml (kb/aca.h); the first 64.
  core::Json aca_banks = core::Json::array();
  std::vector<std::string> search_links;  ///< when nothing matched
  ReadStats stats;
  std::optional<GpuCallEvidence> gpu;  ///< from a bundle with gpu_calls.json / escalation.json
  /// Layer 3 findings of the crashed process's loaded libraries (a bundle's libraries.json):
  /// two copies of one library, mixed CUDA/ROCm releases, version-matrix violations.
  std::vector<core::Finding> library_findings;
  /// What PyTorch's flight-recorder dumps say together (a bundle's collectives.json): a rank that
  /// never entered a collective the others wait in, ranks that disagree on one, one not completed.
  std::vector<core::Finding> collective_findings;
};

/// One analysis may combine several inputs of the same failure (stderr and dmesg files, a
/// bundle, a core): Begin, Add..., Finish. Not thread-safe.
class Analyzer {
 public:
  /// Compiles the knowledge base's patterns and general signals (`kb` must outlive the
  /// analyzer); fails naming the entry whose pattern is bad.
  static core::Result<std::unique_ptr<Analyzer>> Create(const KnowledgeBase& kb);
  ~Analyzer();

  /// Starts a new analysis (forgets the previous one's inputs).
  void Begin(std::string label);

  /// A log (gzip/zstd detected), stderr and kernel log possibly mixed, from the open descriptor
  /// `fd` whose first bytes `prefix` were already read from it (ReadLinesFromFd); `name` is the
  /// input in evidence and messages. Fails naming it when it cannot be read or (with
  /// options.refuse_binary) is not text; then nothing of it is in the analysis. A damaged
  /// compressed stream is not a failure: the lines before the damage are analysed and the
  /// returned stats' `damage` says what happened.
  core::Result<ReadStats> AddLog(int fd, std::string_view prefix, std::string_view name, const ReadOptions& options);

  /// Text in memory (tests, the evaluation), as a plain log.
  void AddText(std::string_view text, std::string_view name);

  /// A crash bundle (core::ReadBundle): its stderr tail, kernel-log records, process report
  /// and repeat statistics.
  void AddBundle(const core::Bundle& bundle);

  /// A process report (from a core file): its signal, frames and classification. A report from
  /// a truncated core (ProcessReport::core_truncated) adds a verdict reason and halves the
  /// confidence.
  void AddProcess(const core::ProcessReport& report, const std::string& name);

  /// The verdict over everything added since Begin. `facts` may be null (no snapshot).
  Analysis Finish(const Facts* facts);

  /// Plain-log lines are prefiltered a chunk at a time (the default); off, every line is
  /// matched on its own. The result is the same; tests and the benchmark compare the two.
  /// Takes effect at the next Begin.
  void set_prefilter(bool on) { prefilter_ = on; }

  /// Begin + AddText + Finish.
  Analysis AnalyzeText(std::string_view text, std::string_view name, const Facts* facts);

 private:
  Analyzer() = default;
  const KnowledgeBase* kb_ = nullptr;
  std::unique_ptr<Matcher> matcher_;
  std::unique_ptr<GeneralClassifier> general_;
  std::unique_ptr<LineScan> scan_;
  std::string label_;
  /// Inputs that are known to be incomplete (a truncated core): each halves the confidence.
  std::vector<std::string> incomplete_inputs_;
  std::optional<GpuCallEvidence> gpu_;
  std::vector<core::Finding> library_findings_;
  std::vector<core::Finding> collective_findings_;
  bool prefilter_ = true;
  std::unique_ptr<std::map<std::string, std::shared_ptr<const RE2::Set>>> filter_cache_;
};

/// The facts conditions are checked against, from a snapshot.
Facts FactsFromSnapshot(const core::Snapshot& snapshot);

/// analyze --json: {source, category, confidence, verdict, verdict_reasons, matches: [{id,
/// title, category, verdict, score, fix, fixes, explanation, references, evidence,
/// conditions}], evidence, next_steps, signature, search_links, known_issue_matched}.
core::Json ToJson(const Analysis& analysis);

/// {key, error, error_category, kernel, archs, versions}.
core::Json GpuSignatureJson(const forensics::GpuSignature& signature);

}  // namespace gputriage::kb
