#include "inspect/ranking.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "inspect/findings.h"
#include "inspect/inspect.h"

namespace gputriage::inspect {
namespace {

const std::string kRankingSourceDir = GT_SOURCE_DIR;
// Real GPU code, committed (fuzz/corpus/*/SOURCE.md): nvcc's fatbin with sm_80 and sm_90 SASS
// and compute_90 PTX whose kernel has a 512-byte stack frame, and hipcc's gfx1030 code object
// whose kernel spills VGPRs.
const std::string kFatbin = kRankingSourceDir + "/fuzz/corpus/fatbin/fatbin-speed.fatbin";
const std::string kGfx1030 = kRankingSourceDir + "/fuzz/corpus/amdgpu_note/gfx1030-v4.co";

// FileFindings::Finish over every code object of a real file, against `gpus`.
FileFindingsOf FindingsOf(const std::string& path, const std::vector<MachineGpu>& gpus,
                          std::optional<VendorLibrary> library = std::nullopt) {
  FileFindings findings(path);
  auto inspected = InspectFile(path, {}, [&](CodeObject&& co, std::string&&) { findings.Add(co); });
  EXPECT_TRUE(inspected.ok()) << inspected.error().message;
  return {path, std::move(library), findings.Finish(gpus, std::nullopt)};
}

std::vector<std::string> Ids(const std::vector<RankedFinding>& ranked) {
  std::vector<std::string> ids;
  for (const RankedFinding& r : ranked) ids.push_back(r.finding.id);
  return ids;
}

const std::vector<catalog::GpuLibraryRule>& Rules() {
  auto tables = catalog::BuiltinLibraryTables();
  EXPECT_TRUE(tables.ok());
  return (*tables)->gpu_libraries;
}

// The table decides, by the file's name or its soname; a file it does not know is the user's.
TEST(ClassifyVendorLibrary, ByTheCatalogsTableOfGpuLibraries) {
  auto rocsparse = ClassifyVendorLibrary(Rules(), "/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1", std::nullopt);
  ASSERT_TRUE(rocsparse);
  EXPECT_EQ(rocsparse->component, "rocsparse");
  EXPECT_EQ(rocsparse->vendor, "amd");
  auto engines = ClassifyVendorLibrary(
      Rules(), "/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9", std::nullopt);
  ASSERT_TRUE(engines);
  EXPECT_EQ(engines->component, "cudnn");
  // A copy under another name still says what it is in its soname.
  auto copy = ClassifyVendorLibrary(Rules(), "/tmp/renamed.so", std::string("libcublasLt.so.12"));
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->component, "cublaslt");
  EXPECT_FALSE(ClassifyVendorLibrary(Rules(), kGfx1030, std::nullopt));
  EXPECT_FALSE(ClassifyVendorLibrary(Rules(), "/home/me/build/libmykernels.so", std::string("libmykernels.so.1")));
}

// InspectFile reads a host library's DT_SONAME, which ClassifyVendorLibrary needs for renamed
// copies: a real shared library of this machine (libz, which this binary links).
TEST(ClassifyVendorLibrary, InspectFileReadsTheSoname) {
  std::string libz;
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"}) {
    std::string path = std::string(dir) + "/libz.so.1";
    if (access(path.c_str(), R_OK) == 0) libz = path;
  }
  if (libz.empty()) GTEST_SKIP() << "no libz.so.1 in the usual directories";
  auto summary = InspectFile(libz, {}, [](CodeObject&&, std::string&&) {});
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->soname, "libz.so.1");
  auto cubin =
      InspectFile(kRankingSourceDir + "/fuzz/corpus/fatbin/sm_90.cubin", {}, [](CodeObject&&, std::string&&) {});
  ASSERT_TRUE(cubin.ok());
  EXPECT_FALSE(cubin->soname);
}

// The user's own files: every finding actionable, the most severe first, none folded.
TEST(RankFindings, OwnCodeBySeverity) {
  std::vector<MachineGpu> gpus = {{"sm_90", "sm_90", "0000:00:06.0"}, {"gfx1100", "gfx1100", "0000:03:00.0"}};
  std::vector<RankedFinding> ranked = RankFindings({FindingsOf(kFatbin, gpus), FindingsOf(kGfx1030, gpus)});
  EXPECT_EQ(Ids(ranked),
            (std::vector<std::string>{"inspect.missing_arch", "inspect.register_spills", "inspect.stack_frame"}));
  for (size_t i = 0; i < ranked.size(); ++i) {
    EXPECT_EQ(ranked[i].rank, i + 1);
    EXPECT_TRUE(ranked[i].actionable) << ranked[i].finding.id;
    EXPECT_FALSE(ranked[i].folded) << ranked[i].finding.id;
    EXPECT_EQ(ranked[i].scope, Scope::kCode) << ranked[i].finding.id;
    EXPECT_FALSE(ranked[i].component);
    EXPECT_FALSE(ranked[i].why.empty()) << ranked[i].finding.id;
  }
  EXPECT_EQ(ranked[2].path, kFatbin);
  EXPECT_EQ(ranked[2].finding.severity, core::Severity::kInfo);
  EXPECT_EQ(ranked[2].why, "local memory lives in device memory: a likely reason a kernel is slower than expected");
  EXPECT_TRUE(FoldedLibraries(ranked).empty());
}

// When the fatbin is a GPU library's: its PTX-only coverage is about the install (which build
// was installed: actionable), its kernels' stack frames are the vendor's business (last, folded);
// the user's own code's findings come first, code before install at one severity.
TEST(RankFindings, VendorInternalFactsLastAndFolded) {
  std::vector<MachineGpu> gpus = {{"sm_100", "sm_100", "0000:00:06.0"}, {"gfx1100", "gfx1100", "0000:03:00.0"}};
  VendorLibrary cudnn{"cudnn", "nvidia"};
  std::vector<RankedFinding> ranked = RankFindings({FindingsOf(kFatbin, gpus, cudnn), FindingsOf(kGfx1030, gpus)});
  ASSERT_EQ(Ids(ranked), (std::vector<std::string>{"inspect.missing_arch", "inspect.register_spills",
                                                   "inspect.ptx_only", "inspect.stack_frame"}));
  EXPECT_EQ(ranked[0].scope, Scope::kCode);
  EXPECT_EQ(ranked[1].scope, Scope::kCode);
  EXPECT_EQ(ranked[2].scope, Scope::kInstall);
  EXPECT_EQ(ranked[2].component, "cudnn");
  EXPECT_TRUE(ranked[2].actionable);
  EXPECT_FALSE(ranked[2].folded);
  EXPECT_EQ(ranked[2].why, "JIT at every cold start, and a load failure when the driver is older than the PTX");
  EXPECT_EQ(ranked[3].scope, Scope::kVendorInternal);
  EXPECT_FALSE(ranked[3].actionable);
  EXPECT_TRUE(ranked[3].folded);
  EXPECT_EQ(ranked[3].why,
            "about cudnn's own kernels, which only its vendor can change: read it when the failing kernel is one of "
            "them");

  std::vector<FoldedLibrary> folded = FoldedLibraries(ranked);
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_EQ(folded[0].path, kFatbin);
  EXPECT_EQ(folded[0].component, "cudnn");
  EXPECT_EQ(folded[0].count, 1u);
  EXPECT_EQ(folded[0].kinds, std::vector<std::string>{"stack frames"});

  // --json: the finding's own members unchanged, and the ranking's.
  core::Json j = ToJson(ranked[3]);
  for (const char* key : {"id", "layer", "severity", "title", "detail", "evidence", "fix", "references"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["id"], "inspect.stack_frame");
  EXPECT_EQ(j["rank"], 4);
  EXPECT_EQ(j["actionable"], false);
  EXPECT_EQ(j["scope"], "vendor-internal");
  EXPECT_EQ(j["folded"], true);
  EXPECT_EQ(j["file"], kFatbin);
  EXPECT_EQ(j["component"], "cudnn");
  EXPECT_TRUE(ToJson(ranked[0])["component"].is_null());
}

}  // namespace
}  // namespace gputriage::inspect
