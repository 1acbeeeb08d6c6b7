// `gputriage kb list|search TEXT|lint [--dir DIR]`: the known-issue knowledge base.
#include <fmt/format.h>

#include "cli/common.h"
#include "core/text.h"
#include "kb/knowledge_base.h"

namespace gputriage::cli {
namespace {

using core::Json;

Json EntryJson(const kb::KnownIssue& i) {
  Json refs = Json::array();
  for (const kb::Reference& r : i.references) refs.push_back(r.url);
  return {{"id", i.id},
          {"title", i.title},
          {"vendor", i.vendor},
          {"category", core::CategoryName(i.category)},
          {"verdict", core::VerdictName(i.verdict)},
          {"references", refs}};
}

int List(const std::string& dir, bool json, const std::string& query) {
  auto kb = kb::LoadKnowledgeBaseFrom(dir);
  if (!kb.ok()) {
    return Fail(kb.error().message, kExitInternal);
  }
  Json out = Json::array();
  std::string text;
  for (const kb::KnownIssue* i : kb::SearchIssues(*kb, query)) {
    out.push_back(EntryJson(*i));
    text += fmt::format("{:<48} {:<15} {:<7} {}\n", i->id, core::CategoryName(i->category), i->vendor, i->title);
  }
  if (json) {
    PrintJson(Json{{"entries", out}, {"count", out.size()}});
  } else {
    std::fputs(text.c_str(), stdout);
    std::fprintf(stdout, "%zu entr%s\n", out.size(), out.size() == 1 ? "y" : "ies");
  }
  return kExitOk;
}

int LintCommand(const std::string& dir, bool json) {
  auto kb = kb::LoadKnowledgeBaseFrom(dir);
  if (!kb.ok()) {
    // Entries that do not even parse: the message lists each with file and line.
    return Fail(kb.error().message, kExitFindings);
  }
  std::vector<kb::Problem> problems = kb::Lint(*kb);
  if (json) {
    Json list = Json::array();
    for (const kb::Problem& p : problems) list.push_back({{"file", p.file}, {"line", p.line}, {"message", p.message}});
    PrintJson(Json{{"entries", kb->issues.size()}, {"problems", list}});
  } else {
    for (const kb::Problem& p : problems) std::fprintf(stdout, "%s\n", p.Text().c_str());
    std::fprintf(stdout, "%zu entries, %zu problem%s\n", kb->issues.size(), problems.size(),
                 problems.size() == 1 ? "" : "s");
  }
  return problems.empty() ? kExitOk : kExitFindings;
}

}  // namespace

Command KbCommand() {
  return Command{
      "kb", "The known-issue knowledge base: list, search, lint.", [](CLI::App& app) -> std::function<int()> {
        auto dir = std::make_shared<std::string>();
        auto json = std::make_shared<bool>(false);
        auto query = std::make_shared<std::string>();
        app.description(
            "The knowledge base of known issues (kb/issues/*.yaml, embedded in the binary; "
            "format in docs/kb-schema.md). `list` prints every entry, `search TEXT` those whose "
            "id, title, category, explanation or patterns contain TEXT, `lint` checks the schema, "
            "that every pattern compiles, that every entry has a reference, that its example logs "
            "match and its counter-examples do not, and that no entry shadows another (exit 1 on "
            "any problem). --dir DIR reads a kb/ directory instead of the embedded copy.");
        app.require_subcommand(1);
        app.add_option("--dir", *dir, "A kb/ directory to read instead of the embedded one")->type_name("DIR");
        app.add_flag("--json", *json, "JSON output");
        auto mode = std::make_shared<std::string>();
        CLI::App* list = app.add_subcommand("list", "Every entry: id, category, vendor, title");
        list->callback([mode] { *mode = "list"; });
        CLI::App* search = app.add_subcommand("search", "Entries whose text or patterns contain TEXT");
        search->add_option("text", *query, "What to look for (case-insensitive)")->required();
        search->callback([mode] { *mode = "search"; });
        CLI::App* lint = app.add_subcommand("lint", "Check every entry and its example logs");
        lint->callback([mode] { *mode = "lint"; });
        for (CLI::App* sub : {list, search, lint}) {
          sub->add_option("--dir", *dir, "A kb/ directory to read instead of the embedded one")->type_name("DIR");
          sub->add_flag("--json", *json, "JSON output");
        }
        return [dir, json, query, mode]() {
          if (*mode == "lint") return LintCommand(*dir, *json);
          return List(*dir, *json, *query);
        };
      }};
}

}  // namespace gputriage::cli
