#include "inspect/disasm.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/file.h"

namespace gputriage::inspect {
namespace {

const std::string kSource = GT_SOURCE_DIR;
const std::string kCubin = kSource + "/fuzz/corpus/fatbin/sm_90.cubin";
const std::string kAmdObject = kSource + "/fuzz/corpus/amdgpu_note/gfx1030-v4.co";

// An executable shell script at `path` that appends its arguments to `path`.args and exits with
// `status`, standing in for cuobjdump or llvm-objdump.
void FakeTool(const std::string& path, int status = 0) {
  std::ofstream(path) << "#!/bin/sh\necho \"$@\" >> \"$0.args\"\nexit " << status << "\n";
  chmod(path.c_str(), 0755);
}

std::string Arguments(const std::string& tool) {
  return core::ReadFile(tool + ".args", 1 << 20).value_or("(the tool did not run)");
}

struct Disassembled {
  bool done = false;
  std::vector<std::string> errors;
};

Disassembled Disassemble(const std::vector<std::string>& paths, const std::string& kernel,
                         const std::vector<std::string>& dirs) {
  Disassembled d;
  d.done = DisassembleKernels(
      paths, kernel, [&d](const std::string& m) { d.errors.push_back(m); }, dirs);
  return d;
}

TEST(FindDisassembler, SaysWhatToInstallWhenTheToolIsAbsent) {
  testing::TempDir empty;
  auto nvidia = FindDisassembler("nvidia", {empty.path()});
  ASSERT_FALSE(nvidia.ok());
  EXPECT_EQ(nvidia.error().message,
            "--disasm needs cuobjdump (CUDA toolkit, package cuda-cuobjdump-<version> from NVIDIA's repository, "
            "or the full toolkit); it was not found in PATH or /usr/local/cuda/bin");
  EXPECT_EQ(nvidia.error().code, core::ErrorCode::kNotFound);
  auto amd = FindDisassembler("amd", {empty.path()});
  ASSERT_FALSE(amd.ok());
  EXPECT_EQ(amd.error().message,
            "--disasm needs llvm-objdump with the AMDGPU target (ROCm's /opt/rocm/llvm/bin, or Debian's "
            "llvm-15 package); it was not found in PATH or /opt/rocm/llvm/bin");
  EXPECT_EQ(FindDisassembler("intel", {empty.path()}).error().message, "no disassembler for intel code objects");
}

TEST(FindDisassembler, LooksInPathFirstThenWhereToolkitsInstall) {
  const char* path = std::getenv("PATH");
  ASSERT_NE(path, nullptr);
  std::string first(path, std::string_view(path).find(':') == std::string_view::npos
                              ? std::strlen(path)
                              : std::string_view(path).find(':'));
  const std::vector<std::string>& dirs = DefaultToolDirs();
  ASSERT_FALSE(dirs.empty());
  if (!first.empty()) EXPECT_EQ(dirs.front(), first);
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), "/usr/local/cuda/bin"), dirs.end());
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), "/opt/rocm/llvm/bin"), dirs.end());
}

TEST(FindDisassembler, TakesTheFirstNameThenTheFirstDirectory) {
  testing::TempDir first, second;
  std::ofstream(first / "llvm-objdump") << "not executable";
  FakeTool(first / "llvm-objdump-14");
  FakeTool(second / "llvm-objdump-15");
  EXPECT_EQ(FindDisassembler("amd", {first.path(), second.path()}).value_or(""), second / "llvm-objdump-15");
  FakeTool(second / "llvm-objdump");
  EXPECT_EQ(FindDisassembler("amd", {first.path(), second.path()}).value_or(""), second / "llvm-objdump");
  FakeTool(first / "cuobjdump");
  EXPECT_EQ(FindDisassembler("nvidia", {first.path(), second.path()}).value_or(""), first / "cuobjdump");
}

TEST(DisassembleKernels, RunsTheVendorsToolOnTheMatchingKernels) {
  testing::TempDir tools;
  FakeTool(tools / "cuobjdump");
  FakeTool(tools / "llvm-objdump");
  Disassembled d = Disassemble({kCubin, kAmdObject}, "_Z1", {tools.path()});
  EXPECT_TRUE(d.done);
  EXPECT_TRUE(d.errors.empty()) << d.errors[0];
  // One run per NVIDIA kernel, in file order.
  std::string cubin = " " + kCubin + "\n";
  EXPECT_EQ(Arguments(tools / "cuobjdump"), "-sass -fun _Z10big_sharedPfPKf" + cubin +
                                                "-sass -fun _Z11bounded_addPfPKfi" + cubin +
                                                "-sass -fun _Z17register_pressurePdPKdi" + cubin);
  // One run for an AMD file, the descriptors' ".kd" taken off.
  EXPECT_EQ(Arguments(tools / "llvm-objdump"),
            "-d --mcpu=gfx1030 --disassemble-symbols=_Z13bounded_saxpyfPKfPfi,_Z11lds_reversePKfPf,"
            "_Z17scratch_histogramPKiPii " +
                kAmdObject + "\n");
}

TEST(DisassembleKernels, ReportsEachFileItCannotDoAndGoesOn) {
  testing::TempDir tools;
  FakeTool(tools / "cuobjdump", /*status=*/3);
  std::string self = core::ReadFile("/proc/self/cmdline", 4096).value_or("");
  self.resize(self.find('\0') == std::string::npos ? self.size() : self.find('\0'));
  Disassembled d = Disassemble({"/nonexistent", self, kCubin, kCubin}, "add", {tools.path()});
  EXPECT_FALSE(d.done);
  ASSERT_EQ(d.errors.size(), 2u);
  EXPECT_EQ(d.errors[0], "/nonexistent: No such file or directory");
  EXPECT_EQ(d.errors[1], self + ": no GPU code objects to disassemble");
  // The failing tool ran for both cubins and said why itself.
  EXPECT_EQ(Arguments(tools / "cuobjdump"),
            "-sass -fun _Z11bounded_addPfPKfi " + kCubin + "\n-sass -fun _Z11bounded_addPfPKfi " + kCubin + "\n");

  Disassembled none = Disassemble({kCubin}, "no_such_kernel", {tools.path()});
  EXPECT_FALSE(none.done);
  EXPECT_EQ(none.errors, std::vector<std::string>{kCubin + ": no kernel matches 'no_such_kernel' "
                                                           "(`gputriage inspect --kernel` lists them)"});
}

TEST(DisassembleKernels, AMissingToolStopsAtOnce) {
  testing::TempDir empty;
  Disassembled d = Disassemble({kCubin, kAmdObject}, "add", {empty.path()});
  EXPECT_FALSE(d.done);
  ASSERT_EQ(d.errors.size(), 1u);
  EXPECT_EQ(d.errors[0].rfind("--disasm needs cuobjdump", 0), 0u) << d.errors[0];
}

}  // namespace
}  // namespace gputriage::inspect
