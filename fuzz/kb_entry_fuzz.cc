// Fuzz target for the knowledge-base loader: the bytes are parsed as one known-issue entry
// (YAML) and, when that succeeds, loaded as `kb lint --dir` loads a directory (the entry file and
// an example log named after its id) and linted with themselves as example log, over the embedded
// tables. The tables are the same for every input, so they are loaded once (catalog::
// BuiltinCatalog) rather than parsed again for each one: until 2026-12-04 the target re-parsed
// them on every input, which spent about 90% of each execution on constant YAML.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kb/knowledge_base.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto issue = gputriage::kb::ParseKnownIssue(text, "kb/issues/fuzz.yaml");
  if (!issue.ok()) return 0;
  static const gputriage::catalog::Catalog* catalog = [] {
    auto loaded = gputriage::catalog::BuiltinCatalog();
    if (!loaded.ok()) std::abort();
    return *loaded;
  }();
  std::vector<gputriage::kb::KbFile> files = {
      {"kb/issues/" + issue->id + ".yaml", text},
      {"kb/issues/" + issue->id + ".match.log", text},
  };
  // Without tables the load must fail (it names the missing table) — never succeed half-built.
  if (gputriage::kb::LoadKnowledgeBase(files).ok()) std::abort();
  gputriage::kb::KnowledgeBase kb;
  kb.issues.push_back(std::move(*issue));
  kb.catalog = *catalog;
  kb.match_examples[kb.issues.front().id].push_back(files[1]);
  (void)gputriage::kb::Lint(kb);
  return 0;
}
