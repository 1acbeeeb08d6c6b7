#include "catalog/general_signals.h"

#include <fmt/format.h>

#include "catalog/yaml_util.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace gputriage::catalog {

std::vector<ExampleLine> ExampleLines(const YAML::Node& node, const char* key) {
  std::vector<ExampleLine> out;
  if (!node.IsMap() || !node[key] || !node[key].IsSequence()) return out;
  for (const YAML::Node& e : node[key]) {
    ExampleLine example{yaml::Scalar(e, "from"), yaml::Scalar(e, "line")};
    if (!example.line.empty()) out.push_back(std::move(example));
  }
  return out;
}

namespace {

// The Xid codes an entry's `xid` names: {class: <verdict>} or {codes: [...]}.
core::Result<std::vector<int>> XidCodes(const YAML::Node& node, const std::string& where, const XidTable& table) {
  std::vector<int> codes;
  if (!node) return codes;
  if (!node.IsMap()) return core::MakeError("{}: 'xid' must be a mapping", where);
  if (std::string klass = yaml::Scalar(node, "class"); !klass.empty()) {
    std::optional<core::Verdict> verdict = core::ParseVerdict(klass);
    if (!verdict) return core::MakeError("{}: xid class '{}' is not a verdict", where, klass);
    for (const auto& [code, entry] : table) {
      if (entry.verdict == *verdict) codes.push_back(code);
    }
  }
  if (const YAML::Node list = node["codes"]; list && list.IsSequence()) {
    for (const YAML::Node& c : list) {
      try {
        codes.push_back(c.as<int>());
      } catch (const YAML::Exception&) {
        return core::MakeError("{}: xid codes must be integers", where);
      }
    }
  }
  if (codes.empty()) return core::MakeError("{}: 'xid' names no Xid code", where);
  return codes;
}

}  // namespace

core::Result<std::vector<GeneralSignal>> ParseGeneralSignals(std::string_view text, std::string_view source,
                                                             const XidTable& xid) {
  GT_ASSIGN_OR_RETURN(YAML::Node doc, yaml::LoadDocument(text, source, "gputriage.general-signals/1"));
  GT_ASSIGN_OR_RETURN(YAML::Node entries, yaml::List(doc, "entries", source));
  std::vector<GeneralSignal> signals;
  for (const YAML::Node& node : entries) {
    std::string where = yaml::Where(source, node);
    GeneralSignal s;
    s.line = node.Mark().line + 1;
    std::optional<int64_t> weight = yaml::Integer(node, "weight");
    if (!weight || *weight < 0 || *weight > 3) return core::MakeError("{}: weight must be 0, 1, 2 or 3", where);
    s.weight = static_cast<int>(*weight);
    std::string category = yaml::Scalar(node, "category");
    if (s.weight > 0) {
      s.category = core::ParseCategory(category);
      if (!s.category) return core::MakeError("{}: category '{}' is not a category", where, category);
    } else if (category != "none") {
      return core::MakeError("{}: a weight-0 signal has category none", where);
    }
    s.written_pattern = yaml::Scalar(node, "pattern");
    if (s.written_pattern.empty()) return core::MakeError("{}: no pattern", where);
    GT_ASSIGN_OR_RETURN(s.xid_codes, XidCodes(node["xid"], where, xid));
    s.pattern = s.written_pattern;
    if (!s.xid_codes.empty()) {
      std::string codes;
      for (int code : s.xid_codes) codes += fmt::format("{}{}", codes.empty() ? "" : "|", code);
      // The NVRM line: "NVRM: Xid (PCI:0000:3b:00): 79, pid=...".
      s.pattern += fmt::format(R"(|Xid \(PCI:[^)]*\): (?:{})\b)", codes);
    }
    if (auto compiled = yaml::CheckPattern(s.pattern, where); !compiled.ok()) return compiled.error();
    s.about = yaml::Scalar(node, "about");
    s.examples = ExampleLines(node, "examples");
    signals.push_back(std::move(s));
  }
  return signals;
}

namespace {

constexpr std::array<std::string_view, 10> kVocabularyKeys = {"component", "name",    "text",   "pattern", "meaning",
                                                              "category",  "verdict", "weight", "source",  "line"};

// A symbolic name ("hipErrorNoDevice", "CUDNN_STATUS_BAD_PARAM"): letters and underscores with a
// capital or an underscore inside.
bool SymbolicName(std::string_view text) {
  bool inner = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    if (i > 0 && (std::isupper(static_cast<unsigned char>(c)) || c == '_')) inner = true;
  }
  return inner && text.size() >= 5;
}

}  // namespace

core::Result<std::vector<GeneralSignal>> ParseVocabulary(std::string_view text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node doc, yaml::LoadDocument(text, source, "gputriage.vocabulary/1"));
  const YAML::Node sources = doc["sources"];
  if (!sources || !sources.IsMap() || sources.size() == 0) {
    return core::MakeError("{}: a vocabulary table lists its sources (a 'sources' mapping)", source);
  }
  GT_ASSIGN_OR_RETURN(YAML::Node entries, yaml::List(doc, "entries", source));
  std::vector<GeneralSignal> signals;
  for (const YAML::Node& node : entries) {
    std::string where = yaml::Where(source, node);
    if (!node.IsMap()) return core::MakeError("{}: a row is a mapping", where);
    for (const auto& item : node) {
      std::string key = item.first.as<std::string>("");
      if (std::find(kVocabularyKeys.begin(), kVocabularyKeys.end(), key) == kVocabularyKeys.end()) {
        return core::MakeError("{}: unknown key '{}'", where, key);
      }
    }
    GeneralSignal s;
    s.line = node.Mark().line + 1;
    s.file = std::string(source);
    s.component = yaml::Scalar(node, "component");
    if (s.component.empty()) return core::MakeError("{}: no component", where);
    s.name = yaml::Scalar(node, "name");
    std::string literal = yaml::Scalar(node, "text");
    s.written_pattern = yaml::Scalar(node, "pattern");
    if (literal.empty() == s.written_pattern.empty()) {
      return core::MakeError("{}: a row has either 'text' or 'pattern'", where);
    }
    if (!literal.empty()) {
      if (literal.size() < 8 && !SymbolicName(literal)) {
        return core::MakeError("{}: text '{}' is too short to mean anything on its own", where, literal);
      }
      s.written_pattern = literal;
      s.pattern = RE2::QuoteMeta(literal);
    } else {
      s.pattern = s.written_pattern;
    }
    if (auto compiled = yaml::CheckPattern(s.pattern, where); !compiled.ok()) return compiled.error();
    std::optional<int64_t> weight = yaml::Integer(node, "weight");
    if (!weight || *weight < 1 || *weight > 3) return core::MakeError("{}: weight must be 1, 2 or 3", where);
    s.weight = static_cast<int>(*weight);
    std::string category = yaml::Scalar(node, "category");
    s.category = core::ParseCategory(category);
    if (!s.category) return core::MakeError("{}: category '{}' is not a category", where, category);
    std::string verdict = yaml::Scalar(node, "verdict");
    std::optional<core::Verdict> parsed = core::ParseVerdict(verdict);
    if (!parsed) return core::MakeError("{}: verdict '{}' is not a verdict", where, verdict);
    if (*parsed != core::Verdict::kUnknown) s.verdict = parsed;
    std::string key = yaml::Scalar(node, "source");
    if (key.empty() || !sources[key]) return core::MakeError("{}: source '{}' is not in 'sources'", where, key);
    s.source = key + ": " + sources[key].as<std::string>("");
    std::string meaning = yaml::Scalar(node, "meaning");
    if (meaning.empty()) return core::MakeError("{}: no meaning", where);
    s.about = s.component + (s.name.empty() ? "" : " " + s.name) + ": " + meaning;
    if (std::string line = yaml::Scalar(node, "line"); !line.empty()) s.examples.push_back({std::string(source), line});
    signals.push_back(std::move(s));
  }
  return signals;
}

}  // namespace gputriage::catalog
