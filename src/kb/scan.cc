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
  if (source != LineSource::kUnknown || !prefilter_) {
    Flush();  // keep the order of lines from different inputs
    std::string stripped;
    if (raw.find('\x1b') != std::string_view::npos) {
      stripped = core::StripAnsi(raw);
      raw = stripped;
    }
    Process(source, raw, number, input);
    return;
  }
  if (input != chunk_input_) {
    Flush();
    chunk_input_.assign(input);
  }
  // Raw here: colour codes are stripped per chunk (StripChunk), one search instead of one a line.
  chunk_lines_.push_back({chunk_.size(), raw.size(), number});
  chunk_.append(raw);
  chunk_.push_back('\n');
  if (chunk_.size() >= kChunkBytes) Hand(true);
}

// ANSI escape sequences out of the gathered chunk's lines (terminal colours in captured logs).
void LineScan::StripChunk() {
  if (chunk_.find('\x1b') == std::string::npos) return;
  std::string text;
  std::vector<ChunkLine> lines;
  text.reserve(chunk_.size());
  lines.reserve(chunk_lines_.size());
  for (const ChunkLine& l : chunk_lines_) {
    std::string_view line = std::string_view(chunk_).substr(l.offset, l.size);
    std::string stripped = line.find('\x1b') != std::string_view::npos ? core::StripAnsi(line) : std::string(line);
    lines.push_back({text.size(), stripped.size(), l.number});
    text += stripped;
    text.push_back('\n');
  }
  chunk_.swap(text);
  chunk_lines_.swap(lines);
}

void LineScan::Flush() { Hand(false); }

bool ChunkMatcher::Matters(const RE2::Set& set, std::string_view text) {
  // Only whether anything matches: the DFA stops at the first match and, on a chunk with none,
  // runs without collecting matches.
  RE2::Set::ErrorInfo error;
  return set.Match(re2::StringPiece(text.data(), text.size()), nullptr, &error) || error.kind != RE2::Set::kNoError;
}

std::future<bool> ChunkMatcher::Ask(std::shared_ptr<const RE2::Set> set, std::string_view text) {
  std::packaged_task<bool()> task([set = std::move(set), text] { return Matters(*set, text); });
  std::future<bool> answer = task.get_future();
  try {
    std::lock_guard lock(mutex_);
    if (threads_.size() < kThreads) threads_.emplace_back([this] { Run(); });
    queue_.push_back(std::move(task));
  } catch (const std::system_error&) {
    if (!threads_.empty()) {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));  // the threads already started answer it
      wake_.notify_one();
      return answer;
    }
    task();  // no thread to be had: answered here
    return answer;
  }
  wake_.notify_one();
  return answer;
}

void ChunkMatcher::Run() {
  while (true) {
    std::packaged_task<bool()> task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

ChunkMatcher::~ChunkMatcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

// The chunk being gathered is handed over, matched against the current prefilter on the worker
// threads when `in_background`; the oldest chunks in flight are settled until at most
// kChunksInFlight remain (none when not in the background), so the workers always have the next
// chunk while this thread reads and settles.
void LineScan::Hand(bool in_background) {
  if (!chunk_lines_.empty()) {
    StripChunk();
    Handed& h = NewInFlight();
    std::swap(h.text, chunk_);
    std::swap(h.lines, chunk_lines_);
    chunk_.clear();
    chunk_lines_.clear();
    h.input = chunk_input_;
    h.block = false;
    if (in_background) Enqueue(h);
  }
  while (in_flight_.size() > (in_background ? kChunksInFlight : 0)) {
    Handed& oldest = in_flight_.front();
    std::optional<bool> answer;
    if (oldest.matters.valid()) answer = oldest.matters.get();
    if (oldest.matters_rest.valid()) answer = oldest.matters_rest.get() || answer.value_or(true);
    Settle(oldest, answer);
    if (spare_.size() < kChunksInFlight) {
      oldest.text.clear();
      oldest.lines.clear();
      oldest.filter.reset();
      spare_.push_back(std::move(oldest));
    }
    in_flight_.pop_front();
  }
}

// A new chunk at the end of those in flight, with a settled chunk's buffers when there is one.
LineScan::Handed& LineScan::NewInFlight() {
  Handed& h = in_flight_.emplace_back();
  if (!spare_.empty()) {
    std::swap(h.text, spare_.back().text);
    std::swap(h.lines, spare_.back().lines);
    spare_.pop_back();
  }
  return h;
}

// Asks the workers about a chunk just put in flight, against the current prefilter.
void LineScan::Enqueue(Handed& h) {
  if (filter_stale_) RebuildFilter();
  h.filter = filter_broken_ ? nullptr : filter_;
  if (!h.filter) return;
  // Two halves, split at a line's end, answered in parallel (patterns never span lines).
  std::string_view text(h.text);
  size_t half = text.find('\n', text.size() / 2);
  if (half == std::string_view::npos || half + 1 >= text.size()) {
    h.matters = worker_.Ask(h.filter, text);
    return;
  }
  h.matters = worker_.Ask(h.filter, text.substr(0, half + 1));
  h.matters_rest = worker_.Ask(h.filter, text.substr(half + 1));
}

bool LineScan::Block(std::string_view text, uint64_t first, uint64_t lines, std::string_view input) {
  if (!prefilter_ || lines == 0 || text.find('\x1b') != std::string_view::npos) return false;
  Hand(true);  // the lines gathered before go first
  chunk_input_.assign(input);
  Handed& h = NewInFlight();
  h.text.assign(text);
  h.lines.clear();
  h.input = chunk_input_;
  h.block = true;
  h.first = first;
  Enqueue(h);
  Hand(true);  // settles the oldest beyond the ones kept in flight
  return true;
}

// A block's lines, found when they are needed.
void LineScan::SplitBlock(Handed& chunk) {
  if (!chunk.block || !chunk.lines.empty()) return;
  std::string_view text(chunk.text);
  uint64_t number = chunk.first;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    chunk.lines.push_back({at, nl - at, number++});
    at = nl + 1;
  }
}

// Chunks are settled in order: a chunk's lines are matched one by one when the prefilter, as it
// stands after the chunks before it, says any of them can change the result. An answer given
// against an older prefilter is asked again.
void LineScan::Settle(Handed& chunk, std::optional<bool> answer) {
  if (filter_stale_) RebuildFilter();
  bool per_line = true;
  if (!filter_broken_ && !vm_.open() && !python_.open()) {  // an open block needs its next lines
    if (!filter_) {
      per_line = false;  // nothing left that a line could change
    } else if (answer && chunk.filter == filter_) {
      per_line = *answer;
    } else {
      per_line = ChunkMatcher::Matters(*filter_, chunk.text);
    }
    // Xid lines are only tallied (every one counts): they are found with a plain search rather
    // than in the set, so an Xid storm keeps the fast path.
    if (!per_line) TallyChunkXids(chunk);
  }
  if (per_line) {
    SplitBlock(chunk);
    for (const ChunkLine& l : chunk.lines) {
      Process(LineSource::kUnknown, std::string_view(chunk.text).substr(l.offset, l.size), l.number, chunk.input);
    }
  }
}

void LineScan::TallyChunkXids(const Handed& chunk) {
  std::string_view text(chunk.text);
  if (chunk.block && chunk.lines.empty()) {
    // A block has no line table: each Xid line's number is counted from the last one's.
    uint64_t number = chunk.first;
    size_t counted = 0;  // newlines before this offset are in `number`
    for (size_t at = text.find("Xid"); at != std::string_view::npos;) {
      size_t start = text.rfind('\n', at);
      start = start == std::string_view::npos ? 0 : start + 1;
      size_t end = text.find('\n', at);
      if (end == std::string_view::npos) end = text.size();
      number += CountNewlines(text.substr(counted, start - counted));
      counted = start;
      TallyXid(text.substr(start, end - start), number, chunk.input);
      at = text.find("Xid", end);
    }
    return;
  }
  auto line = chunk.lines.begin();
  for (size_t at = text.find("Xid"); at != std::string_view::npos;) {
    line = std::upper_bound(line, chunk.lines.end(), at,
                            [](size_t offset, const ChunkLine& l) { return offset < l.offset; }) -
           1;
    TallyXid(text.substr(line->offset, line->size), line->number, chunk.input);
    at = text.find("Xid", line->offset + line->size);  // from the next line
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
  found_.python_fault = python_.fault();
}

void LineScan::TakeVmFaults() {
  for (VmFault& f : vm_done_) {
    ++found_.vm_fault_count;
    // A block whose header line was not kept (a report that pasted only the field lines) is
    // still a page fault: its field lines are continuation lines the classifier never sees.
    if (f.hub.empty() && headerless_scored_ < kGeneralCap) {
      ++headerless_scored_;
      found_.scores[Index(core::Category::kPageFault)] += 3;
      ++found_.strong[Index(core::Category::kPageFault)];
      if (found_.evidence.size() < 12) {
        found_.evidence.push_back({f.input + ":" + std::to_string(f.line_number), f.Describe()});
      }
    }
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
  // Python's faulthandler report (stderr): the first one is kept; its start leaves the prefilter.
  if ((source != LineSource::kKmsg && !python_.done()) || python_.open()) {
    bool was_done = python_.done();
    python_.Line(line, number, input);
    if (!was_done && python_.done()) filter_stale_ = true;
  }
  ScoreErrorCode(line, number, input);
  if (source != LineSource::kStderr) {
    // An amdgpu VM fault block is one event: its field lines say nothing more to the classifier.
    VmFaultAssembler::LineKind kind = vm_.Line(line, number, input, &vm_done_);
    TakeVmFaults();
    if (kind == VmFaultAssembler::LineKind::kContinuation) return;
    if (aca_.Line(line, number, input) && aca_.sealed()) filter_stale_ = true;
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
  size_t at = line.find("Xid");
  if (at == std::string_view::npos) return;
  // The parse depends only on the line from the character before "Xid" (the pattern starts
  // with \bXid): a storm repeats a few lines under new timestamps. Long lines are not cached.
  std::optional<kmsg::XidInfo> parsed;
  const std::optional<kmsg::XidInfo>* xid = &parsed;
  if (line.size() - at > 512) {
    parsed = kmsg::ParseXid(line);
  } else {
    std::string key = (at > 0 ? line[at - 1] : '\n') + std::string(line.substr(at));
    auto cached = xid_cache_.find(key);
    if (cached == xid_cache_.end()) {
      if (xid_cache_.size() >= 4096) xid_cache_.clear();
      cached = xid_cache_.emplace(std::move(key), kmsg::ParseXid(line)).first;
    }
    xid = &cached->second;
  }
  if (!*xid) return;
  const kmsg::XidInfo& x = **xid;
  auto it = found_.xids.find(x.code);
  if (it == found_.xids.end()) {
    if (found_.xids.size() >= kMaxXidCodes) {
      ++found_.xid_lines_dropped;
      return;
    }
    it = found_.xids.emplace(x.code, XidSeen{}).first;
  }
  XidSeen& seen = it->second;
  ++seen.count;
  if (seen.gpus.size() < kMaxXidGpus && std::find(seen.gpus.begin(), seen.gpus.end(), x.pci) == seen.gpus.end()) {
    seen.gpus.push_back(x.pci);
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
  if (found_.vm_faults.size() < kMaxVmFaults) wanted.emplace_back(VmFaultLinePattern());
  if (!aca_.sealed()) wanted.emplace_back(AcaAssembler::LinePattern());
  if (!python_.done()) wanted.emplace_back(PythonFaultAssembler::StartPattern());
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
