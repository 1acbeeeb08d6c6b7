#include "kmsg/classify.h"

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <memory>
#include <vector>

namespace gputriage::kmsg {
namespace {

struct Pattern {
  LogClass log_class;
  const char* regex;
};

// Ordered by class rank (the enum order): the fallback path returns the first match. Patterns
// match events, not configuration lines; the examples are from real logs
// (tests/fixtures/kernel_log/).
constexpr Pattern kPatterns[] = {
    {LogClass::kNvidiaXid, R"(\bNVRM: Xid\b)"},
    {LogClass::kNvidiaXid, R"(\bXid \((?:PCI:)?[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,2}:)"},
    // "GPU reset begin!", "GPU reset(2) succeeded!", "GPU reset end with ret = -62"
    {LogClass::kGpuReset, R"(\bGPU reset(?:\(\d+\))? ?(?:begin|succeeded|failed|end)\b)"},
    {LogClass::kGpuReset, R"((?i:\b(?:mode[012]|baco) reset\b))"},
    {LogClass::kGpuReset, R"((?i:\basic reset (?:failed|succeeded)))"},
    {LogClass::kGpuReset, R"(VRAM is lost due to GPU reset)"},
    {LogClass::kMce, R"(^mce: \[Hardware Error\])"},
    {LogClass::kMce, R"((?i:\bmachine check(?: events logged|: | exception)))"},
    {LogClass::kMce, R"(^Memory failure: )"},
    {LogClass::kRas, R"(\[Hardware Error\])"},
    {LogClass::kRas, R"((?i:\b(?:un)?correctable (?:hardware |ecc )?errors?\b))"},
    {LogClass::kRas, R"(\bERREVENT_)"},
    {LogClass::kRas, R"((?i:\bpoison (?:consumption|creation|consumed|detected)))"},
    {LogClass::kRas, R"((?i:\becc error))"},
    {LogClass::kRas, R"(^EDAC [^\n]*\b[CU]E\b)"},
    {LogClass::kOom, R"(\binvoked oom-killer\b)"},
    {LogClass::kOom, R"(^Out of memory\b)"},
    {LogClass::kOom, R"(^oom-kill:)"},
    {LogClass::kOom, R"(^Memory cgroup out of memory\b)"},
    {LogClass::kOom, R"(^oom_reaper: reaped process)"},
    {LogClass::kAer, R"(\bPCIe Bus Error\b)"},
    {LogClass::kAer, R"(\bAER: [^\n]*(?i:error))"},
    {LogClass::kAer, R"(\baer_(?:status|layer|agent)\b)"},
    {LogClass::kAer, R"(\bDPC: (?:containment event|[^\n]*(?i:error)))"},
    {LogClass::kAer, R"(\[ ?\d+\] (?:RxErr|BadTLP|BadDLLP|Rollover|Timeout|NonFatalErr|CorrIntErr|HeaderOF|)"
                     R"(Undefined|DLP|SDES|TLP|FCP|CmpltTO|CmpltAbrt|UnxCmplt|RxOF|MalfTLP|ECRC|UnsupReq|)"
                     R"(ACSViol|UncorrIntErr|BlockedTLP|AtomicOpBlocked|TLPBlockedErr|PoisonTLPBlocked)\b)"},
    {LogClass::kIommu, R"(\bIO_PAGE_FAULT\b)"},
    {LogClass::kIommu, R"(\bAMD-Vi: [^\n]*(?i:event logged|timed out|timeout|fault|error))"},
    {LogClass::kIommu, R"(\bDMAR: [^\n]*(?i:fault))"},
    {LogClass::kIommu, R"((?i:\b(?:iommu|smmu)[^\n]*\bfault))"},
    {LogClass::kKfd, R"(^kfd kfd: )"},
    {LogClass::kKfd, R"((?i:\bkfd\b))"},
    {LogClass::kKfd, R"(kfd_|\bamdkfd\b)"},
    {LogClass::kNvidiaNvrm, R"(\bNVRM\b)"},
    {LogClass::kNvidiaNvrm, R"(^nvidia(?:-[a-z0-9]+)?[: ])"},
    {LogClass::kNvidiaNvrm, R"(\[nvidia-drm\])"},
    {LogClass::kAmdgpu, R"(^amdgpu[ :])"},
    {LogClass::kAmdgpu, R"(\bamdgpu: )"},
    {LogClass::kAmdgpu, R"(^\[drm[^\n]*\bamdgpu\b)"},
    {LogClass::kAmdgpu, R"(\b(?:GC|MM)?VM_L2_PROTECTION_FAULT_STATUS\b)"},
    {LogClass::kAmdgpu, R"(\[(?:gfx|mm)hub\d*\] (?:no-)?(?:retry )?page fault)"},
    {LogClass::kAmdgpu, R"(^UBSAN: [^\n]*/amdgpu/)"},
};

constexpr std::array<std::string_view, kLogClassCount> kClassNames = {
    "nvidia.xid", "gpu_reset", "mce", "ras", "oom", "aer", "iommu", "kfd", "nvidia.nvrm", "amdgpu",
};

RE2::Options PatternOptions() {
  RE2::Options options;
  options.set_log_errors(false);
  // Bytes, not UTF-8: messages may hold invalid UTF-8 (process names, garbage), and in UTF-8
  // mode '.' and [^\n] do not match such bytes, so a pattern would fail to reach past them.
  options.set_encoding(RE2::Options::EncodingLatin1);
  // Forty small patterns; the default 8 MiB budget is plenty but the DFA of a Set grows with
  // the input's variety, so leave headroom before the (slower) fallback kicks in.
  options.set_max_mem(32 << 20);
  return options;
}

/// The compiled patterns: one Set for the common path, single regexes for the fallback used
/// when the Set's DFA runs out of memory.
class Classifier {
 public:
  Classifier() : set_(PatternOptions(), RE2::UNANCHORED) {
    for (const Pattern& pattern : kPatterns) {
      std::string error;
      if (set_.Add(pattern.regex, &error) < 0) {
        errors_.push_back(std::string(pattern.regex) + ": " + error);
        continue;
      }
      classes_.push_back(pattern.log_class);
      single_.push_back(std::make_unique<RE2>(pattern.regex, PatternOptions()));
    }
    if (!set_.Compile()) errors_.push_back("RE2::Set::Compile failed (out of memory)");
  }

  LogClass Classify(std::string_view message) const {
    std::vector<int> hits;
    RE2::Set::ErrorInfo info{};
    if (!set_.Match(re2::StringPiece(message.data(), message.size()), &hits, &info)) {
      return info.kind == RE2::Set::kNoError ? LogClass::kNone : ClassifySlowly(message);
    }
    LogClass best = LogClass::kNone;
    for (int hit : hits) best = std::min(best, classes_[static_cast<size_t>(hit)]);
    return best;
  }

  const std::vector<std::string>& errors() const { return errors_; }

 private:
  LogClass ClassifySlowly(std::string_view message) const {
    re2::StringPiece text(message.data(), message.size());
    for (size_t i = 0; i < single_.size(); ++i) {
      if (RE2::PartialMatch(text, *single_[i])) return classes_[i];
    }
    return LogClass::kNone;
  }

  RE2::Set set_;
  std::vector<LogClass> classes_;
  std::vector<std::unique_ptr<RE2>> single_;
  std::vector<std::string> errors_;
};

const Classifier& GetClassifier() {
  static const Classifier kClassifier;
  return kClassifier;
}

const RE2& XidRegex() {
  // Groups: domain, bus, device, function?, code, pid?, name?.
  static const RE2 kXid(R"(\bXid \((?:PCI:)?([0-9A-Fa-f]{1,4}):([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2}))"
                        R"((?:\.([0-7]))?\): (\d{1,9})\b(?:, pid=([^,\n]*), name=(.*?)(?:, |\n|$))?)",
                        PatternOptions());
  return kXid;
}

std::string PadHex(re2::StringPiece digits, size_t width) {
  std::string out(width > digits.size() ? width - digits.size() : 0, '0');
  for (char c : digits) out += static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
  return out;
}

/// "719" -> 719; "'<unknown>'" and anything else that is not a number -> nullopt.
std::optional<uint64_t> ParsePid(re2::StringPiece text) {
  uint64_t pid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid, 10);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return pid;
}

/// "python3" -> "python3"; "<unknown>", "'<unknown>'" and "" -> nullopt.
std::optional<std::string> ParseProcessName(re2::StringPiece text) {
  std::string_view name(text.data(), text.size());
  if (name.size() >= 2 && name.front() == '\'' && name.back() == '\'') {
    name = name.substr(1, name.size() - 2);
  }
  if (name.empty() || name == "<unknown>") return std::nullopt;
  return std::string(name);
}

}  // namespace

std::string_view LogClassName(LogClass log_class) {
  size_t index = static_cast<size_t>(log_class);
  return index < kClassNames.size() ? kClassNames[index] : std::string_view();
}

LogClass ClassifyMessage(std::string_view message) { return GetClassifier().Classify(message); }

const std::vector<std::string>& ClassifierPatternErrors() { return GetClassifier().errors(); }

std::optional<XidInfo> ParseXid(std::string_view message) {
  re2::StringPiece domain, bus, device, function, code, pid, name;
  if (!RE2::PartialMatch(re2::StringPiece(message.data(), message.size()), XidRegex(), &domain, &bus, &device,
                         &function, &code, &pid, &name)) {
    return std::nullopt;
  }
  XidInfo xid;
  std::from_chars(code.data(), code.data() + code.size(), xid.code, 10);
  xid.pci = PadHex(domain, 4) + ":" + PadHex(bus, 2) + ":" + PadHex(device, 2) + "." +
            (function.empty() ? std::string("0") : std::string(function.data(), function.size()));
  xid.pid = ParsePid(pid);
  xid.process = ParseProcessName(name);
  return xid;
}

}  // namespace gputriage::kmsg
