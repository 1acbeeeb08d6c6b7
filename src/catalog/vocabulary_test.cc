// The vocabulary tables (kb/tables/vocab-*.yaml): the embedded ones load and every row is sourced;
// a literal text is matched as a literal; broken rows are rejected naming the row.
#include <gtest/gtest.h>
#include <re2/re2.h>

#include "catalog/catalog.h"
#include "catalog/general_signals.h"

namespace gputriage::catalog {
namespace {

TEST(Vocabulary, EmbeddedTablesJoinTheGeneralSignalsWithTheirSources) {
  auto catalog = BuiltinCatalog();
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  const Catalog& c = **catalog;
  ASSERT_GT(c.vocabulary_rows, 50u);
  size_t rows = 0;
  for (const GeneralSignal& s : c.general_signals) {
    if (s.file.empty()) continue;  // general-signals.yaml
    ++rows;
    EXPECT_EQ(s.file.rfind("kb/tables/vocab-", 0), 0u) << s.file;
    EXPECT_FALSE(s.component.empty()) << s.file << ":" << s.line;
    EXPECT_FALSE(s.source.empty()) << s.file << ":" << s.line;
    EXPECT_NE(s.source.find("http"), std::string::npos) << s.file << ":" << s.line << " " << s.source;
    ASSERT_TRUE(s.category.has_value());
    EXPECT_GE(s.weight, 1);
    for (const ExampleLine& e : s.examples) {
      EXPECT_TRUE(RE2::PartialMatch(e.line, RE2(s.pattern))) << s.file << ":" << s.line << " " << e.line;
    }
  }
  EXPECT_EQ(rows, c.vocabulary_rows);
}

constexpr const char* kTable = R"(schema: gputriage.vocabulary/1
sources:
  SRC: "a header, https://example.org/h"
entries:
  - component: nccl
    name: ncclUnhandledCudaError
    text: 'unhandled cuda error (run with NCCL_DEBUG=INFO'
    meaning: 'a CUDA call inside NCCL failed'
    category: driver-runtime
    verdict: unknown
    weight: 3
    source: SRC
  - component: amdgpu
    pattern: 'ring \S+ timeout, signaled seq=\d+'
    meaning: 'a job on a ring did not finish in time'
    category: hang-timeout
    verdict: driver-firmware
    weight: 2
    source: SRC
    line: 'amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3'
)";

TEST(Vocabulary, TextIsALiteralPatternIsRe2AndVerdictUnknownIsNone) {
  auto rows = ParseVocabulary(kTable, "kb/tables/vocab-test.yaml");
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  const GeneralSignal& text = (*rows)[0];
  EXPECT_TRUE(RE2::PartialMatch("NCCL failure: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
                                RE2(text.pattern)));
  EXPECT_FALSE(RE2::PartialMatch("unhandled cuda errorX(run", RE2(text.pattern)));  // '(' is literal
  EXPECT_FALSE(text.verdict.has_value());
  EXPECT_EQ(text.category, core::Category::kDriverRuntime);
  EXPECT_EQ(text.about, "nccl ncclUnhandledCudaError: a CUDA call inside NCCL failed");
  EXPECT_EQ(text.source, "SRC: a header, https://example.org/h");
  const GeneralSignal& pattern = (*rows)[1];
  EXPECT_EQ(pattern.verdict, core::Verdict::kDriverFirmware);
  ASSERT_EQ(pattern.examples.size(), 1u);
  EXPECT_TRUE(RE2::PartialMatch(pattern.examples[0].line, RE2(pattern.pattern)));
}

TEST(Vocabulary, BrokenRowsAreRejectedNamingTheRow) {
  std::string table = kTable;
  auto broken = [&](const std::string& from, const std::string& to) {
    std::string t = table;
    t.replace(t.find(from), from.size(), to);
    auto rows = ParseVocabulary(t, "kb/tables/vocab-test.yaml");
    EXPECT_FALSE(rows.ok()) << to;
    return rows.ok() ? std::string() : rows.error().message;
  };
  EXPECT_NE(broken("    weight: 3", "    weight: 4").find("weight must be 1, 2 or 3"), std::string::npos);
  EXPECT_NE(broken("category: hang-timeout", "category: slow").find("'slow' is not a category"), std::string::npos);
  EXPECT_NE(broken("verdict: driver-firmware", "verdict: maybe").find("'maybe' is not a verdict"), std::string::npos);
  EXPECT_NE(broken("    source: SRC\n    line", "    source: OTHER\n    line").find("'OTHER' is not in 'sources'"),
            std::string::npos);
  EXPECT_NE(broken("    meaning: 'a CUDA", "    colour: red\n    meaning: 'a CUDA").find("unknown key 'colour'"),
            std::string::npos);
  EXPECT_NE(broken("text: 'unhandled cuda error (run with NCCL_DEBUG=INFO'", "text: 'error'").find("too short"),
            std::string::npos);
  std::string both = broken("    text: 'unhandled", "    pattern: 'x+y'\n    text: 'unhandled");
  EXPECT_NE(both.find("either 'text' or 'pattern'"), std::string::npos) << both;
  EXPECT_NE(broken("ring \\S+ timeout", "ring (\\S+ timeout").find("vocab-test.yaml"), std::string::npos);
  // Line numbers name the row.
  EXPECT_NE(broken("    weight: 2", "    weight: 0").find("vocab-test.yaml:"), std::string::npos);
}

}  // namespace
}  // namespace gputriage::catalog
