// The known-issue knowledge base: every kb/issues/*.yaml entry with its example logs, loaded
// from the copy embedded in the binary (or from a directory, for `kb lint --dir`), and the lint
// that keeps it honest.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "core/result.h"
#include "kb/known_issue.h"
#include "kb/matcher.h"

namespace gputriage::kb {

/// One file of the knowledge base: its path ("kb/issues/x.yaml") and text.
using KbFile = catalog::SourceFile;

struct KnowledgeBase {
  std::vector<KnownIssue> issues;
  /// The reviewed tables (kb/tables, kb/env-vars.yaml) from the same files as the issues.
  catalog::Catalog catalog;
  /// Example logs by entry id: file name -> text, "match" files and "nomatch" files.
  std::map<std::string, std::vector<KbFile>> match_examples;
  std::map<std::string, std::vector<KbFile>> nomatch_examples;
};

/// Builds the knowledge base from files (kb/issues/<id>.yaml, <id>.match*.log,
/// <id>.nomatch*.log, and the tables of catalog::LoadCatalog). Every entry that does not parse
/// is a problem; Load fails when there is any, listing them all ("kb/issues/x.yaml:12: ..."),
/// or when a table is missing or broken.
core::Result<KnowledgeBase> LoadKnowledgeBase(const std::vector<KbFile>& files);

/// The knowledge base embedded at build time.
core::Result<KnowledgeBase> LoadEmbeddedKnowledgeBase();

/// The embedded knowledge base when `dir` is empty, else the one in the kb/ directory `dir`
/// (ReadKbDirectory, then LoadKnowledgeBase): what `analyze` and `kb` load for --kb-dir/--dir.
/// Fails as those do.
core::Result<KnowledgeBase> LoadKnowledgeBaseFrom(const std::string& dir);

/// The files of kb/ under `dir` (a source tree's kb directory: issues/, tables/, env-vars.yaml),
/// for linting or analysing with a working copy.
core::Result<std::vector<KbFile>> ReadKbDirectory(const std::string& dir);

/// Everything lint checks beyond parsing: each pattern compiles (RE2, Latin-1, as the matcher
/// uses them); each entry has a reference, at least one match example and one nomatch example;
/// each example log starts with "# source:"; each match example makes the entry match and no
/// nomatch example does; no two entries have the same required signals (one would shadow the
/// other). Empty when all is well.
std::vector<Problem> Lint(const KnowledgeBase& kb);

/// The entries whose id, title, category, vendor, explanation or patterns contain `query`
/// (case-insensitive); every entry when it is empty.
std::vector<const KnownIssue*> SearchIssues(const KnowledgeBase& kb, std::string_view query);

/// Feeds a whole text (a log) into `matcher`, line by line, as source `source`.
void FeedText(Matcher& matcher, std::string_view text, LineSource source, std::string_view input);

}  // namespace gputriage::kb
