#include "kb/knowledge_base.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kb/analysis.h"

namespace gputriage::kb {
namespace {

// The knowledge base as built into the binary lints clean: every entry parses, its patterns
// compile, its example logs match and its counter-examples do not, no entry shadows another.
TEST(KnowledgeBase, TheEmbeddedKnowledgeBaseLintsClean) {
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok()) << kb.error().message;
  EXPECT_GE(kb->issues.size(), 60u);
  std::vector<Problem> problems = Lint(*kb);
  for (const Problem& p : problems) ADD_FAILURE() << p.Text();
  std::set<std::string> categories, vendors;
  for (const KnownIssue& i : kb->issues) {
    categories.insert(std::string(core::CategoryName(i.category)));
    vendors.insert(i.vendor);
  }
  EXPECT_EQ(categories.size(), core::kCategoryCount) << "every category has at least one entry";
  EXPECT_TRUE(vendors.count("amd") && vendors.count("nvidia"));
}

// `files` and the embedded tables (kb/tables, kb/env-vars.yaml) without the embedded issues.
std::vector<KbFile> WithTables(std::vector<KbFile> files) {
  for (catalog::SourceFile& f : catalog::EmbeddedSources()) {
    if (f.path.rfind("kb/issues/", 0) != 0) files.push_back(std::move(f));
  }
  return files;
}

std::string Entry(const std::string& id, const std::string& pattern) {
  return "schema: gputriage.issue/1\nid: " + id +
         "\ntitle: t\nvendor: any\ncategory: oom\nverdict: unknown\n"
         "signals:\n  - source: any\n    pattern: '" +
         pattern +
         "'\nexplanation: e\nfixes:\n"
         "  - {kind: code, action: a, cost: c}\nreferences:\n  - https://example.org/x\n";
}

TEST(KnowledgeBase, LintFindsBrokenPatternsShadowsAndExampleMismatches) {
  std::vector<KbFile> files = {
      {"kb/issues/a.yaml", Entry("a", "out of memory")},
      {"kb/issues/a.match.log", "# source: test\nCUDA out of memory\n"},
      {"kb/issues/a.nomatch.log", "# source: test\nout of memory, as it happens\n"},
      {"kb/issues/b.yaml", Entry("b", "out of memory")},
      {"kb/issues/c.yaml", Entry("c", "(broken")},
      {"kb/issues/c.match.log", "no source line\n"},
      {"kb/issues/c.nomatch.log", "# source: test\nx\n"},
  };
  auto kb = LoadKnowledgeBase(WithTables(files));
  ASSERT_TRUE(kb.ok()) << kb.error().message;
  std::vector<std::string> texts, tables;
  for (const Problem& p : Lint(*kb)) (p.file.rfind("kb/issues/", 0) == 0 ? texts : tables).push_back(p.Text());
  // The tables' examples name example logs of the full knowledge base, which this one lacks.
  ASSERT_FALSE(tables.empty());
  EXPECT_NE(tables.front().find("the example is not in kb/issues/"), std::string::npos) << tables.front();
  EXPECT_EQ(texts, (std::vector<std::string>{
                       "kb/issues/a.nomatch.log: a matches its counter-example",
                       "kb/issues/b.yaml: same required signals as a: one shadows the other",
                       "kb/issues/b.yaml: no example log kb/issues/b.match.log",
                       "kb/issues/b.yaml: no counter-example kb/issues/b.nomatch.log",
                       "kb/issues/c.yaml:9: pattern does not compile: missing ): (broken",
                   }));
}

TEST(KnowledgeBase, LintFindsAKernelLogRuleWhoseExampleAnEarlierRuleTakes) {
  // The real rules, with one catch-all amdgpu rule put first: doctor would name every amdgpu
  // record with it, so the later amdgpu rules' examples are taken by it.
  std::vector<KbFile> files = WithTables({});
  for (KbFile& f : files) {
    if (f.path != catalog::kKernelLogRulesPath) continue;
    const std::string first = "entries:\n";
    ASSERT_NE(f.text.find(first), std::string::npos);
    f.text.insert(f.text.find(first) + first.size(),
                  "  - id: kmsg.test_catch_all\n    classes: [amdgpu]\n    pattern: 'amdgpu'\n"
                  "    severity: warning\n    title: t\n");
  }
  auto kb = LoadKnowledgeBase(files);
  ASSERT_TRUE(kb.ok()) << kb.error().message;
  std::vector<std::string> taken;
  for (const Problem& p : Lint(*kb)) {
    if (p.Text().find("and rule kmsg.test_catch_all takes it") != std::string::npos) taken.push_back(p.Text());
  }
  ASSERT_FALSE(taken.empty());
  EXPECT_NE(taken.front().find("kb/tables/kernel-log-rules.yaml:"), std::string::npos) << taken.front();
  EXPECT_NE(taken.front().find("doctor classes its example as 'amdgpu'"), std::string::npos) << taken.front();
}

TEST(KnowledgeBase, ABrokenEntryStopsLoadingAndIsNamed) {
  std::vector<KbFile> files = {{"kb/issues/a.yaml", Entry("a", "x")},
                               {"kb/issues/b.yaml", "schema: gputriage.issue/1\nid: b\n"}};
  auto kb = LoadKnowledgeBase(WithTables(files));
  ASSERT_FALSE(kb.ok());
  EXPECT_EQ(kb.error().message, "the knowledge base has 1 broken entry:\n  kb/issues/b.yaml:1: missing 'title'");
}

TEST(Analysis, RealH200OutputMatchesKnownIssues) {
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok());
  auto analyzer = Analyzer::Create(*kb);
  ASSERT_TRUE(analyzer.ok()) << analyzer.error().message;
  // stderr of tests/gpu/torch_index_add_assert.py on the H200 (tests/fixtures/run/).
  std::string text =
      "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1021: indexFuncSmallIndex: block: [0,0,0], thread: [0,0,0] "
      "Assertion `dstIndex < dstAddDimSize` failed.\n"
      "torch.AcceleratorError: CUDA error: device-side assert triggered\n";
  Analysis a = (*analyzer)->AnalyzeText(text, "stderr", nullptr);
  EXPECT_EQ(core::CategoryName(a.category), "device-assert");
  ASSERT_FALSE(a.matches.empty());
  EXPECT_EQ(a.matches[0].issue->id, "gpu-device-side-assert-triggered");
  EXPECT_GT(a.confidence, 0.5);
  EXPECT_TRUE(a.search_links.empty());
  core::Json j = ToJson(a);
  for (const char* key : {"category", "confidence", "verdict", "matches", "next_steps"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["matches"][0]["evidence"][0]["line_number"], 2);
}

TEST(Analysis, AsynchronouslyReportedErrorsPointAwayFromTheTraceback) {
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok());
  auto analyzer = Analyzer::Create(*kb);
  ASSERT_TRUE(analyzer.ok());
  // The end of tests/fixtures/run/h200-torch-index-add-assert.stderr.txt (PyTorch 2.11, H200).
  Analysis a = (*analyzer)->AnalyzeText(
      "torch.AcceleratorError: CUDA error: device-side assert triggered\n"
      "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
      "incorrect.\n",
      "stderr", nullptr);
  ASSERT_FALSE(a.next_steps.empty());
  EXPECT_EQ(a.next_steps[0].rfind("Rerun with CUDA_LAUNCH_BLOCKING=1", 0), 0u);
  EXPECT_NE(a.verdict_reasons.back().find("reported asynchronously"), std::string::npos);
  Analysis plain =
      (*analyzer)->AnalyzeText("torch.AcceleratorError: CUDA error: device-side assert triggered\n", "stderr", nullptr);
  EXPECT_EQ(plain.next_steps[0].rfind("Rerun under `gputriage run --repeat 5", 0), 0u);
}

TEST(Analysis, UnmatchedInputIsClassifiedGenerallyWithSearchLinks) {
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok());
  auto analyzer = Analyzer::Create(*kb);
  ASSERT_TRUE(analyzer.ok());
  Analysis a = (*analyzer)->AnalyzeText("2026-12-02T10:00:00Z worker 3: loss became nan at step 1200 (scale 65536)\n",
                                        "log", nullptr);
  EXPECT_TRUE(a.matches.empty());
  EXPECT_EQ(core::CategoryName(a.category), "numerical");
  EXPECT_LT(a.confidence, 0.6);
  EXPECT_EQ(a.signature, "worker N: loss became nan at step N (scale N)");
  ASSERT_FALSE(a.search_links.empty());
  EXPECT_EQ(a.search_links[0], "https://github.com/search?type=issues&q=worker+loss+became+nan+at+step+scale");
  Analysis nothing = (*analyzer)->AnalyzeText("all done\n", "log", nullptr);
  EXPECT_EQ(core::CategoryName(nothing.category), "other");
  EXPECT_LT(nothing.confidence, 0.1);
}

// Plain logs are prefiltered a chunk (1 MiB) at a time; the result must be exactly what matching
// every line gives: on each example log alone, and on all of them with filler between, several
// chunks long, so entries first match in later chunks and anchored patterns sit mid-chunk.
TEST(Analysis, ThePrefilterGivesTheSameResultAsMatchingEveryLine) {
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok());
  auto filtered = Analyzer::Create(*kb);
  auto every_line = Analyzer::Create(*kb);
  ASSERT_TRUE(filtered.ok() && every_line.ok());
  (*every_line)->set_prefilter(false);
  std::string all;
  size_t examples = 0;
  for (const auto* examples_by_id : {&kb->match_examples, &kb->nomatch_examples}) {
    for (const auto& [id, files] : *examples_by_id) {
      for (const KbFile& f : files) {
        Analysis a = (*filtered)->AnalyzeText(f.text, f.path, nullptr);
        Analysis b = (*every_line)->AnalyzeText(f.text, f.path, nullptr);
        EXPECT_EQ(ToJson(a).dump(), ToJson(b).dump()) << f.path;
        ++examples;
        all += f.text;
        for (int i = 0; i < 300; ++i)
          all += "step " + std::to_string(examples * 1000 + i) + " loss 0.25 lr 3e-4 tokens/s 81234\n";
      }
    }
  }
  // More ACA banks than are kept (the register pattern leaves the prefilter once the cap is
  // reached), an Xid storm under new timestamps and different prefixes (parses are cached), and
  // colour codes (stripped a chunk at a time) mid-log, then filler again.
  std::string storm;
  for (int i = 0; i < 80; ++i) {
    storm += fmt::format(
        "[{}.9] amdgpu 0000:42:00.0: {{1}}[Hardware Error]: aca entry[{:02}].STATUS=0x98000800003e0000\n", i, i % 3);
    storm += fmt::format(
        "[{}.9] amdgpu 0000:42:00.0: {{1}}[Hardware Error]: aca entry[{:02}].IPID=0x0001000138430400\n", i, i % 3);
    storm +=
        fmt::format("[{}.5] NVRM: Xid (PCI:0000:61:00): 13, pid={}, name=python3, Out Of Range Address\n", i, i % 4);
    storm += fmt::format("{}Xid (PCI:0000:61:00): 31, pid=7, name=python3, MMU Fault\n", i % 2 ? "NVRM: " : "no");
  }
  all += storm;
  all += "\x1b[1;31mtorch.AcceleratorError: CUDA error: an illegal memory access was encountered\x1b[0m\n";
  for (int i = 0; i < 20000; ++i) all += "step " + std::to_string(i) + " loss 0.25 lr 3e-4 tokens/s 81234\n";
  ASSERT_GT(all.size(), 2u << 20) << "several chunks";
  Analysis a = (*filtered)->AnalyzeText(all, "all", nullptr);
  Analysis b = (*every_line)->AnalyzeText(all, "all", nullptr);
  EXPECT_EQ(ToJson(a).dump(), ToJson(b).dump());
  EXPECT_GT(a.matches.size(), 50u);
  Analysis alone = (*filtered)->AnalyzeText(storm, "storm", nullptr);
  std::map<int, uint64_t> xids;
  for (const core::Json& x : alone.xids) xids[x["code"].get<int>()] = x["count"].get<uint64_t>();
  EXPECT_EQ(xids[13], 80u);
  EXPECT_EQ(xids[31], 40u) << "'noXid (' is not an Xid line; 'NVRM: Xid (' is";
  EXPECT_EQ(alone.aca_banks.size(), 64u);
}

bool HasReason(const Analysis& a, std::string_view start) {
  for (const std::string& r : a.verdict_reasons) {
    if (r.rfind(start, 0) == 0) return true;
  }
  return false;
}

// The verdict's reasons: the Xid catalog's class (kb/tables/nvidia-xid.yaml) of each Xid and on
// how many GPUs; the snapshot's hardware health. With no known issue matching (an empty
// knowledge base), hardware evidence decides the verdict.
TEST(Analysis, OnlyAnAcaBankThatWasNotCorrectedLeansToHardware) {
  auto empty = LoadKnowledgeBase(WithTables({}));
  ASSERT_TRUE(empty.ok());
  auto analyzer = Analyzer::Create(*empty);
  ASSERT_TRUE(analyzer.ok());
  // The bank lines of tests/fixtures/kernel_log/amdgpu-mi300x-athub-...-eventid.txt (SMU, POISON).
  const std::string poisoned =
      "[13850.927941] amdgpu 0000:42:00.0: {1}[Hardware Error]: aca entry[00].STATUS=0x98000800003e0000\n"
      "[13850.927960] amdgpu 0000:42:00.0: {1}[Hardware Error]: aca entry[00].IPID=0x0001000138430400\n";
  Analysis hw = (*analyzer)->AnalyzeText(
      "RuntimeError: HIP error: an illegal memory access was encountered\n" + poisoned, "dmesg", nullptr);
  EXPECT_EQ(hw.aca_banks.size(), 1u);
  EXPECT_EQ(core::VerdictName(hw.verdict), "hardware") << core::Json(hw.verdict_reasons).dump();
  EXPECT_TRUE(HasReason(hw, "1 AMD ACA hardware error bank in the kernel log (1 not corrected"))
      << core::Json(hw.verdict_reasons).dump();
  // The same bank with STATUS = VAL only: a corrected error, named but not a hardware verdict.
  Analysis ce = (*analyzer)->AnalyzeText(
      "RuntimeError: HIP error: an illegal memory access was encountered\n"
      "[13850.927941] amdgpu 0000:42:00.0: {1}[Hardware Error]: aca entry[00].STATUS=0x8000000000000000\n",
      "dmesg", nullptr);
  EXPECT_NE(core::VerdictName(ce.verdict), "hardware") << core::Json(ce.verdict_reasons).dump();
  EXPECT_TRUE(HasReason(ce, "1 AMD ACA hardware error bank in the kernel log (0 not corrected"))
      << core::Json(ce.verdict_reasons).dump();
}

TEST(Analysis, VerdictReasonsFromXidClassesGpusAndHardwareHealth) {
  auto empty = LoadKnowledgeBase(WithTables({}));
  ASSERT_TRUE(empty.ok());
  auto analyzer = Analyzer::Create(*empty);
  ASSERT_TRUE(analyzer.ok());
  // tests/fixtures/kernel_log/nvrm-xid119-...: GSP RPC timeouts, driver-firmware in the catalog.
  Analysis gsp = (*analyzer)->AnalyzeText(
      "[Fri Mar  3 04:27:08 2023] NVRM: Xid (PCI:0000:61:00): 119, pid=1346198, name=nvidia-smi, Timeout waiting for "
      "RPC from GSP! Expected function 103 (GSP_RM_ALLOC) (0x80 0x38).\n"
      "[Fri Mar  3 04:27:53 2023] NVRM: Xid (PCI:0000:61:00): 119, pid=1346198, name=nvidia-smi, Timeout waiting for "
      "RPC from GSP! Expected function 103 (GSP_RM_ALLOC) (0x2080 0x4).\n",
      "dmesg", nullptr);
  EXPECT_EQ(core::CategoryName(gsp.category), "driver-runtime");
  EXPECT_EQ(core::VerdictName(gsp.verdict), "driver-firmware");
  EXPECT_TRUE(HasReason(
      gsp, "Xid 119 (GSP RPC Timeout) on 0000:61:00.0 (2 times): NVIDIA's Xid catalog classes it as driver-firmware"))
      << core::Json(gsp.verdict_reasons).dump();
  ASSERT_EQ(gsp.xids.size(), 1u);
  EXPECT_EQ(gsp.xids[0]["count"], 2);
  EXPECT_EQ(gsp.gpu_signature.error, "Xid 119");

  Analysis shared = (*analyzer)->AnalyzeText(
      "NVRM: Xid (PCI:0000:61:00): 31, pid=7, name=python3, channel 0x0000000a\n"
      "NVRM: Xid (PCI:0000:62:00): 31, pid=8, name=python3, channel 0x0000000a\n",
      "dmesg", nullptr);
  EXPECT_TRUE(HasReason(shared, "Xid 31 on 2 GPUs at once")) << core::Json(shared.verdict_reasons).dump();
  EXPECT_EQ(core::VerdictName(shared.verdict), "application");

  core::Json snapshot = core::Json::parse(R"({"gpus": [
      {"pci_address": "0000:61:00.0", "nvidia": {"compute_capability": "9.0", "ecc": {"volatile_uncorrected": 2},
                                                  "remapped_rows": {"pending": true}}},
      {"pci_address": "0000:62:00.0", "nvidia": {"compute_capability": "9.0", "ecc": {"volatile_uncorrected": 0}}}]})");
  Facts facts = FactsFromSnapshot(core::SnapshotFromJsonUnchecked(snapshot));
  EXPECT_EQ(facts.gpu_count, 2u);
  ASSERT_EQ(facts.hardware_alerts.size(), 2u);
  Analysis ecc = (*analyzer)->AnalyzeText("RuntimeError: CUDA error: an illegal memory access was encountered\n",
                                          "stderr", &facts);
  EXPECT_EQ(core::CategoryName(ecc.category), "illegal-address");
  EXPECT_EQ(core::VerdictName(ecc.verdict), "hardware");
  EXPECT_TRUE(HasReason(ecc, "snapshot: GPU 0000:61:00.0: 2 uncorrectable ECC errors since the driver loaded"));
  EXPECT_TRUE(HasReason(ecc, "verdict hardware (the error lines alone said unknown)"));
  EXPECT_EQ(ecc.gpu_signature.Key(), "cudaErrorIllegalAddress on sm_90");

  // The stack's own message places the fault (kb/tables/vocab-nvidia.yaml): the kernel module and
  // the user-space driver of different releases is a driver problem, whatever the symptom.
  Analysis mismatch = (*analyzer)->AnalyzeText(
      "NVRM: API mismatch: the client 'nvidia-smi' (pid 4242) has the version 550.54.15, but\n"
      "NVRM: this kernel module has the version 535.161.07.  Please make sure that this kernel module and all NVIDIA "
      "driver components have the same version.\n",
      "dmesg", nullptr);
  EXPECT_EQ(core::VerdictName(mismatch.verdict), "driver-firmware") << core::Json(mismatch.verdict_reasons).dump();
  EXPECT_TRUE(HasReason(mismatch, "the stack's own message points at driver-firmware: nvrm: a user-space"))
      << core::Json(mismatch.verdict_reasons).dump();
  EXPECT_EQ(ecc.group_key, "cudaErrorIllegalAddress on sm_90");

  // With the real knowledge base a known issue with a verdict keeps it, and the hardware evidence
  // is still said; one whose verdict is unknown (an illegal address: its cause varies) leaves the
  // verdict to the evidence.
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok());
  auto full = Analyzer::Create(*kb);
  ASSERT_TRUE(full.ok());
  Analysis known = (*full)->AnalyzeText(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.11 "
      "GiB of which 3.06 MiB is free.\n",
      "stderr", &facts);
  ASSERT_FALSE(known.matches.empty());
  EXPECT_EQ(known.matches[0].issue->id, "torch-caching-allocator-out-of-memory");
  EXPECT_EQ(core::VerdictName(known.verdict), "application");
  EXPECT_TRUE(HasReason(known, "the known issue says")) << core::Json(known.verdict_reasons).dump();
  Analysis varies =
      (*full)->AnalyzeText("RuntimeError: CUDA error: an illegal memory access was encountered\n", "stderr", &facts);
  ASSERT_FALSE(varies.matches.empty());
  EXPECT_EQ(core::VerdictName(varies.matches[0].issue->verdict), "unknown");
  EXPECT_EQ(core::VerdictName(varies.verdict), "hardware") << core::Json(varies.verdict_reasons).dump();
}

// Without a known issue: a runtime's error report (driver-runtime) names who noticed, not who is
// at fault, so its verdict stays unknown; thin evidence (confidence below 0.3) assumes no verdict
// and says so; a category that does place the fault (a shared library of the stack missing) keeps
// its usual verdict.
TEST(Analysis, ThinEvidenceAndRuntimeReportsLeaveTheVerdictUnknown) {
  auto empty = LoadKnowledgeBase(WithTables({}));
  ASSERT_TRUE(empty.ok());
  auto analyzer = Analyzer::Create(*empty);
  ASSERT_TRUE(analyzer.ok());
  Analysis nccl = (*analyzer)->AnalyzeText("NCCL WARN Bootstrap : no socket interface found\n", "stderr", nullptr);
  EXPECT_EQ(core::CategoryName(nccl.category), "driver-runtime");
  EXPECT_GE(nccl.confidence, 0.3);
  EXPECT_EQ(core::VerdictName(nccl.verdict), "unknown") << core::Json(nccl.verdict_reasons).dump();
  Analysis thin = (*analyzer)->AnalyzeText("RuntimeError: CUDA error: initialization error\n", "stderr", nullptr);
  EXPECT_LT(thin.confidence, 0.3);
  EXPECT_TRUE(HasReason(thin, "confidence 0.26 is below 0.30")) << core::Json(thin.verdict_reasons).dump();
  Analysis abi = (*analyzer)->AnalyzeText(
      "error while loading shared libraries: libamdhip64.so.6: cannot open shared object file\n", "stderr", nullptr);
  EXPECT_EQ(core::CategoryName(abi.category), "abi-mismatch");
  EXPECT_GE(abi.confidence, 0.3);
  EXPECT_EQ(core::VerdictName(abi.verdict), "library");
}

// Whose check failed places the fault: a framework kernel's input check (vocab-asserts.yaml) is
// the caller's, a library comparing its own result with a reference (vocab-libtests.yaml) is the
// library's, a bare HIP assert says nothing either way; old driver wordings count like new ones.
TEST(Analysis, WhoseCheckFailedPlacesTheFault) {
  auto empty = LoadKnowledgeBase(WithTables({}));
  ASSERT_TRUE(empty.ok());
  auto analyzer = Analyzer::Create(*empty);
  ASSERT_TRUE(analyzer.ok());
  auto verdict_of = [&](const std::string& text, const char* category) {
    Analysis a = (*analyzer)->AnalyzeText(text, "stderr", nullptr);
    EXPECT_EQ(core::CategoryName(a.category), category) << text << core::Json(a.verdict_reasons).dump();
    return std::string(core::VerdictName(a.verdict));
  };
  EXPECT_EQ(verdict_of("/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
                       "block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\n",
                       "device-assert"),
            "application");
  EXPECT_EQ(verdict_of("vectoradd_hip.cpp:50: void vectoradd_float(float *, const float *, const float *, int, int): "
                       "Device-side assertion `0' failed.\n",
                       "device-assert"),
            "unknown");
  EXPECT_EQ(verdict_of("E0000 00:00:1727688442.093248 2145761 buffer_comparator.cc:157] Difference at 10069: "
                       "-522.617, expected -261.495\n",
                       "numerical"),
            "library");
  EXPECT_EQ(verdict_of("Forward Convolution FAILED: 0.00108118 > 1.5e-05\n", "numerical"), "library");
  EXPECT_EQ(verdict_of("Failed to initialize NVML: Driver/library version mismatch\n", "driver-runtime"),
            "driver-firmware");
  // Linux up to 6.9 printed "MES failed to response msg=%d" (the row was read from a newer kernel).
  EXPECT_EQ(verdict_of("[354561.777034] [drm:mes_v11_0_submit_pkt_and_poll_completion.constprop.0 [amdgpu]] *ERROR* "
                       "MES failed to response msg=3\n",
                       "hang-timeout"),
            "driver-firmware");
}

// An amdgpu VM fault in a user context (vmid != 0) is user space's, which includes the libraries:
// the known issue does not blame the application.
TEST(Analysis, AUserContextVmFaultDoesNotBlameTheApplication) {
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok());
  auto analyzer = Analyzer::Create(*kb);
  ASSERT_TRUE(analyzer.ok());
  Analysis a = (*analyzer)->AnalyzeText(
      "amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32774)\n"
      "amdgpu 0000:03:00.0: amdgpu:  in process python3 pid 4242 thread python3 pid 4242)\n"
      "amdgpu 0000:03:00.0: amdgpu:   in page starting at address 0x00007f0000001000 from client 10\n",
      "dmesg", nullptr);
  EXPECT_EQ(core::CategoryName(a.category), "page-fault");
  ASSERT_FALSE(a.matches.empty());
  EXPECT_EQ(a.matches.front().issue->id, "amdgpu-gpuvm-page-fault");
  EXPECT_EQ(core::VerdictName(a.verdict), "unknown") << core::Json(a.verdict_reasons).dump();
}

// --baseline: when nothing else places the fault and only one side of the stack changed since
// the last good snapshot, that change is the first suspect; when both changed, neither is.
TEST(Analysis, AVersionChangeSinceTheLastGoodRunIsTheFirstSuspect) {
  auto empty = LoadKnowledgeBase(WithTables({}));
  ASSERT_TRUE(empty.ok());
  auto analyzer = Analyzer::Create(*empty);
  ASSERT_TRUE(analyzer.ok());
  const std::string ima = "RuntimeError: CUDA error: an illegal memory access was encountered\n";
  Facts driver;
  driver.changes = driver.driver_changes = {"GPU 0000:61:00.0 driver 550.54.15 -> 560.35.03"};
  Analysis d = (*analyzer)->AnalyzeText(ima, "stderr", &driver);
  EXPECT_EQ(core::VerdictName(d.verdict), "driver-firmware") << core::Json(d.verdict_reasons).dump();
  EXPECT_TRUE(HasReason(d, "the failure follows a driver/kernel change since the last good snapshot (GPU 0000:61:00.0"))
      << core::Json(d.verdict_reasons).dump();
  Facts stack;
  stack.changes = stack.stack_changes = {"torch 2.5.1 -> 2.6.0"};
  Analysis l = (*analyzer)->AnalyzeText(ima, "stderr", &stack);
  EXPECT_EQ(core::VerdictName(l.verdict), "library") << core::Json(l.verdict_reasons).dump();
  Facts both = driver;
  both.stack_changes = stack.stack_changes;
  Analysis u = (*analyzer)->AnalyzeText(ima, "stderr", &both);
  EXPECT_EQ(core::VerdictName(u.verdict), "unknown") << core::Json(u.verdict_reasons).dump();
  // Hardware evidence still comes first.
  Facts ecc = driver;
  ecc.hardware_alerts = {"GPU 0000:61:00.0: 2 uncorrectable ECC errors since the driver loaded"};
  EXPECT_EQ(core::VerdictName((*analyzer)->AnalyzeText(ima, "stderr", &ecc).verdict), "hardware");
}

// An amdgpu VM fault block (header, address, status, decoded fields) is one event, decoded.
TEST(Analysis, AnAmdgpuVmFaultBlockIsOneEvent) {
  auto kb = LoadEmbeddedKnowledgeBase();
  ASSERT_TRUE(kb.ok());
  auto analyzer = Analyzer::Create(*kb);
  ASSERT_TRUE(analyzer.ok());
  std::ifstream in(std::string(GT_FIXTURES_DIR) +
                   "/kernel_log/amdgpu-gfxhub0-no-retry-pagefault-cpc-gfx902-apu-rocm4.3.txt");
  std::stringstream text;
  text << in.rdbuf();
  Analysis a = (*analyzer)->AnalyzeText(text.str(), "dmesg", nullptr);
  EXPECT_EQ(core::CategoryName(a.category), "page-fault");
  ASSERT_EQ(a.vm_faults.size(), 1u);
  EXPECT_EQ(a.vm_faults[0]["client"], "CPC");
  EXPECT_EQ(a.vm_faults[0]["access"], "write");
  EXPECT_EQ(a.vm_faults[0]["lines"], 9);
  EXPECT_TRUE(
      HasReason(a, "1 amdgpu VM fault (each block of kernel-log lines is one); the first: amdgpu VM fault on gfxhub0"))
      << core::Json(a.verdict_reasons).dump();
  EXPECT_TRUE(HasReason(a, "the faulting page 0x0 is at the bottom of the address space"));
  // The general classifier's evidence holds the header once, not the block's field lines.
  size_t status_lines = 0;
  for (const core::Evidence& e : a.evidence)
    status_lines += e.text.find("PROTECTION_FAULT_STATUS") != std::string::npos;
  EXPECT_EQ(status_lines, 0u);
}

// A chain of Python exceptions: the last one raised counts (key line, category), and the GPU
// signature keeps the sticky CUDA error over the non-sticky one caught before it.
TEST(Analysis, TheLastPythonExceptionCountsAndStickyErrorsWin) {
  auto empty = LoadKnowledgeBase(WithTables({}));
  ASSERT_TRUE(empty.ok());
  auto analyzer = Analyzer::Create(*empty);
  ASSERT_TRUE(analyzer.ok());
  Analysis a = (*analyzer)->AnalyzeText(
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 3, in <module>\n"
      "RuntimeError: CUDA error: out of memory\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 5, in <module>\n"
      "[rank0]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n",
      "stderr", nullptr);
  EXPECT_EQ(core::CategoryName(a.category), "illegal-address");
  EXPECT_EQ(a.signature, "[rankN]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered");
  EXPECT_EQ(a.gpu_signature.error, "cudaErrorIllegalAddress");
  Analysis reversed = (*analyzer)->AnalyzeText(
      "RuntimeError: CUDA error: an illegal memory access was encountered\n"
      "RuntimeError: CUDA error: out of memory\n",
      "stderr", nullptr);
  EXPECT_EQ(reversed.gpu_signature.error, "cudaErrorIllegalAddress") << "a sticky error is not replaced";
}

// Weak hints alone (words like "driver" or "power" in a boot log) name no category.
TEST(Analysis, WeakHintsAloneAreNotAFailure) {
  auto empty = LoadKnowledgeBase(WithTables({}));
  ASSERT_TRUE(empty.ok());
  auto analyzer = Analyzer::Create(*empty);
  ASSERT_TRUE(analyzer.ok());
  // A real boot log: amdgpu initialising two GPUs, no failure.
  std::ifstream in(
      std::string(GT_FIXTURES_DIR) +
      "/kernel_log/amdgpu-boot-init-ctime-2gpu-rx7900gre-gfx1100-raphael-igpu-kfd-nodes-ip-blocks-kernel6.18.txt");
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_GT(text.str().size(), 1000u);
  Analysis boot = (*analyzer)->AnalyzeText(text.str(), "dmesg", nullptr);
  EXPECT_EQ(core::CategoryName(boot.category), "other");
  EXPECT_LE(boot.confidence, 0.1);
  EXPECT_TRUE(HasReason(boot, "no known issue matched and no clear GPU error; only weak hints"));
}

}  // namespace
}  // namespace gputriage::kb
