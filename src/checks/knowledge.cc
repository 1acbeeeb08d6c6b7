#include "checks/knowledge.h"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include "knowledge_data/embedded.h"

namespace gputriage::checks {

namespace {

constexpr std::string_view kXidPath = "kb/tables/nvidia-xid.yaml";
constexpr std::string_view kEnvPath = "kb/env-vars.yaml";

std::string Scalar(const YAML::Node& node, const char* key) {
  const YAML::Node v = node[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

std::vector<std::string> StringList(const YAML::Node& node, const char* key) {
  std::vector<std::string> out;
  const YAML::Node v = node[key];
  if (!v || !v.IsSequence()) return out;
  for (const YAML::Node& item : v) {
    if (item.IsScalar()) out.push_back(item.as<std::string>());
  }
  return out;
}

core::Result<YAML::Node> LoadEntries(std::string_view yaml, std::string_view source,
                                     std::string_view schema) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return core::MakeError("{}: invalid YAML: {}", source, e.what());
  }
  if (!root.IsMap() || Scalar(root, "schema") != schema) {
    return core::MakeError("{}: expected a mapping with schema: {}", source, schema);
  }
  YAML::Node entries = root["entries"];
  if (!entries || !entries.IsSequence()) {
    return core::MakeError("{}: missing 'entries' list", source);
  }
  return entries;
}

core::Result<core::Severity> SeverityOf(const YAML::Node& entry, std::string_view source,
                                        const std::string& what) {
  auto severity = core::ParseSeverity(Scalar(entry, "severity"));
  if (!severity) {
    return core::MakeError("{}: {}: severity '{}' is not one of info|warning|error|critical",
                           source, what, Scalar(entry, "severity"));
  }
  return *severity;
}

}  // namespace

core::Result<std::map<int, XidEntry>> ParseXidTable(std::string_view yaml, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node entries, LoadEntries(yaml, source, "gputriage.xid/1"));
  std::map<int, XidEntry> table;
  size_t index = 0;
  for (const YAML::Node& node : entries) {
    std::string what = fmt::format("entry {}", index++);
    XidEntry entry;
    try {
      entry.code = node["code"].as<int>();
    } catch (const YAML::Exception&) {
      return core::MakeError("{}: {}: 'code' must be an integer", source, what);
    }
    what = fmt::format("Xid {}", entry.code);
    entry.name = Scalar(node, "name");
    GT_ASSIGN_OR_RETURN(entry.severity, SeverityOf(node, source, what));
    entry.verdict = Scalar(node, "verdict");
    entry.meaning = Scalar(node, "meaning");
    entry.action = Scalar(node, "action");
    entry.references = StringList(node, "references");
    if (entry.name.empty() || entry.references.empty()) {
      return core::MakeError("{}: {}: needs a name and at least one reference", source, what);
    }
    if (!table.emplace(entry.code, entry).second) {
      return core::MakeError("{}: {} is listed twice", source, what);
    }
  }
  return table;
}

core::Result<std::vector<EnvVarRule>> ParseEnvVarRules(std::string_view yaml,
                                                      std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node entries, LoadEntries(yaml, source, "gputriage.envvars/1"));
  std::vector<EnvVarRule> rules;
  for (const YAML::Node& node : entries) {
    EnvVarRule rule;
    rule.name = Scalar(node, "name");
    if (rule.name.empty()) return core::MakeError("{}: an entry has no name", source);
    rule.vendor = Scalar(node, "vendor");
    rule.match = Scalar(node, "match");
    if (rule.match.empty()) rule.match = "any";
    GT_ASSIGN_OR_RETURN(rule.severity, SeverityOf(node, source, rule.name));
    rule.title = Scalar(node, "title");
    rule.effect = Scalar(node, "effect");
    rule.risk = Scalar(node, "risk");
    rule.fix = Scalar(node, "fix");
    rule.references = StringList(node, "references");
    if (rule.title.empty() || rule.references.empty()) {
      return core::MakeError("{}: {}: needs a title and at least one reference", source, rule.name);
    }
    if (rule.match != "any") {
      RE2 re(rule.match, RE2::Quiet);
      if (!re.ok()) {
        return core::MakeError("{}: {}: match pattern '{}' does not compile: {}", source,
                               rule.name, rule.match, re.error());
      }
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

core::Result<Knowledge> LoadBuiltinKnowledge() {
  Knowledge knowledge;
  const kb_data::EmbeddedFile* xid = kb_data::FindEmbeddedFile(kXidPath);
  if (xid == nullptr) return core::MakeError("{} is not embedded in this build", kXidPath);
  GT_ASSIGN_OR_RETURN(knowledge.xid, ParseXidTable(xid->content, xid->path));
  const kb_data::EmbeddedFile* env = kb_data::FindEmbeddedFile(kEnvPath);
  if (env == nullptr) return core::MakeError("{} is not embedded in this build", kEnvPath);
  GT_ASSIGN_OR_RETURN(knowledge.env_vars, ParseEnvVarRules(env->content, env->path));
  return knowledge;
}

}  // namespace gputriage::checks
