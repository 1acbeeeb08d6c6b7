#include "kb/inputs.h"

#include <gtest/gtest.h>

#include <fstream>

#include "capture_tree.h"
#include "kb/knowledge_base.h"

namespace gputriage::kb {
namespace {

using core::Json;

// The embedded knowledge base; it outlives the analyses, whose matches point into it.
const KnowledgeBase& Embedded() {
  static const KnowledgeBase kb = LoadKnowledgeBaseFrom("").value();
  return kb;
}

// AnalyzeInputs with the embedded knowledge base on one log holding `text`.
AnalysisOutcome AnalyzeLog(const std::string& text) {
  auto analyzer = Analyzer::Create(Embedded());
  EXPECT_TRUE(analyzer.ok());
  testing::TempDir tmp;
  std::ofstream(tmp / "stderr.log") << text;
  auto outcome = AnalyzeInputs(**analyzer, {.paths = {tmp / "stderr.log"}});
  EXPECT_TRUE(outcome.ok()) << outcome.error().message;
  return outcome.ok() ? std::move(*outcome) : AnalysisOutcome{};
}

TEST(AnalysisOutcome, AKnownErrorIsARecognisedFailure) {
  AnalysisOutcome outcome = AnalyzeLog("RuntimeError: CUDA error: an illegal memory access was encountered\n");
  EXPECT_TRUE(RecognisedFailure(outcome));
  Json json = ToJson(outcome, "9.9.9");
  Json analysis = ToJson(outcome.analysis);
  for (const auto& [key, value] : analysis.items()) EXPECT_EQ(json[key], value) << key;
  EXPECT_EQ(json["schema_version"], 1);
  EXPECT_EQ(json["tool_version"], "9.9.9");
  EXPECT_EQ(json["processes"], Json::array());
  EXPECT_EQ(json["snapshot_used"], false);
  EXPECT_EQ(json.size(), analysis.size() + 4);
}

TEST(AnalysisOutcome, NothingKnownIsNoFailure) { EXPECT_FALSE(RecognisedFailure(AnalyzeLog("epoch 3: loss 0.25\n"))); }

TEST(AnalysisOutcome, AProcessReportIsAFailureAndNamesItsSource) {
  AnalysisOutcome outcome;
  outcome.inputs.push_back({.path = "a.log"});
  core::ProcessReport process;
  process.pid = 42;
  outcome.inputs.push_back({.kind = AnalyzedInput::Kind::kCore, .path = "/tmp/core.42", .process = process});
  outcome.snapshot = core::Snapshot{};
  EXPECT_TRUE(RecognisedFailure(outcome));
  Json json = ToJson(outcome, "9.9.9");
  ASSERT_EQ(json["processes"].size(), 1u);
  Json expected = core::ToJson(process);
  expected["source"] = "/tmp/core.42";
  EXPECT_EQ(json["processes"][0], expected);
  EXPECT_EQ(json["snapshot_used"], true);
}

TEST(LoadKnowledgeBaseFrom, TheEmbeddedOneOrADirectory) {
  auto embedded = LoadKnowledgeBaseFrom("");
  ASSERT_TRUE(embedded.ok()) << embedded.error().message;
  auto directory = LoadKnowledgeBaseFrom(std::string(GT_SOURCE_DIR) + "/kb");
  ASSERT_TRUE(directory.ok()) << directory.error().message;
  EXPECT_EQ(directory->issues.size(), embedded->issues.size());
  EXPECT_EQ(LoadKnowledgeBaseFrom("/nonexistent").error().message,
            "/nonexistent: no issues/ directory (give the kb/ directory of a source tree)");
}

}  // namespace
}  // namespace gputriage::kb
