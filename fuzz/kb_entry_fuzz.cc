// Fuzz target for the knowledge-base loader: the bytes are parsed as one known-issue entry
// (YAML) and, when that succeeds, linted with themselves as example log, as `kb lint` does.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kb/knowledge_base.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto issue = gputriage::kb::ParseKnownIssue(text, "kb/issues/fuzz.yaml");
  if (!issue.ok()) return 0;
  static const std::vector<gputriage::kb::KbFile> tables = [] {
    std::vector<gputriage::kb::KbFile> out;
    for (auto& f : gputriage::catalog::EmbeddedSources()) {
      if (f.path.rfind("kb/issues/", 0) != 0) out.push_back(std::move(f));
    }
    return out;
  }();
  std::vector<gputriage::kb::KbFile> files = tables;
  files.push_back({"kb/issues/" + issue->id + ".yaml", text});
  files.push_back({"kb/issues/" + issue->id + ".match.log", text});
  auto kb = gputriage::kb::LoadKnowledgeBase(files);
  if (kb.ok()) (void)gputriage::kb::Lint(*kb);
  return 0;
}
