// What an analysis shows of the job's own text: secrets are redacted before anything is derived
// from a line (the signature, its search links, the evidence and known-issue lines).
#include "kb/analysis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kb/knowledge_base.h"
#include "kb/next_steps.h"

namespace gputriage::kb {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A Hugging Face token whose digit runs NormalizeLine would shorten below the token format's
// length ("Xy1234" -> "XyN"), assembled at run time so that no token sits in the source.
std::string HfToken() {
  std::string token = "hf_";
  for (int i = 0; i < 6; ++i) token += "Xy" + std::to_string(1234 + i);
  return token;
}

void ExpectNoSecret(const std::string& text) {
  EXPECT_THAT(text, Not(HasSubstr("cretPw"))) << text;
  EXPECT_THAT(text, Not(HasSubstr("XyN"))) << text;
  EXPECT_THAT(text, Not(HasSubstr("Xy12"))) << text;
}

TEST(AnalysisSecrets, SignatureLinksAndEvidenceAreDerivedFromRedactedLines) {
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok());
  auto analyzer = Analyzer::Create(*kb);
  ASSERT_TRUE(analyzer.ok());
  const std::string log = "worker 3: loss became nan at step 1200 while pushing to https://ml:S3cretPw0rd@metrics." +
                          std::string("example.org/run with ") + HfToken() + "\n";
  Analysis a = (*analyzer)->AnalyzeText(log, "log", nullptr);
  ASSERT_TRUE(a.matches.empty());
  EXPECT_EQ(a.signature,
            "worker N: loss became nan at step N while pushing to https://ml:<redacted>@metrics.example.org/run with "
            "<redacted>");
  ExpectNoSecret(a.signature);
  ExpectNoSecret(a.group_key);
  ASSERT_FALSE(a.search_links.empty());
  for (const std::string& link : a.search_links) ExpectNoSecret(link);
  // The placeholder is no search word.
  EXPECT_THAT(a.search_links[0], Not(HasSubstr("redacted")));
  ASSERT_FALSE(a.evidence.empty());
  for (const core::Evidence& e : a.evidence) ExpectNoSecret(e.text);
}

TEST(AnalysisSecrets, AKnownIssueLineIsRedactedBeforeItIsCut) {
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok());
  auto analyzer = Analyzer::Create(*kb);
  ASSERT_TRUE(analyzer.ok());
  // The token straddles byte 400, where the lines kept as evidence are cut: cut first, its head
  // would be too short to be recognised and would be shown.
  std::string line = "RuntimeError: CUDA error: an illegal memory access was encountered ";
  line += std::string(390 - line.size(), '.') + " " + HfToken() + "\n";
  Analysis a = (*analyzer)->AnalyzeText(line, "stderr", nullptr);
  ASSERT_FALSE(a.matches.empty());
  for (const IssueMatch& m : a.matches) {
    for (const Hit& h : m.hits) ExpectNoSecret(h.line);
  }
  for (const core::Evidence& e : a.evidence) ExpectNoSecret(e.text);
  ExpectNoSecret(a.signature);
}

TEST(SearchLinks, RedactTheirSignatureFirst) {
  for (const std::string& link : SearchLinks("connect to https://ml:S3cretPw0rd@db.example.org failed")) {
    ExpectNoSecret(link);
    EXPECT_THAT(link, HasSubstr("q=connect+to+failed"));
  }
}

}  // namespace
}  // namespace gputriage::kb

namespace gputriage::kb {
namespace {

// A bundle whose snapshot has a CUDA 13 PyTorch wheel on an R575 driver and whose crashed
// process loaded cuBLAS from two places: the version matrix and the libraries' own finding are
// both among the analysis's library findings, and the error-level ones among the next steps.
TEST(AnalysisLibraries, VersionMatrixOnTheBundlesSnapshotAndLibraries) {
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok());
  auto analyzer = Analyzer::Create(*kb);
  ASSERT_TRUE(analyzer.ok());
  core::Bundle bundle;
  bundle.dir = "/tmp/b";
  bundle.snapshot = core::Snapshot{};
  bundle.snapshot->software = core::Software{};
  bundle.snapshot->software->nvidia = core::NvidiaSoftware{};
  bundle.snapshot->software->nvidia->driver_version = "575.57.08";
  bundle.snapshot->software->python = core::PythonSoftware{};
  bundle.snapshot->software->python->torch = core::TorchInstall{};
  bundle.snapshot->software->python->torch->cuda = "13.0";
  bundle.libraries = core::LibraryReport{};
  core::Finding dup;
  dup.id = "libs.duplicate_library";
  dup.severity = core::Severity::kError;
  dup.title = "Two copies of libcublas";
  bundle.libraries->findings.push_back(dup);
  (*analyzer)->Begin("bundle");
  (*analyzer)->AddBundle(bundle);
  Analysis a = (*analyzer)->Finish(nullptr);
  std::set<std::string> ids;
  for (const core::Finding& f : a.library_findings) ids.insert(f.id);
  EXPECT_TRUE(ids.count("libs.duplicate_library"));
  EXPECT_TRUE(ids.count("compat.torch-cuda-13-wheel-needs-driver-580"));
  bool step = false;
  for (const std::string& s : a.next_steps) step = step || s.find("Two copies of libcublas") != std::string::npos;
  EXPECT_TRUE(step);
}

}  // namespace
}  // namespace gputriage::kb
