// One scan over the inputs of one analysis: every line goes to the known-issue matcher, the GPU
// signature scanner, the amdgpu VM fault assembler, the Xid tally and the general classifier.
//
// Plain-log lines are not matched one by one as they arrive: they are gathered into chunks of
// about 1 MiB, and one RE2::Set pass over the whole chunk first asks whether any line in it can
// still change the result: a knowledge-base signal that has not matched yet, a general signal
// that has not reached its cap, the "asynchronously reported" note. Only then are the chunk's
// lines matched one by one. The prefilter set is rebuilt from what is still wanted whenever that
// shrinks, so on a long log full of the same errors the steady state is one cheap DFA pass per
// chunk. The result is the same as matching every line (tests compare both).
//
// A log file comes in bulk: each read buffer's whole lines become one chunk without being split
// (Block); its lines are found only when the prefilter says one may matter, and Xid lines by a
// plain search. The DFA pass, most of the work on a long log, runs on two worker threads (each
// chunk in two halves cut at a line's end) while the next chunks are read; a few chunks are in
// flight and are settled in order. An answer is used only when the prefilter has not changed
// since it was asked; otherwise the chunk is asked again.
#pragma once

#include <re2/set.h>

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "catalog/catalog.h"
#include "core/bundle.h"
#include "core/category.h"
#include "core/model.h"
#include "forensics/gpu_signature.h"
#include "kb/aca.h"
#include "kb/general_classifier.h"
#include "kb/log_reader.h"
#include "kb/matcher.h"
#include "kb/python_fault.h"
#include "kb/vm_fault.h"
#include "kmsg/classify.h"

namespace gputriage::kb {

/// An NVIDIA Xid code seen in the inputs: every line of it counted, however many.
struct XidSeen {
  uint64_t count = 0;
  std::vector<std::string> gpus;  ///< PCI addresses, the first LineScan::kMaxXidGpus
  std::string first_line;         ///< "input:line"
  std::string last_line;          ///< "input:line"
};

/// The key and fallback lines are kept raw, at most this long: the 400 bytes a signature keeps,
/// and room for a token that starts before that cut to be recognised whole when the analysis
/// redacts the line (Analyzer::Finish).
inline constexpr size_t kKeyLineBytes = 400 + 1024;

/// What a scan found, for the verdict.
struct ScanFindings {
  std::array<int, core::kCategoryCount> scores{};         ///< by category
  std::array<int, core::kCategoryCount> strong{};         ///< lines of weight >= 2, by category
  std::optional<core::Category> last_exception_category;  ///< of the last Python exception line
  std::vector<core::Evidence> evidence;                   ///< the lines the general classifier keyed on (12 at most)
  std::string key_line;                                   ///< the most telling error line, raw (kKeyLineBytes at most)
  std::string fallback_line;  ///< the last line that reads like an error, when no key line (raw, likewise)
  bool asynchronous = false;  ///< the runtime says the error was reported asynchronously
  /// Every distinct Xid code (the first kMaxXidCodes of them; lines of further codes are
  /// counted in xid_lines_dropped), with all its lines counted.
  std::map<uint32_t, XidSeen> xids;
  uint64_t xid_lines_dropped = 0;
  std::vector<VmFault> vm_faults;  ///< the first kMaxVmFaults
  uint64_t vm_fault_count = 0;
  std::vector<AcaBank> aca_banks;           ///< AMD ACA error banks, decoded
  std::optional<PythonFault> python_fault;  ///< the first Python faulthandler report
  std::optional<core::RepeatStats> repeat;  ///< from a bundle's repeat.json
  /// Vocabulary rows (kb/tables/vocab-*.yaml) whose message places the fault: their weights by
  /// verdict, and what they said (the first 8 rows).
  std::array<int, core::kVerdictCount> verdict_votes{};
  std::vector<std::pair<core::Verdict, std::string>> verdict_lines;
  ReadStats stats;
};

/// Two background threads that answer whether a piece of text has a line a prefilter set
/// matches. Started on the first questions; the destructor answers what is queued and joins.
class ChunkMatcher {
 public:
  ChunkMatcher() = default;
  ChunkMatcher(const ChunkMatcher&) = delete;
  ChunkMatcher& operator=(const ChunkMatcher&) = delete;
  ~ChunkMatcher();

  /// `text` must stay valid until the answer is ready. Answered on the calling thread when no
  /// thread can be started.
  std::future<bool> Ask(std::shared_ptr<const RE2::Set> set, std::string_view text);

  /// True when a line of `text` matches a pattern of `set` (or the set could not tell).
  static bool Matters(const RE2::Set& set, std::string_view text);

 private:
  void Run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<bool()>> queue_;
  bool stop_ = false;
  static constexpr size_t kThreads = 2;
  std::vector<std::thread> threads_;
};

class LineScan {
 public:
  /// A general signal stops counting after this many lines: a log repeating one warning a
  /// million times does not outweigh everything else, and a long log stops costing per line.
  static constexpr int kGeneralCap = 32;
  static constexpr size_t kChunkBytes = 1 << 20;
  /// Chunks handed to the worker and not yet settled: enough that it never waits for the next.
  static constexpr size_t kChunksInFlight = 2;
  /// Xid storms are normal and the decisive code often comes last, so every Xid line is
  /// counted; memory stays bounded by these: distinct codes kept, GPUs listed per code.
  static constexpr size_t kMaxXidCodes = 256;
  static constexpr size_t kMaxXidGpus = 64;
  static constexpr size_t kMaxVmFaults = 64;

  /// Compiled prefilters by their pattern list, shared by the scans of one Analyzer: a new scan
  /// starts from the same list, and compiling ~200 patterns is most of analysing a short log.
  using FilterCache = std::map<std::string, std::shared_ptr<const RE2::Set>>;

  /// Resets `matcher`. Every argument must outlive the scan.
  LineScan(Matcher& matcher, const GeneralClassifier& general, const catalog::Catalog& catalog, bool prefilter,
           FilterCache& cache);

  /// One line of `input` (without its newline).
  void Line(LineSource source, std::string_view raw, uint64_t number, std::string_view input);

  /// Whole plain-log lines of `input` in bulk (BlockSink): `text` holds `lines` lines ending in
  /// '\n', the first numbered `first`. They become a chunk of their own, split into lines only
  /// when the prefilter says a line in it can matter. False (nothing taken) when the lines must go
  /// through Line one by one: no prefilter, or colour codes to strip.
  bool Block(std::string_view text, uint64_t first, uint64_t lines, std::string_view input);

  /// Matches the buffered lines (when the prefilter says any of them can matter).
  void Flush();

  /// A conclusion reached elsewhere (a crash's classification) counts `weight` for `category`.
  void Prior(core::Category category, int weight, core::Evidence evidence);

  void Count(const ReadStats& stats);
  void SetRepeat(const core::RepeatStats& repeat) { found_.repeat = repeat; }
  void SetKeyLineIfEmpty(const std::string& line) {
    if (found_.key_line.empty()) found_.key_line = line;
  }

  /// Ends the input (flushes and closes open VM fault blocks); then read findings().
  void Finish();

  const ScanFindings& findings() const { return found_; }
  const forensics::SignatureScanner& signature() const { return signature_; }

 private:
  void Process(LineSource source, std::string_view line, uint64_t number, std::string_view input);
  void ScoreErrorCode(std::string_view line, uint64_t number, std::string_view input);
  void ScoreGeneralSignals(std::string_view line, uint64_t number, std::string_view input);
  void TallyXid(std::string_view line, uint64_t number, std::string_view input);
  void TakeVmFaults();
  void RebuildFilter();

  struct ChunkLine {
    size_t offset;
    size_t size;
    uint64_t number;
  };
  /// A full chunk handed over: its text and lines, the prefilter it is being matched against and
  /// the answer to come ("a line in it may matter").
  struct Handed {
    std::string text;
    std::vector<ChunkLine> lines;
    std::string input;
    std::shared_ptr<const RE2::Set> filter;
    std::future<bool> matters;       ///< the first half's answer
    std::future<bool> matters_rest;  ///< the second half's, when the chunk was split
    /// A block (Block): `lines` is empty until needed; its lines are numbered from `first`.
    bool block = false;
    uint64_t first = 0;
  };
  Handed& NewInFlight();
  void Enqueue(Handed& h);
  void SplitBlock(Handed& chunk);
  void Hand(bool in_background);
  void StripChunk();
  void Settle(Handed& chunk, std::optional<bool> answer);
  void TallyChunkXids(const Handed& chunk);

  Matcher& matcher_;
  const GeneralClassifier& general_;
  forensics::SignatureScanner signature_;
  VmFaultAssembler vm_;
  AcaAssembler aca_;
  PythonFaultAssembler python_;
  ScanFindings found_;
  int key_weight_ = 0;
  int headerless_scored_ = 0;  ///< VM fault blocks without a header scored as page faults
  bool signature_wanted_ = true;
  const catalog::ErrorCode* scored_code_ = nullptr;
  std::vector<VmFault> vm_done_;
  const bool prefilter_;
  std::vector<int> hits_;
  std::vector<int> general_counts_;
  std::string chunk_;
  std::vector<ChunkLine> chunk_lines_;
  std::string chunk_input_;
  std::deque<Handed> in_flight_;  ///< oldest first
  std::vector<Handed> spare_;     ///< settled chunks' buffers, for reuse
  /// Parsed Xid lines by their text from "Xid": a storm repeats a few lines with new timestamps.
  std::unordered_map<std::string, std::optional<kmsg::XidInfo>> xid_cache_;
  std::shared_ptr<const RE2::Set> filter_;
  FilterCache& filter_cache_;
  bool filter_stale_ = true;
  bool filter_broken_ = false;
  ChunkMatcher worker_;  ///< last: joined before the chunks it reads are freed
};

}  // namespace gputriage::kb
