#include "kb/scan.h"

#include <algorithm>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/redact.h"
#include "core/text.h"
#include "kmsg/classify.h"

namespace gputriage::kb {
namespace {

constexpr std::string_view kAsynchronous = "asynchronously reported";

// "RuntimeError: CUDA error: ...", "torch.AcceleratorError: ...", "[rank0]: RuntimeError: ...":
// the last line of a Python traceback.
bool IsPythonExceptionLine(std::string_view line) {
  static const RE2 kException(R"(^(?:\[rank\d+\]:\s*)?(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b: )");
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), kException);
}

// An evidence line: secrets redacted before it is cut (cut first, a token across the cut would
// no longer be recognised and its head would be shown).
std::string Clip(std::string_view line) {
  std::string s = core::SanitizeUtf8(core::RedactText(core::Trim(line)));
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}

// The key and fallback lines are kept raw (they are redacted once, when the analysis derives
// the signature from one), with room past the 400 bytes the signature keeps for a token that
// starts before the cut.
std::string KeyLine(std::string_view line) { return std::string(line.substr(0, kKeyLineBytes)); }

size_t Index(core::Category category) { return static_cast<size_t>(category); }

}  // namespace

LineScan::LineScan(Matcher& matcher, const GeneralClassifier& general, const catalog::Catalog& catalog, bool prefilter,
                   FilterCache& cache)
    : matcher_(matcher),
      general_(general),
      signature_(catalog.errors),
      vm_(catalog.vm_fault),
      aca_(catalog.aca),
      prefilter_(prefilter),
      general_counts_(general.size(), 0),
      filter_cache_(cache) {
  matcher_.Reset();
}

void LineScan::Line(LineSource source, std::string_view raw, uint64_t number, std::string_view input) {
  std::string_view line = raw;
  std::string stripped;
  if (line.find('\x1b') != std::string_view::npos) {
    stripped = core::StripAnsi(line);
    line = stripped;
  }
  if (source != LineSource::kUnknown || !prefilter_) {
    Flush();  // keep the order of lines from different inputs
    Process(source, line, number, input);
    return;
  }
  if (input != chunk_input_) {
    Flush();
    chunk_input_.assign(input);
  }
  chunk_lines_.push_back({chunk_.size(), line.size(), number});
  chunk_.append(line);
  chunk_.push_back('\n');
  if (chunk_.size() >= kChunkBytes) Flush();
}

void LineScan::Flush() {
  if (chunk_lines_.empty()) return;
  bool per_line = true;
  if (filter_stale_) RebuildFilter();
  if (!filter_broken_ && !vm_.open()) {  // an open fault block needs its next lines
    if (!filter_) {
      per_line = false;  // nothing left that a line could change
    } else {
      RE2::Set::ErrorInfo error;
      std::vector<int> matched;
      per_line = filter_->Match(re2::StringPiece(chunk_.data(), chunk_.size()), &matched, &error) ||
                 error.kind != RE2::Set::kNoError;
      if (per_line && error.kind == RE2::Set::kNoError && matched.size() == 1 && matched[0] == xid_filter_index_) {
        // An Xid storm: only the tally can change, so only the Xid lines are looked at.
        TallyChunkXids();
        per_line = false;
      }
    }
  }
  if (per_line) {
    for (const ChunkLine& l : chunk_lines_) {
      Process(LineSource::kUnknown, std::string_view(chunk_).substr(l.offset, l.size), l.number, chunk_input_);
    }
  }
  chunk_.clear();
  chunk_lines_.clear();
}

void LineScan::TallyChunkXids() {
  for (const ChunkLine& l : chunk_lines_) {
    TallyXid(std::string_view(chunk_).substr(l.offset, l.size), l.number, chunk_input_);
  }
}

void LineScan::Prior(core::Category category, int weight, core::Evidence evidence) {
  found_.scores[Index(category)] += weight;
  ++found_.strong[Index(category)];
  found_.evidence.insert(found_.evidence.begin(), std::move(evidence));
}

void LineScan::Count(const ReadStats& s) {
  found_.stats.bytes += s.bytes;
  found_.stats.lines += s.lines;
  found_.stats.cut_lines += s.cut_lines;
  if (found_.stats.compression.empty() || found_.stats.compression == "none") found_.stats.compression = s.compression;
}

void LineScan::Finish() {
  Flush();
  vm_.Finish(&vm_done_);
  TakeVmFaults();
  found_.aca_banks = aca_.Finish();
}

void LineScan::TakeVmFaults() {
  for (VmFault& f : vm_done_) {
    ++found_.vm_fault_count;
    if (found_.vm_faults.size() < kMaxVmFaults) {
      found_.vm_faults.push_back(std::move(f));
      if (found_.vm_faults.size() == kMaxVmFaults) filter_stale_ = true;
    }
  }
  vm_done_.clear();
}

void LineScan::Process(LineSource source, std::string_view line, uint64_t number, std::string_view input) {
  if (matcher_.Feed(source, line, number, input) > 0) filter_stale_ = true;
  if (source == LineSource::kFrames || source == LineSource::kSignal) return;
  ScoreErrorCode(line, number, input);
  if (source != LineSource::kStderr) {
    // An amdgpu VM fault block is one event: its field lines say nothing more to the classifier.
    VmFaultAssembler::LineKind kind = vm_.Line(line, number, input, &vm_done_);
    TakeVmFaults();
    if (kind == VmFaultAssembler::LineKind::kContinuation) return;
    aca_.Line(line, number, input);
  }
  TallyXid(line, number, input);
  // PyTorch/CUDA: "CUDA kernel errors might be asynchronously reported at some other API
  // call, so the stacktrace below might be incorrect."
  if (!found_.asynchronous && line.find(kAsynchronous) != std::string_view::npos) {
    found_.asynchronous = true;
    filter_stale_ = true;
  }
  ScoreGeneralSignals(line, number, input);
}

// The runtime's own error code, read through the CUDA/HIP error tables: as strong as the general
// classifier's strongest signals (the first code, and a sticky one after it).
void LineScan::ScoreErrorCode(std::string_view line, uint64_t number, std::string_view input) {
  if (!signature_wanted_ || !signature_.Line(line)) return;
  filter_stale_ = true;
  signature_wanted_ = !signature_.WantedPattern().empty();
  const catalog::ErrorCode* code = signature_.first_code();
  if (code == nullptr || code == scored_code_) return;
  scored_code_ = code;
  found_.scores[Index(code->category)] += 3;
  ++found_.strong[Index(code->category)];
  if (found_.evidence.size() < 12) {
    found_.evidence.push_back(
        {std::string(input) + ":" + std::to_string(number),
         fmt::format("{} ({} {}): {}", Clip(line), code->name, code->value, core::CategoryName(code->category))});
  }
  if (key_weight_ < 3) {
    if (found_.key_line.empty()) filter_stale_ = true;
    found_.key_line = KeyLine(line);
    key_weight_ = 3;
  }
}

void LineScan::TallyXid(std::string_view line, uint64_t number, std::string_view input) {
  if (line.find("Xid") == std::string_view::npos) return;
  std::optional<kmsg::XidInfo> xid = kmsg::ParseXid(line);
  if (!xid) return;
  auto it = found_.xids.find(xid->code);
  if (it == found_.xids.end()) {
    if (found_.xids.size() >= kMaxXidCodes) {
      ++found_.xid_lines_dropped;
      return;
    }
    it = found_.xids.emplace(xid->code, XidSeen{}).first;
  }
  XidSeen& seen = it->second;
  ++seen.count;
  if (seen.gpus.size() < kMaxXidGpus && std::find(seen.gpus.begin(), seen.gpus.end(), xid->pci) == seen.gpus.end()) {
    seen.gpus.push_back(xid->pci);
  }
  std::string where = std::string(input) + ":" + std::to_string(number);
  if (seen.first_line.empty()) seen.first_line = where;
  seen.last_line = std::move(where);
}

void LineScan::ScoreGeneralSignals(std::string_view line, uint64_t number, std::string_view input) {
  if (!general_.Match(line, &hits_)) return;
  int line_weight = 0;
  std::optional<core::Category> line_category;
  for (int index : hits_) {
    const catalog::GeneralSignal& g = general_.signal(static_cast<size_t>(index));
    if (g.weight == 0 || !g.category) {
      // No category: remember the last line that reads like an error, for the signature.
      if (hits_.size() == 1) found_.fallback_line.assign(line.substr(0, kKeyLineBytes));
      continue;
    }
    int& count = general_counts_[static_cast<size_t>(index)];
    if (count >= kGeneralCap) continue;
    if (++count == kGeneralCap) filter_stale_ = true;
    found_.scores[Index(*g.category)] += g.weight;
    if (g.verdict) {  // a vocabulary row whose message places the fault
      found_.verdict_votes[static_cast<size_t>(*g.verdict)] += g.weight;
      if (found_.verdict_lines.size() < 8 && count == 1) {
        found_.verdict_lines.push_back({*g.verdict, fmt::format("{} ({}:{}, {})", g.about, input, number, g.file)});
      }
    }
    if (g.weight > line_weight) {
      line_weight = g.weight;
      line_category = g.category;
    }
    if (g.weight >= 2) {
      ++found_.strong[Index(*g.category)];
      if (found_.evidence.size() < 12) {
        found_.evidence.push_back({std::string(input) + ":" + std::to_string(number), Clip(line)});
      }
      if (found_.key_line.empty() || g.weight > key_weight_) {
        if (found_.key_line.empty()) filter_stale_ = true;  // the fallback line is no longer wanted
        found_.key_line = KeyLine(line);
        key_weight_ = g.weight;
      }
    }
  }
  // Python: in a chain of exceptions ("During handling of the above exception, another
  // exception occurred") the last one raised is the one that counts: it becomes the key line
  // and its category breaks ties.
  if (line_weight >= 2 && line_weight >= key_weight_ && IsPythonExceptionLine(line)) {
    found_.key_line = KeyLine(line);
    key_weight_ = line_weight;
    found_.last_exception_category = line_category;
  }
}

// The prefilter: every pattern a line could still change the result with.
void LineScan::RebuildFilter() {
  filter_stale_ = false;
  filter_.reset();
  std::vector<std::string> wanted = matcher_.PendingPatterns(LineSource::kUnknown);
  for (size_t i = 0; i < general_.size(); ++i) {
    const catalog::GeneralSignal& g = general_.signal(i);
    bool want = g.weight == 0 ? found_.key_line.empty() : general_counts_[i] < kGeneralCap;
    if (want) wanted.push_back(g.pattern);
  }
  if (!found_.asynchronous) wanted.emplace_back(kAsynchronous);
  if (signature_wanted_) wanted.push_back(signature_.WantedPattern());
  xid_filter_index_ = static_cast<int>(wanted.size());
  wanted.emplace_back(R"(Xid \()");
  if (found_.vm_faults.size() < kMaxVmFaults) wanted.emplace_back(VmFaultLinePattern());
  wanted.emplace_back(AcaAssembler::LinePattern());
  if (wanted.empty()) return;
  std::string key;
  for (const std::string& pattern : wanted) key += pattern + '\n';
  if (auto cached = filter_cache_.find(key); cached != filter_cache_.end()) {
    filter_ = cached->second;
    return;
  }
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_log_errors(false);
  // A pattern matches within one line: never across the chunk's newlines, and with ^ and $
  // at each line's start and end.
  options.set_never_nl(true);
  options.set_max_mem(64 << 20);
  auto set = std::make_unique<RE2::Set>(options, RE2::UNANCHORED);
  for (const std::string& pattern : wanted) {
    bool anchored = pattern.find_first_of("^$") != std::string::npos;
    if (set->Add(anchored ? "(?m)" + pattern : pattern, nullptr) < 0) {
      filter_broken_ = true;  // match every line: slower, never wrong
      return;
    }
  }
  if (!set->Compile()) {
    filter_broken_ = true;
    return;
  }
  filter_ = std::move(set);
  if (filter_cache_.size() < 16) filter_cache_.emplace(std::move(key), filter_);
}

}  // namespace gputriage::kb
