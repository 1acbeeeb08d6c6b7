#include "catalog/kernel_log_rules.h"

#include <algorithm>

#include <re2/re2.h>

#include "catalog/yaml_util.h"

namespace gputriage::catalog {

core::Result<std::vector<KernelLogRule>> ParseKernelLogRules(std::string_view text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node doc, yaml::LoadDocument(text, source, "gputriage.kernel-log-rules/1"));
  GT_ASSIGN_OR_RETURN(YAML::Node entries, yaml::List(doc, "entries", source));
  std::vector<KernelLogRule> rules;
  for (const YAML::Node& node : entries) {
    std::string where = yaml::Where(source, node);
    KernelLogRule rule;
    rule.line = node.Mark().line + 1;
    rule.id = yaml::Scalar(node, "id");
    rule.classes = yaml::StringList(node, "classes");
    rule.pattern = yaml::Scalar(node, "pattern");
    rule.title = yaml::Scalar(node, "title");
    if (rule.id.empty() || rule.classes.empty() || rule.pattern.empty() || rule.title.empty()) {
      return core::MakeError("{}: a rule needs an id, classes, a pattern and a title", where);
    }
    GT_ASSIGN_OR_RETURN(rule.severity, yaml::SeverityAt(node, source, rule.id));
    if (auto compiled = yaml::CheckPattern(rule.pattern, where); !compiled.ok()) return compiled.error();
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);
    options.set_log_errors(false);
    rule.compiled = std::make_shared<const RE2>(rule.pattern, options);
    rule.detail = yaml::Scalar(node, "detail");
    rule.fix = yaml::Scalar(node, "fix");
    rule.examples = ExampleLines(node, "examples");
    rule.counter_examples = ExampleLines(node, "counter_examples");
    rules.push_back(std::move(rule));
  }
  return rules;
}

const KernelLogRule* FirstKernelLogRule(const std::vector<KernelLogRule>& rules, std::string_view log_class,
                                        std::string_view message) {
  const re2::StringPiece text(message.data(), message.size());
  for (const KernelLogRule& rule : rules) {
    if (std::find(rule.classes.begin(), rule.classes.end(), log_class) == rule.classes.end()) continue;
    if (rule.compiled && RE2::PartialMatch(text, *rule.compiled)) return &rule;
  }
  return nullptr;
}

}  // namespace gputriage::catalog
