// The catalog: every table of the embedded knowledge base loads, is sourced, and its examples
// are real lines that match; broken tables are refused with the file and the entry.
#include "catalog/catalog.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gputriage::catalog {
namespace {

const Catalog& Kb() {
  static const Catalog* kb = [] {
    auto loaded = BuiltinCatalog();
    EXPECT_TRUE(loaded.ok()) << loaded.error().message;
    return loaded.ok() ? *loaded : new Catalog();
  }();
  return *kb;
}

TEST(CatalogTest, EmbeddedTablesLoadAndAreSourced) {
  ASSERT_GE(Kb().xid.size(), 30u);
  ASSERT_TRUE(Kb().xid.count(79));
  EXPECT_EQ(Kb().xid.at(79).severity, core::Severity::kCritical);
  EXPECT_EQ(Kb().xid.at(13).verdict, core::Verdict::kApplication);
  for (const auto& [code, entry] : Kb().xid) EXPECT_FALSE(entry.references.empty()) << code;
  ASSERT_GE(Kb().env_vars.size(), 10u);
  for (const auto& rule : Kb().env_vars) EXPECT_FALSE(rule.references.empty()) << rule.name;
}

TEST(CatalogTest, BadTablesAreRejectedWithTheSource) {
  auto bad_yaml = ParseXidTable("schema: gputriage.xid/1\nentries: [ {code: 1", "x.yaml");
  ASSERT_FALSE(bad_yaml.ok());
  EXPECT_EQ(bad_yaml.error().message.rfind("x.yaml: invalid YAML", 0), 0u) << bad_yaml.error().message;
  auto no_ref =
      ParseXidTable("schema: gputriage.xid/1\nentries:\n  - {code: 79, name: x, severity: critical}\n", "x.yaml");
  ASSERT_FALSE(no_ref.ok());
  EXPECT_EQ(no_ref.error().message, "x.yaml: Xid 79: needs a name and at least one reference");
  auto dup = ParseXidTable(
      "schema: gputriage.xid/1\nentries:\n"
      "  - {code: 8, name: a, severity: error, references: [u]}\n"
      "  - {code: 8, name: b, severity: error, references: [u]}\n",
      "x.yaml");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message, "x.yaml: Xid 8 is listed twice");
  auto bad_re = ParseEnvVarRules(
      "schema: gputriage.envvars/1\nentries:\n"
      "  - {name: A, match: '(', severity: info, title: t, references: [u]}\n",
      "e.yaml");
  ASSERT_FALSE(bad_re.ok());
  EXPECT_NE(bad_re.error().message.find("e.yaml: A: match pattern '(' does not compile"), std::string::npos)
      << bad_re.error().message;
  auto bad_severity = ParseEnvVarRules(
      "schema: gputriage.envvars/1\nentries:\n"
      "  - {name: A, severity: fatal, title: t, references: [u]}\n",
      "e.yaml");
  ASSERT_FALSE(bad_severity.ok());
  EXPECT_EQ(bad_severity.error().message, "e.yaml: A: severity 'fatal' is not one of info|warning|error|critical");
}

TEST(CatalogTest, ErrorCodesByNameAndMessage) {
  const ErrorCode* c = Kb().errors.FindByName("cudaErrorIllegalAddress");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->value, 700);
  EXPECT_EQ(c->category, core::Category::kIllegalAddress);
  EXPECT_TRUE(c->sticky);
  EXPECT_EQ(Kb().errors.FindByName("CUDA_ERROR_ILLEGAL_ADDRESS"), c);
  EXPECT_EQ(Kb().errors.FindByMessage("cuda", " An illegal memory access was encountered "), c);
  const ErrorCode* hip = Kb().errors.FindByName("hipErrorIllegalAddress");
  ASSERT_NE(hip, nullptr);
  EXPECT_TRUE(hip->sticky) << "sticky like its CUDA twin";
  EXPECT_EQ(Kb().errors.FindByName("cudaErrorMadeUp"), nullptr);
}

TEST(CatalogTest, GeneralSignalsTakeTheirXidCodesFromTheXidTable) {
  std::vector<int> hardware;
  for (const GeneralSignal& s : Kb().general_signals) {
    if (s.category == core::Category::kHardware && !s.xid_codes.empty()) hardware = s.xid_codes;
  }
  std::vector<int> expected;
  for (const auto& [code, entry] : Kb().xid) {
    if (entry.verdict == core::Verdict::kHardware) expected.push_back(code);
  }
  EXPECT_EQ(hardware, expected);
  EXPECT_TRUE(std::find(hardware.begin(), hardware.end(), 79) != hardware.end());
  EXPECT_TRUE(std::find(hardware.begin(), hardware.end(), 13) == hardware.end());
}

// Every example names where it comes from; a file of this repository must hold the line.
TEST(CatalogTest, ExamplesComeFromRealLogs) {
  auto check = [](const std::vector<ExampleLine>& examples, const std::string& what) {
    for (const ExampleLine& e : examples) {
      ASSERT_FALSE(e.from.empty()) << what;
      if (e.from.rfind("https://", 0) == 0) continue;
      std::ifstream in(std::string(GT_SOURCE_DIR) + "/" + e.from, std::ios::binary);
      ASSERT_TRUE(in.good()) << what << ": " << e.from;
      std::stringstream text;
      text << in.rdbuf();
      EXPECT_NE(text.str().find(e.line), std::string::npos) << what << ": " << e.from << " has no line " << e.line;
    }
  };
  for (const GeneralSignal& s : Kb().general_signals) {
    // A vocabulary row's example, when it has one, is a line as its component prints it, kept in
    // the row itself (vocabulary_test checks that it matches); general-signals.yaml's are real logs.
    if (!s.file.empty()) continue;
    EXPECT_FALSE(s.examples.empty()) << s.written_pattern;
    check(s.examples, s.written_pattern);
  }
  for (const KernelLogRule& r : Kb().kernel_log_rules) {
    EXPECT_FALSE(r.examples.empty()) << r.id;
    check(r.examples, r.id);
    check(r.counter_examples, r.id);
  }
}

TEST(CatalogTest, BrokenGeneralSignalsAndRulesNameTheEntry) {
  auto bad_category = ParseGeneralSignals(
      "schema: gputriage.general-signals/1\nentries:\n  - {category: memory, weight: 3, pattern: x}\n", "g.yaml",
      Kb().xid);
  ASSERT_FALSE(bad_category.ok());
  EXPECT_EQ(bad_category.error().message, "g.yaml:3: category 'memory' is not a category");
  auto bad_pattern = ParseGeneralSignals(
      "schema: gputriage.general-signals/1\nentries:\n  - {category: oom, weight: 3, pattern: '(x'}\n", "g.yaml",
      Kb().xid);
  ASSERT_FALSE(bad_pattern.ok());
  EXPECT_EQ(bad_pattern.error().message.rfind("g.yaml:3: pattern '(x' does not compile", 0), 0u)
      << bad_pattern.error().message;
  auto no_xid = ParseGeneralSignals(
      "schema: gputriage.general-signals/1\nentries:\n  - {category: oom, weight: 3, pattern: x, xid: {codes: []}}\n",
      "g.yaml", Kb().xid);
  ASSERT_FALSE(no_xid.ok());
  EXPECT_EQ(no_xid.error().message, "g.yaml:3: 'xid' names no Xid code");
  auto no_title = ParseKernelLogRules(
      "schema: gputriage.kernel-log-rules/1\nentries:\n  - {id: a, classes: [ras], pattern: x}\n", "r.yaml");
  ASSERT_FALSE(no_title.ok());
  EXPECT_EQ(no_title.error().message, "r.yaml:3: a rule needs an id, classes, a pattern and a title");
}

TEST(CatalogTest, VmFaultStatusLayoutFromTheTable) {
  const VmFaultLayout& layout = Kb().vm_fault;
  // CID is bits 17:9 of VM_L2_PROTECTION_FAULT_STATUS (kb/tables/amdgpu-vm-fault.yaml).
  const BitField* cid = FindField(layout.status_fields, "CID");
  ASSERT_NE(cid, nullptr);
  EXPECT_EQ(cid->low, 9u);
  EXPECT_EQ(cid->width, 9u);
  EXPECT_EQ(FindField(layout.status_fields, "WALKER_ERROR")->Extract(0x0000000E), 7u);
  EXPECT_EQ(layout.walker_errors.at(2), "PDE0");
  EXPECT_EQ(layout.permission_bits.at(2), "Write");
}

TEST(CatalogTest, AcaBankIpFromTheIpid) {
  // IPID of a real MI300X bank dump (tests/fixtures/kernel_log/amdgpu-mi300x-athub-...).
  EXPECT_EQ(Kb().aca.IpOf(0x0001000138430400), "SMU");
  EXPECT_EQ(Kb().aca.IpOf(0x0000009600000000), "UMC");
  EXPECT_EQ(Kb().aca.IpOf(0x1234000000000000), "");
  const BitField* uc = FindField(Kb().aca.status_fields, "UC");
  ASSERT_NE(uc, nullptr);
  EXPECT_EQ(uc->low, 61u);
}

TEST(CatalogTest, MissingTableIsNamed) {
  std::vector<SourceFile> files = EmbeddedSources();
  files.erase(
      std::remove_if(files.begin(), files.end(), [](const SourceFile& f) { return f.path == kKernelLogRulesPath; }),
      files.end());
  auto loaded = LoadCatalog(files);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().message, "kb/tables/kernel-log-rules.yaml is missing from the knowledge base");
}

}  // namespace
}  // namespace gputriage::catalog
