#include "kb/matcher.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/redact.h"
#include "core/text.h"

namespace gputriage::kb {
namespace {

RE2::Options SetOptions() {
  RE2::Options options;
  // Logs are bytes, not always UTF-8: Latin-1 makes every byte a character (and is faster).
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_log_errors(false);
  options.set_max_mem(256 << 20);
  return options;
}

std::vector<int> ParseVersion(std::string_view text) {
  // "2.5.1+rocm6.2" -> 2,5,1 ; "v12.4" -> 12,4
  std::vector<int> parts;
  size_t i = 0;
  while (i < text.size() && !(text[i] >= '0' && text[i] <= '9')) ++i;
  while (i < text.size()) {
    int value = 0;
    auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (ec != std::errc()) break;
    parts.push_back(value);
    i = static_cast<size_t>(end - text.data());
    if (i >= text.size() || text[i] != '.') break;
    ++i;
  }
  return parts;
}

int Compare(const std::vector<int>& a, const std::vector<int>& b) {
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int x = i < a.size() ? a[i] : 0;
    int y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

// \A and \z: they would mean the start and end of a whole chunk of lines in the prefilter.
bool UsesTextAnchor(std::string_view pattern) {
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '\\') continue;
    if (pattern[i + 1] == 'A' || pattern[i + 1] == 'z') return true;
    ++i;  // skip the escaped character
  }
  return false;
}

}  // namespace

std::optional<bool> VersionInRange(std::string_view version, std::string_view range) {
  std::vector<int> v = ParseVersion(version);
  if (v.empty()) return std::nullopt;
  bool any = false;
  for (std::string_view part : core::Split(range, ',')) {
    part = core::Trim(part);
    if (part.empty()) continue;
    std::string_view op;
    for (std::string_view candidate : {">=", "<=", "==", "!=", ">", "<", "="}) {
      if (core::StartsWith(part, candidate)) {
        op = candidate;
        break;
      }
    }
    std::string_view bound_text = core::Trim(part.substr(op.size()));
    if (bound_text.empty() || !(bound_text[0] == 'v' || (bound_text[0] >= '0' && bound_text[0] <= '9'))) {
      return std::nullopt;
    }
    std::vector<int> bound = ParseVersion(bound_text);
    if (bound.empty()) return std::nullopt;
    int c = Compare(v, bound);
    bool ok = op == ">="   ? c >= 0
              : op == "<=" ? c <= 0
              : op == ">"  ? c > 0
              : op == "<"  ? c < 0
              : op == "!=" ? c != 0
                           : c == 0;
    if (!ok) return false;
    any = true;
  }
  if (!any) return std::nullopt;
  return true;
}

ConditionResult Evaluate(const Condition& condition, const Facts& facts, std::string* note) {
  if (!condition.component.empty()) {
    for (const auto& [name, version] : facts.versions) {
      if (name != condition.component) continue;
      auto in = VersionInRange(version, condition.versions);
      if (!in) break;
      if (note) *note = fmt::format("{} {} {} {}", name, version, *in ? "is in" : "is not in", condition.versions);
      return *in ? ConditionResult::kTrue : ConditionResult::kFalse;
    }
    if (note) *note = fmt::format("{} version unknown (wanted {})", condition.component, condition.versions);
    return ConditionResult::kUnknown;
  }
  if (!condition.gpu_arch.empty()) {
    if (facts.gpu_archs.empty()) {
      if (note) *note = "GPU architecture unknown";
      return ConditionResult::kUnknown;
    }
    for (const std::string& arch : facts.gpu_archs) {
      if (std::find(condition.gpu_arch.begin(), condition.gpu_arch.end(), arch) != condition.gpu_arch.end()) {
        if (note) *note = fmt::format("GPU architecture {} is listed", arch);
        return ConditionResult::kTrue;
      }
    }
    if (note) *note = fmt::format("GPU architecture {} is not listed", facts.gpu_archs.front());
    return ConditionResult::kFalse;
  }
  if (!condition.env.empty()) {
    if (facts.env.empty() && facts.versions.empty()) {
      if (note) *note = fmt::format("environment unknown ({})", condition.env);
      return ConditionResult::kUnknown;
    }
    for (const auto& [name, value] : facts.env) {
      if (name != condition.env) continue;
      bool ok = condition.env_value.empty() || RE2::PartialMatch(value, RE2(condition.env_value));
      if (note) *note = fmt::format("{} is set{}", name, ok ? "" : " but its value does not match");
      return ok ? ConditionResult::kTrue : ConditionResult::kFalse;
    }
    if (note) *note = fmt::format("{} is not set", condition.env);
    return ConditionResult::kFalse;
  }
  return ConditionResult::kUnknown;
}

core::Result<std::unique_ptr<Matcher>> Matcher::Build(const std::vector<KnownIssue>& issues) {
  std::unique_ptr<Matcher> m(new Matcher());
  m->issues_ = &issues;
  for (SourceSet* s : {&m->stderr_, &m->kmsg_, &m->unknown_, &m->frames_, &m->signal_}) {
    s->set = std::make_unique<RE2::Set>(SetOptions(), RE2::UNANCHORED);
  }
  for (size_t i = 0; i < issues.size(); ++i) {
    for (size_t j = 0; j < issues[i].signals.size(); ++j) {
      const Signal& signal = issues[i].signals[j];
      size_t ref = m->refs_.size();
      m->refs_.push_back({i, j});
      std::vector<SourceSet*> targets;
      switch (signal.source) {
        case Source::kStderr:
          targets = {&m->stderr_, &m->unknown_};
          break;
        case Source::kKmsg:
          targets = {&m->kmsg_, &m->unknown_};
          break;
        case Source::kAny:
          targets = {&m->stderr_, &m->kmsg_, &m->unknown_};
          break;
        case Source::kFrames:
          targets = {&m->frames_};
          break;
        case Source::kSignal:
          targets = {&m->signal_};
          break;
      }
      if (UsesTextAnchor(signal.pattern)) {
        return core::MakeError("{}:{}: pattern uses \\A or \\z; lines are matched one at a time, use ^ and $",
                               issues[i].file, signal.line);
      }
      for (SourceSet* target : targets) {
        std::string error;
        if (target->set->Add(signal.pattern, &error) < 0) {
          return core::MakeError("{}:{}: pattern does not compile: {}", issues[i].file, signal.line, error);
        }
        target->refs.push_back(ref);
      }
    }
  }
  for (SourceSet* s : {&m->stderr_, &m->kmsg_, &m->unknown_, &m->frames_, &m->signal_}) {
    if (!s->set->Compile()) return core::MakeError("knowledge base: RE2::Set does not compile (out of memory)");
  }
  m->Reset();
  return m;
}

void Matcher::Reset() {
  hits_.assign(issues_->size(), {});
  for (size_t i = 0; i < issues_->size(); ++i) hits_[i].assign((*issues_)[i].signals.size(), std::nullopt);
}

const Matcher::SourceSet& Matcher::SetFor(LineSource source) const {
  switch (source) {
    case LineSource::kStderr:
      return stderr_;
    case LineSource::kKmsg:
      return kmsg_;
    case LineSource::kUnknown:
      return unknown_;
    case LineSource::kFrames:
      return frames_;
    case LineSource::kSignal:
      return signal_;
  }
  return unknown_;
}

size_t Matcher::Feed(LineSource source, std::string_view line, size_t line_number, std::string_view input) {
  const SourceSet& s = SetFor(source);
  scratch_.clear();
  if (!s.set->Match(re2::StringPiece(line.data(), line.size()), &scratch_)) return 0;
  size_t fresh = 0;
  for (int index : scratch_) {
    const Ref& ref = refs_[s.refs[static_cast<size_t>(index)]];
    std::optional<Hit>& slot = hits_[ref.issue][ref.signal];
    if (slot) continue;
    Hit hit;
    hit.signal = ref.signal;
    hit.line_number = line_number;
    // Redacted before it is cut: cut first, a token across the cut would not be recognised.
    std::string redacted = core::RedactText(line);
    hit.line = core::SanitizeUtf8(std::string_view(redacted).substr(0, 400));
    hit.input = std::string(input);
    slot = std::move(hit);
    ++fresh;
  }
  return fresh;
}

std::vector<std::string> Matcher::PendingPatterns(LineSource source) const {
  const SourceSet& s = SetFor(source);
  std::vector<std::string> out;
  for (size_t ref_index : s.refs) {
    const Ref& ref = refs_[ref_index];
    if (hits_[ref.issue][ref.signal]) continue;
    const std::string& pattern = (*issues_)[ref.issue].signals[ref.signal].pattern;
    if (std::find(out.begin(), out.end(), pattern) == out.end()) out.push_back(pattern);
  }
  return out;
}

std::vector<IssueMatch> Matcher::Results(const Facts* facts) const {
  std::vector<IssueMatch> out;
  for (size_t i = 0; i < issues_->size(); ++i) {
    const KnownIssue& issue = (*issues_)[i];
    bool all_required = true;
    IssueMatch match;
    match.issue = &issue;
    for (size_t j = 0; j < issue.signals.size(); ++j) {
      const Signal& signal = issue.signals[j];
      if (!hits_[i][j]) {
        if (signal.required) all_required = false;
        continue;
      }
      match.hits.push_back(*hits_[i][j]);
      // Longer literal patterns are more specific; required and optional both count.
      match.score += (signal.required ? 10.0 : 6.0) + std::min<double>(signal.pattern.size(), 80) / 20.0;
    }
    if (!all_required) continue;
    bool ruled_out = false;
    for (const Condition& c : issue.conditions) {
      std::string note;
      ConditionResult r = facts ? Evaluate(c, *facts, &note) : ConditionResult::kUnknown;
      if (!facts) note = "no snapshot to check against";
      if (r == ConditionResult::kFalse) ruled_out = true;
      if (r == ConditionResult::kTrue) match.score += 5;
      match.condition_notes.push_back(fmt::format("{}: {}",
                                                  r == ConditionResult::kTrue    ? "true"
                                                  : r == ConditionResult::kFalse ? "false"
                                                                                 : "unknown",
                                                  note));
    }
    if (ruled_out) continue;
    out.push_back(std::move(match));
  }
  std::stable_sort(out.begin(), out.end(), [](const IssueMatch& a, const IssueMatch& b) { return a.score > b.score; });
  return out;
}

}  // namespace gputriage::kb
