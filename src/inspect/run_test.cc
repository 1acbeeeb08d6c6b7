#include "inspect/run.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/file.h"
#include "core/snapshot.h"
#include "core/text.h"
#include "core/version.h"

namespace gputriage::inspect {
namespace {

using core::Json;

const std::string kRunSourceDir = GT_SOURCE_DIR;

std::string ReplaceAll(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// tests/fixtures/inspect/NAME with this checkout's path and this build's version.
std::string Golden(const std::string& name) {
  auto text = core::ReadFile(kRunSourceDir + "/tests/fixtures/inspect/" + name, 1 << 20);
  EXPECT_TRUE(text.ok()) << text.error().message;
  if (!text.ok()) return "";
  return ReplaceAll(ReplaceAll(*text, "@SRC@", kRunSourceDir), "@TOOL_VERSION@", core::kToolVersion);
}

struct Written {
  std::string out;
  std::vector<std::string> errors;
  InspectOutcome outcome;
};

// InspectFiles into memory.
Written Inspect(InspectRequest request) {
  Written written;
  request.error = [&written](const std::string& message) { written.errors.push_back(message); };
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  written.outcome = InspectFiles(request, out);
  std::fclose(out);
  written.out.assign(buffer, size);
  std::free(buffer);
  return written;
}

std::vector<std::string> Seeds() {
  return {kRunSourceDir + "/fuzz/corpus/fatbin/sm_90.cubin", kRunSourceDir + "/fuzz/corpus/fatbin/fatbin-speed.fatbin",
          kRunSourceDir + "/fuzz/corpus/amdgpu_note/gfx1030-v4.co"};
}

// The golden files' mixed case: --kernel pressure, an H200 and a gfx1100, a damaged fatbin and a
// missing file.
InspectRequest Mixed(bool json) {
  InspectRequest request{.paths = Seeds(), .kernel = "pressure", .json = json, .snapshot_used = true};
  request.paths.push_back(kRunSourceDir + "/fuzz/corpus/fatbin/fatbin-speed-truncated.fatbin");
  request.paths.push_back("/nonexistent");
  Json snapshot = Json::parse(R"({"schema_version":1,"gpus":[
      {"pci_address":"0000:00:06.0","nvidia":{"compute_capability":"9.0"}},
      {"pci_address":"0000:03:00.0","gfx_arch":"gfx1100"}]})");
  request.gpus = core::GpuArchitectures(core::SnapshotFromJsonUnchecked(snapshot));
  return request;
}

std::vector<std::string> FindingIds(const InspectOutcome& outcome) {
  std::vector<std::string> ids;
  for (const core::Finding& f : outcome.findings) ids.push_back(f.id);
  return ids;
}

TEST(InspectFiles, JsonIsTheDocumentInspectHasAlwaysWritten) {
  Written all = Inspect({.paths = Seeds(), .json = true, .check_coverage = false});
  EXPECT_EQ(all.out, Golden("all-kernels.json"));
  EXPECT_FALSE(Json::parse(all.out, nullptr, false).is_discarded());
  EXPECT_FALSE(all.outcome.file_failed);
  EXPECT_FALSE(all.outcome.file_damaged);
  EXPECT_TRUE(all.errors.empty());

  Written mixed = Inspect(Mixed(/*json=*/true));
  EXPECT_EQ(mixed.out, Golden("mixed-kernel-pressure.json"));
  Json document = Json::parse(mixed.out, nullptr, false);
  ASSERT_FALSE(document.is_discarded());
  EXPECT_EQ(document["files"][4]["error"], "/nonexistent: No such file or directory");
  EXPECT_EQ(document["findings"].size(), mixed.outcome.findings.size());
}

TEST(InspectFiles, TextIsWhatInspectHasAlwaysPrinted) {
  Written all = Inspect({.paths = Seeds(), .check_coverage = false});
  EXPECT_EQ(all.out, Golden("all-kernels.txt"));

  Written mixed = Inspect(Mixed(/*json=*/false));
  EXPECT_EQ(mixed.out, Golden("mixed-kernel-pressure.txt"));
  // The damaged fatbin is named too: it could not be read fully.
  EXPECT_EQ(mixed.errors,
            (std::vector<std::string>{kRunSourceDir + "/fuzz/corpus/fatbin/fatbin-speed-truncated.fatbin: 1 "
                                                      "problem(s): the file could not be read fully (see the errors "
                                                      "and problems listed for it)",
                                      "/nonexistent: No such file or directory"}));
  EXPECT_TRUE(mixed.outcome.file_failed);
  EXPECT_TRUE(mixed.outcome.file_damaged);
  EXPECT_EQ(FindingIds(mixed.outcome), (std::vector<std::string>{"inspect.stack_frame", "inspect.stack_frame",
                                                                 "inspect.missing_arch", "inspect.register_spills"}));
}

TEST(InspectFiles, AProcesssOtherFilesPassSilently) {
  InspectRequest request{.paths = {kRunSourceDir + "/README.md", "/nonexistent", Seeds()[0]}, .from_process = true};
  request.check_coverage = false;
  Written written = Inspect(request);
  EXPECT_TRUE(written.errors.empty());
  EXPECT_TRUE(written.outcome.file_failed);
  EXPECT_EQ(written.out.rfind(Seeds()[0] + ": cubin, 1 GPU code object(s)\n", 0), 0u) << written.out;

  Written none = Inspect({.paths = {kRunSourceDir + "/README.md"}});
  EXPECT_EQ(none.out, "this machine's GPUs: none found (architecture coverage not checked)\n");
  ASSERT_EQ(none.errors.size(), 1u);
  EXPECT_NE(none.errors[0].find("README.md"), std::string::npos) << none.errors[0];
}

// The progress hook: called at each file's start and as its code objects come, on this thread,
// with the bytes passed growing to the file's end; the library itself writes nothing for it.
TEST(InspectFiles, ReportsProgressThroughTheHook) {
  std::vector<InspectProgress> seen;
  std::vector<std::string> paths;
  InspectRequest request{.paths = Seeds(), .check_coverage = false};
  request.progress = [&](const InspectProgress& p) {
    seen.push_back(p);
    paths.emplace_back(p.path);
  };
  Written with = Inspect(request);
  EXPECT_EQ(with.out, Golden("all-kernels.txt"));
  ASSERT_FALSE(seen.empty());
  // Each file starts with 0 bytes; within a file the bytes and objects only grow.
  std::vector<size_t> starts;
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].files, 3u);
    EXPECT_EQ(paths[i], Seeds()[seen[i].file_index]);
    if (i == 0 || seen[i].file_index != seen[i - 1].file_index) {
      starts.push_back(i);
      EXPECT_EQ(seen[i].bytes_done, 0u);
      EXPECT_EQ(seen[i].code_objects, 0u);
      continue;
    }
    EXPECT_GE(seen[i].bytes_done, seen[i - 1].bytes_done);
    EXPECT_GE(seen[i].code_objects, seen[i - 1].code_objects);
    EXPECT_LE(seen[i].bytes_done, seen[i].bytes_total);
  }
  EXPECT_EQ(starts.size(), 3u);
  // The fatbin's three entries are reported as they are handed on (after each is counted).
  const InspectProgress& last_of_fatbin = seen[starts[2] - 1];
  EXPECT_EQ(last_of_fatbin.file_index, 1u);
  EXPECT_EQ(last_of_fatbin.code_objects, 3u);
  EXPECT_EQ(starts[2] - starts[1], 4u);  // the start and one call per entry
  EXPECT_GT(last_of_fatbin.bytes_done, 0u);
  EXPECT_EQ(last_of_fatbin.bytes_total, std::filesystem::file_size(Seeds()[1]));
}

TEST(MappedFiles, ListsEachFileThisProcessMapsOnce) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  auto files = MappedFiles(getpid());
  ASSERT_TRUE(files.ok()) << files.error().message;
  EXPECT_NE(std::find(files->begin(), files->end(), std::string(exe, static_cast<size_t>(n))), files->end());
  std::set<std::string> unique(files->begin(), files->end());
  EXPECT_EQ(unique.size(), files->size());
  for (const std::string& file : *files) EXPECT_EQ(file.front(), '/') << file;
}

TEST(MappedFiles, KeepsSpacesAndSkipsDeletedFiles) {
  testing::TempDir tmp;
  auto map = [](const std::string& path) {
    std::ofstream(path) << std::string(4096, 'x');
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    void* at = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    return at;
  };
  std::string kept = tmp / "a file with spaces";
  std::string deleted = tmp / "deleted";
  void* kept_at = map(kept);
  void* deleted_at = map(deleted);
  ASSERT_NE(kept_at, MAP_FAILED);
  ASSERT_NE(deleted_at, MAP_FAILED);
  unlink(deleted.c_str());
  auto files = MappedFiles(getpid());
  munmap(kept_at, 4096);
  munmap(deleted_at, 4096);
  ASSERT_TRUE(files.ok()) << files.error().message;
  EXPECT_NE(std::find(files->begin(), files->end(), kept), files->end());
  for (const std::string& file : *files) EXPECT_EQ(file.find(deleted), std::string::npos) << file;
}

TEST(MappedFiles, NamesTheMapsFileOfAProcessThatIsNotThere) {
  auto files = MappedFiles(999999999);  // above any pid_max (at most 2^22)
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.error().message, "/proc/999999999/maps: cannot read (no such process, or no permission)");
  EXPECT_EQ(files.error().code, core::ErrorCode::kNotFound);
}

TEST(KernelMatches, FindsThePartInTheSymbolOrTheName) {
  Kernel k;
  k.symbol = "_Z11bounded_addPfPKfi";
  k.name = "bounded_add(float*, float const*, int)";
  EXPECT_TRUE(KernelMatches(k, ""));
  EXPECT_TRUE(KernelMatches(k, "_Z11"));
  EXPECT_TRUE(KernelMatches(k, "float const"));
  EXPECT_FALSE(KernelMatches(k, "spills"));
}

}  // namespace
}  // namespace gputriage::inspect
