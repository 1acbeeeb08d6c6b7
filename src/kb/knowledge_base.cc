#include "kb/knowledge_base.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/file.h"
#include "core/text.h"
#include "kmsg/classify.h"

namespace gputriage::kb {
namespace {

constexpr std::string_view kIssuesDir = "kb/issues/";
// An entry or example log is a few KB; anything near this is not one.
constexpr size_t kMaxKbFileBytes = 16u << 20;

// "x.match.log" / "x.match-2.log" -> ("x", true); "x.nomatch.log" -> ("x", false).
std::optional<std::pair<std::string, bool>> ExampleOf(std::string_view name) {
  if (!core::EndsWith(name, ".log")) return std::nullopt;
  name.remove_suffix(4);
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view kind = name.substr(dot + 1);
  std::string id(name.substr(0, dot));
  if (kind == "match" || core::StartsWith(kind, "match-")) return std::make_pair(id, true);
  if (kind == "nomatch" || core::StartsWith(kind, "nomatch-")) return std::make_pair(id, false);
  return std::nullopt;
}

std::string RequiredKey(const KnownIssue& issue) {
  std::vector<std::string> parts;
  for (const Signal& s : issue.signals) {
    if (s.required) parts.push_back(std::string(SourceName(s.source)) + ":" + s.pattern);
  }
  std::sort(parts.begin(), parts.end());
  std::string key;
  for (const std::string& p : parts) key += p + "\n";
  return key;
}

// Matches one entry alone against one example log.
bool ExampleMatches(const KnownIssue& issue, const std::string& text) {
  std::vector<KnownIssue> one = {issue};
  auto matcher = Matcher::Build(one);
  if (!matcher.ok()) return false;
  FeedText(**matcher, text, LineSource::kUnknown, "example");
  return !(*matcher)->Results(nullptr).empty();
}

}  // namespace

void FeedText(Matcher& matcher, std::string_view text, LineSource source, std::string_view input) {
  size_t number = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++number;
    matcher.Feed(source, line, number, input);
  }
}

std::vector<const KnownIssue*> SearchIssues(const KnowledgeBase& kb, std::string_view query) {
  std::string needle = core::ToLower(query);
  std::vector<const KnownIssue*> out;
  for (const KnownIssue& i : kb.issues) {
    if (!needle.empty()) {
      std::string hay = core::ToLower(i.id + " " + i.title + " " + std::string(core::CategoryName(i.category)) + " " +
                                      i.vendor + " " + i.explanation);
      for (const Signal& s : i.signals) hay += " " + core::ToLower(s.pattern);
      if (hay.find(needle) == std::string::npos) continue;
    }
    out.push_back(&i);
  }
  return out;
}

core::Result<KnowledgeBase> LoadKnowledgeBase(const std::vector<KbFile>& files) {
  KnowledgeBase kb;
  std::vector<std::string> problems;
  for (const KbFile& file : files) {
    if (!core::StartsWith(file.path, kIssuesDir)) continue;
    std::string name = file.path.substr(kIssuesDir.size());
    if (core::EndsWith(name, ".yaml")) {
      auto issue = ParseKnownIssue(file.text, file.path);
      if (issue.ok()) {
        kb.issues.push_back(std::move(*issue));
      } else {
        problems.push_back(issue.error().message);
      }
    } else if (auto example = ExampleOf(name)) {
      auto& target = example->second ? kb.match_examples : kb.nomatch_examples;
      target[example->first].push_back(file);
    }
  }
  if (!problems.empty()) {
    std::string message =
        fmt::format("the knowledge base has {} broken entr{}:", problems.size(), problems.size() == 1 ? "y" : "ies");
    for (const std::string& p : problems) message += "\n  " + p;
    return core::Error{message};
  }
  std::sort(kb.issues.begin(), kb.issues.end(), [](const KnownIssue& a, const KnownIssue& b) { return a.id < b.id; });
  GT_ASSIGN_OR_RETURN(kb.catalog, catalog::LoadCatalog(files));
  return kb;
}

core::Result<KnowledgeBase> LoadEmbeddedKnowledgeBase() { return LoadKnowledgeBase(catalog::EmbeddedSources()); }

core::Result<KnowledgeBase> LoadKnowledgeBaseFrom(const std::string& dir) {
  if (dir.empty()) return LoadEmbeddedKnowledgeBase();
  GT_ASSIGN_OR_RETURN(std::vector<KbFile> files, ReadKbDirectory(dir));
  return LoadKnowledgeBase(files);
}

core::Result<std::vector<KbFile>> ReadKbDirectory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path root(dir);
  if (!std::filesystem::is_directory(root / "issues", ec)) {
    return core::MakeError("{}: no issues/ directory (give the kb/ directory of a source tree)", dir);
  }
  std::vector<KbFile> files;
  // kb/issues/*, kb/tables/*.yaml and kb/*.yaml, named as the embedded copy names them.
  for (const char* sub : {"issues", "tables", "."}) {
    std::filesystem::path folder = root / sub;
    if (!std::filesystem::is_directory(folder, ec)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
      std::string name = entry.path().filename().string();
      if (!entry.is_regular_file()) continue;
      if (std::string_view(sub) != "issues" && !core::EndsWith(name, ".yaml")) continue;
      GT_ASSIGN_OR_RETURN(std::string text, core::ReadFile(entry.path().string(), kMaxKbFileBytes));
      std::string prefix = std::string_view(sub) == "." ? "kb/" : fmt::format("kb/{}/", sub);
      files.push_back({prefix + name, std::move(text)});
    }
    if (ec) return core::MakeError("{}: {}", folder.string(), ec.message());
  }
  std::sort(files.begin(), files.end(), [](const KbFile& a, const KbFile& b) { return a.path < b.path; });
  return files;
}

namespace {

// The kb/issues example log at `from`, when the knowledge base has it.
const KbFile* ExampleSource(const KnowledgeBase& kb, const std::string& from) {
  for (const auto* examples : {&kb.match_examples, &kb.nomatch_examples}) {
    for (const auto& [id, files] : *examples) {
      for (const KbFile& f : files) {
        if (f.path == from) return &f;
      }
    }
  }
  return nullptr;
}

// A table's example: it matches (or, for a counter-example, does not) and, when it names an
// example log of the knowledge base, that log holds it.
void LintExample(const KnowledgeBase& kb, const catalog::ExampleLine& example, const RE2& pattern, bool should_match,
                 const std::string& file, int line, const std::string& what, std::vector<Problem>& problems) {
  if (example.from.empty()) problems.push_back({file, line, what + ": an example without 'from'"});
  if (RE2::PartialMatch(example.line, pattern) != should_match) {
    problems.push_back(
        {file, line,
         fmt::format("{}: {} '{}'", what, should_match ? "does not match its example" : "matches its counter-example",
                     example.line)});
  }
  if (core::StartsWith(example.from, "kb/issues/")) {
    const KbFile* source = ExampleSource(kb, example.from);
    if (source == nullptr || source->text.find(example.line) == std::string::npos) {
      problems.push_back({file, line, fmt::format("{}: the example is not in {}", what, example.from)});
    }
  }
}

// The general signals and the kernel-log rules carry real example lines (their patterns are
// checked when the catalog loads).
void LintTables(const KnowledgeBase& kb, std::vector<Problem>& problems) {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_log_errors(false);
  const std::string general_file(catalog::kGeneralSignalsPath);
  for (const catalog::GeneralSignal& s : kb.catalog.general_signals) {
    // general-signals.yaml needs a real example per row; a vocabulary row (a status name or a
    // message read from its component's source) may have none, but one it has must match.
    bool vocabulary = !s.file.empty();
    const std::string& file = vocabulary ? s.file : general_file;
    std::string what = fmt::format("signal '{}'", s.written_pattern.substr(0, 40));
    if (s.examples.empty() && !vocabulary) problems.push_back({file, s.line, what + ": no example line"});
    RE2 pattern(s.pattern, options);
    for (const catalog::ExampleLine& e : s.examples) {
      LintExample(kb, e, pattern, true, file, s.line, what, problems);
    }
  }
  const std::string rules_file(catalog::kKernelLogRulesPath);
  for (const catalog::KernelLogRule& r : kb.catalog.kernel_log_rules) {
    if (r.examples.empty()) problems.push_back({rules_file, r.line, r.id + ": no example line"});
    RE2 pattern(r.pattern, options);
    for (const catalog::ExampleLine& e : r.examples) {
      LintExample(kb, e, pattern, true, rules_file, r.line, r.id, problems);
      // Doctor classifies the record first, then the first rule for its class takes it.
      std::string_view log_class = kmsg::LogClassName(kmsg::ClassifyMessage(e.line));
      const catalog::KernelLogRule* taken = catalog::FirstKernelLogRule(kb.catalog.kernel_log_rules, log_class, e.line);
      if (taken != &r) {
        problems.push_back({rules_file, r.line,
                            fmt::format("{}: doctor classes its example as '{}' and {} takes it: '{}'", r.id, log_class,
                                        taken ? "rule " + taken->id : "no rule", e.line)});
      }
    }
    for (const catalog::ExampleLine& e : r.counter_examples) {
      LintExample(kb, e, pattern, false, rules_file, r.line, r.id, problems);
    }
  }
}

}  // namespace

std::vector<Problem> Lint(const KnowledgeBase& kb) {
  std::vector<Problem> problems;
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_log_errors(false);
  std::map<std::string, std::string> required_keys;
  std::set<std::string> ids;
  for (const KnownIssue& issue : kb.issues) {
    if (!ids.insert(issue.id).second) problems.push_back({issue.file, 0, "duplicate id " + issue.id});
    bool compiles = true;
    for (const Signal& s : issue.signals) {
      RE2 re(s.pattern, options);
      if (!re.ok()) {
        problems.push_back({issue.file, s.line, fmt::format("pattern does not compile: {}", re.error())});
        compiles = false;
      }
      if (re.ok() && RE2::PartialMatch("", re)) {
        problems.push_back({issue.file, s.line, "pattern matches the empty line (it would match everything)"});
      }
    }
    for (const Condition& c : issue.conditions) {
      if (!c.env_value.empty() && !RE2(c.env_value, options).ok()) {
        problems.push_back({issue.file, c.line, "env_value does not compile"});
      }
    }
    for (const Reference& r : issue.references) {
      if (!core::StartsWith(r.url, "https://") && !core::StartsWith(r.url, "http://")) {
        problems.push_back({issue.file, 0, fmt::format("reference '{}' is not a URL", r.url)});
      }
    }
    std::string key = RequiredKey(issue);
    if (auto [it, inserted] = required_keys.emplace(key, issue.id); !inserted) {
      problems.push_back(
          {issue.file, 0, fmt::format("same required signals as {}: one shadows the other", it->second)});
    }
    auto matches = kb.match_examples.find(issue.id);
    auto nomatches = kb.nomatch_examples.find(issue.id);
    if (matches == kb.match_examples.end()) {
      problems.push_back({issue.file, 0, fmt::format("no example log kb/issues/{}.match.log", issue.id)});
    }
    if (nomatches == kb.nomatch_examples.end()) {
      problems.push_back({issue.file, 0, fmt::format("no counter-example kb/issues/{}.nomatch.log", issue.id)});
    }
    if (!compiles) continue;
    for (auto* examples : {matches == kb.match_examples.end() ? nullptr : &matches->second,
                           nomatches == kb.nomatch_examples.end() ? nullptr : &nomatches->second}) {
      if (!examples) continue;
      bool should_match = examples == (matches == kb.match_examples.end() ? nullptr : &matches->second);
      for (const KbFile& f : *examples) {
        if (!core::StartsWith(f.text, "# source:")) {
          problems.push_back({f.path, 1, "an example log must start with '# source: <where it was copied from>'"});
        }
        bool matched = ExampleMatches(issue, f.text);
        if (matched != should_match) {
          problems.push_back({f.path, 0,
                              should_match ? fmt::format("{} does not match its example", issue.id)
                                           : fmt::format("{} matches its counter-example", issue.id)});
        }
      }
    }
  }
  LintTables(kb, problems);
  return problems;
}

}  // namespace gputriage::kb
