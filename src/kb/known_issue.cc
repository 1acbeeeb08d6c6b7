#include "kb/known_issue.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include <fmt/format.h>
#include <re2/re2.h>

namespace gputriage::kb {
namespace {

constexpr std::string_view kSchema = "gputriage.issue/1";

int LineOf(const YAML::Node& node) { return node.Mark().is_null() ? 0 : node.Mark().line + 1; }

core::Error At(std::string_view file, const YAML::Node& node, std::string message) {
  return core::MakeError("{}:{}: {}", file, LineOf(node), message);
}

// The scalar at node[key]; an error when it is missing and `required`, or not a scalar.
core::Result<std::string> Text(std::string_view file, const YAML::Node& node, const char* key, bool required) {
  YAML::Node v = node[key];
  if (!v || v.IsNull()) {
    if (required) return At(file, node, fmt::format("missing '{}'", key));
    return std::string();
  }
  if (!v.IsScalar()) return At(file, v, fmt::format("'{}' must be a string", key));
  std::string s = v.as<std::string>();
  if (required && s.empty()) return At(file, v, fmt::format("'{}' is empty", key));
  return s;
}

bool OneOf(const std::string& value, const std::vector<std::string>& allowed) {
  for (const std::string& a : allowed) {
    if (a == value) return true;
  }
  return false;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : "|") + s;
  return out;
}

core::Result<std::vector<Signal>> ParseSignals(std::string_view file, const YAML::Node& root) {
  YAML::Node list = root["signals"];
  if (!list || !list.IsSequence() || list.size() == 0) {
    return At(file, root, "'signals' must be a non-empty list");
  }
  std::vector<Signal> signals;
  for (const YAML::Node& node : list) {
    if (!node.IsMap()) return At(file, node, "each signal must be a mapping {source, pattern}");
    Signal s;
    GT_ASSIGN_OR_RETURN(std::string source, Text(file, node, "source", true));
    auto parsed = ParseSource(source);
    if (!parsed) {
      return At(file, node["source"], fmt::format("unknown source '{}' (stderr|kmsg|frames|signal|any)", source));
    }
    s.source = *parsed;
    GT_ASSIGN_OR_RETURN(s.pattern, Text(file, node, "pattern", true));
    s.line = LineOf(node["pattern"]);
    if (YAML::Node req = node["required"]; req) {
      try {
        s.required = req.as<bool>();
      } catch (const YAML::Exception&) {
        return At(file, req, "'required' must be true or false");
      }
    }
    signals.push_back(std::move(s));
  }
  bool any_required = false;
  for (const Signal& s : signals) any_required = any_required || s.required;
  if (!any_required) return At(file, list, "at least one signal must be required");
  return signals;
}

core::Result<std::vector<Condition>> ParseConditions(std::string_view file, const YAML::Node& root) {
  std::vector<Condition> out;
  YAML::Node list = root["conditions"];
  if (!list || list.IsNull()) return out;
  if (!list.IsSequence()) return At(file, list, "'conditions' must be a list");
  for (const YAML::Node& node : list) {
    if (!node.IsMap()) return At(file, node, "each condition must be a mapping");
    Condition c;
    c.line = LineOf(node);
    GT_ASSIGN_OR_RETURN(c.component, Text(file, node, "component", false));
    GT_ASSIGN_OR_RETURN(c.versions, Text(file, node, "versions", false));
    GT_ASSIGN_OR_RETURN(c.env, Text(file, node, "env", false));
    GT_ASSIGN_OR_RETURN(c.env_value, Text(file, node, "env_value", false));
    if (YAML::Node arch = node["gpu_arch"]; arch) {
      if (arch.IsScalar()) {
        c.gpu_arch.push_back(arch.as<std::string>());
      } else if (arch.IsSequence()) {
        for (const YAML::Node& a : arch) {
          if (!a.IsScalar()) return At(file, a, "gpu_arch entries must be strings");
          c.gpu_arch.push_back(a.as<std::string>());
        }
      } else {
        return At(file, arch, "'gpu_arch' must be a string or a list");
      }
    }
    bool component = !c.component.empty();
    if (component != !c.versions.empty()) {
      return At(file, node, "'component' and 'versions' go together");
    }
    if (!component && c.gpu_arch.empty() && c.env.empty()) {
      return At(file, node, "a condition needs component+versions, gpu_arch or env");
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::string_view SourceName(Source source) {
  switch (source) {
    case Source::kStderr:
      return "stderr";
    case Source::kKmsg:
      return "kmsg";
    case Source::kFrames:
      return "frames";
    case Source::kSignal:
      return "signal";
    case Source::kAny:
      return "any";
  }
  return "any";
}

std::optional<Source> ParseSource(std::string_view name) {
  for (Source s : {Source::kStderr, Source::kKmsg, Source::kFrames, Source::kSignal, Source::kAny}) {
    if (SourceName(s) == name) return s;
  }
  return std::nullopt;
}

std::string Problem::Text() const {
  return line > 0 ? fmt::format("{}:{}: {}", file, line, message) : fmt::format("{}: {}", file, message);
}

core::Result<KnownIssue> ParseKnownIssue(std::string_view yaml, std::string_view file) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return core::MakeError("{}:{}: invalid YAML: {}", file, e.mark.is_null() ? 0 : e.mark.line + 1, e.msg);
  }
  if (!root.IsMap()) return core::MakeError("{}:1: expected a mapping (a known-issue entry)", file);
  KnownIssue issue;
  issue.file = std::string(file);
  try {
    GT_ASSIGN_OR_RETURN(std::string schema, Text(file, root, "schema", true));
    if (schema != kSchema) {
      return At(file, root["schema"], fmt::format("schema '{}' is not {}", schema, kSchema));
    }
    GT_ASSIGN_OR_RETURN(issue.id, Text(file, root, "id", true));
    static const RE2 kId("[a-z0-9][a-z0-9-]*");
    if (!RE2::FullMatch(issue.id, kId)) {
      return At(file, root["id"], fmt::format("id '{}' must be lower-case letters, digits and '-'", issue.id));
    }
    std::string stem = std::filesystem::path(std::string(file)).stem().string();
    if (stem != issue.id) {
      return At(file, root["id"], fmt::format("id '{}' differs from the file name '{}'", issue.id, stem));
    }
    GT_ASSIGN_OR_RETURN(issue.title, Text(file, root, "title", true));
    GT_ASSIGN_OR_RETURN(issue.vendor, Text(file, root, "vendor", true));
    if (!OneOf(issue.vendor, {"amd", "nvidia", "any"})) {
      return At(file, root["vendor"], fmt::format("vendor '{}' is not amd|nvidia|any", issue.vendor));
    }
    GT_ASSIGN_OR_RETURN(std::string category, Text(file, root, "category", true));
    std::optional<core::Category> parsed_category = core::ParseCategory(category);
    if (!parsed_category) {
      std::vector<std::string> names;
      for (core::Category c : core::AllCategories()) names.emplace_back(core::CategoryName(c));
      return At(file, root["category"], fmt::format("category '{}' is not one of {}", category, Join(names)));
    }
    issue.category = *parsed_category;
    GT_ASSIGN_OR_RETURN(std::string verdict, Text(file, root, "verdict", true));
    std::optional<core::Verdict> parsed_verdict = core::ParseVerdict(verdict);
    if (!parsed_verdict) {
      std::vector<std::string> names;
      for (core::Verdict v : core::AllVerdicts()) names.emplace_back(core::VerdictName(v));
      return At(file, root["verdict"], fmt::format("verdict '{}' is not one of {}", verdict, Join(names)));
    }
    issue.verdict = *parsed_verdict;
    GT_ASSIGN_OR_RETURN(issue.signals, ParseSignals(file, root));
    GT_ASSIGN_OR_RETURN(issue.conditions, ParseConditions(file, root));
    GT_ASSIGN_OR_RETURN(issue.explanation, Text(file, root, "explanation", true));
    YAML::Node fixes = root["fixes"];
    if (!fixes || !fixes.IsSequence() || fixes.size() == 0) return At(file, root, "'fixes' must be a non-empty list");
    for (const YAML::Node& node : fixes) {
      if (!node.IsMap()) return At(file, node, "each fix must be a mapping {kind, action, cost}");
      Fix fix;
      GT_ASSIGN_OR_RETURN(fix.kind, Text(file, node, "kind", true));
      GT_ASSIGN_OR_RETURN(fix.action, Text(file, node, "action", true));
      GT_ASSIGN_OR_RETURN(fix.cost, Text(file, node, "cost", true));
      issue.fixes.push_back(std::move(fix));
    }
    YAML::Node refs = root["references"];
    if (!refs || !refs.IsSequence() || refs.size() == 0) {
      return At(file, root, "'references' must be a non-empty list");
    }
    for (const YAML::Node& node : refs) {
      Reference ref;
      if (node.IsScalar()) {
        ref.url = node.as<std::string>();
      } else if (node.IsMap()) {
        GT_ASSIGN_OR_RETURN(ref.url, Text(file, node, "url", true));
        GT_ASSIGN_OR_RETURN(ref.note, Text(file, node, "note", false));
      } else {
        return At(file, node, "each reference must be a URL or {url, note}");
      }
      issue.references.push_back(std::move(ref));
    }
  } catch (const YAML::Exception& e) {
    return core::MakeError("{}:{}: {}", file, e.mark.is_null() ? 0 : e.mark.line + 1, e.msg);
  }
  return issue;
}

}  // namespace gputriage::kb
