// The reviewed tables of the knowledge base (kb/tables/*.yaml, kb/env-vars.yaml) as text with
// the path they came from: the copy embedded at build time, or a kb/ directory being edited.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gputriage::catalog {

/// One file of the knowledge base: its path relative to the repository ("kb/tables/x.yaml")
/// and its text.
struct SourceFile {
  std::string path;
  std::string text;
};

/// The file of `files` at `path`, or null.
const SourceFile* FindSource(const std::vector<SourceFile>& files, std::string_view path);

/// Every file embedded in this build (kb/**), sorted by path.
std::vector<SourceFile> EmbeddedSources();

}  // namespace gputriage::catalog
