// Core files as users read them: the core `gputriage run --core` writes, opened with gdb and
// eu-stack (elfutils) next to the kernel's core of the same crash, and `gputriage analyze CORE`
// on cores whose executable moved or whose file was cut short.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "core/model.h"
#include "core/subprocess.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

const std::string kCrasher = std::string(GT_CRASHERS_DIR) + "/crasher";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

core::ProcessOutcome RunOrFail(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(120000);
  ro.max_stderr_bytes = 1 << 20;
  ro.extra_env = std::move(env);
  auto outcome = core::RunWithTimeout(args, ro);
  if (!outcome.ok()) {
    ADD_FAILURE() << outcome.error().message;
    return {};
  }
  return *outcome;
}

bool HaveTool(const std::string& name) {
  core::RunOptions ro;
  auto found = core::RunWithTimeout({"sh", "-c", "command -v " + name}, ro);
  return found.ok() && found->exit_code == 0;
}

// The libraries gdb lists under "info sharedlibrary" (the last column of lines that start with
// an address).
std::set<std::string> GdbLibraries(const std::string& gdb_output) {
  std::set<std::string> libraries;
  std::regex line(R"(^0x[0-9a-f]+\s+0x[0-9a-f]+\s+\S+\s+(?:\(\*\)\s+)?(/\S+)$)");
  std::istringstream in(gdb_output);
  for (std::string text; std::getline(in, text);) {
    std::smatch m;
    if (std::regex_match(text, m, line)) libraries.insert(fs::path(m[1].str()).filename().string());
  }
  return libraries;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// eu-readelf -n: the notes as "OWNER TYPE SIZE" lines, in file order.
std::vector<std::string> NoteList(const std::string& core) {
  std::vector<std::string> notes;
  core::ProcessOutcome out = RunOrFail({"eu-readelf", "-n", core});
  std::regex line(R"(^\s+(CORE|LINUX)\s+(\d+)\s+(.+)$)");
  std::istringstream in(out.stdout_data);
  for (std::string text; std::getline(in, text);) {
    std::smatch m;
    if (std::regex_match(text, m, line)) {
      std::string type = m[3].str();
      // NT_FILE's size depends on the paths; the others are fixed by the kernel and the CPU.
      notes.push_back(m[1].str() + " " + type + (type == "FILE" ? "" : " " + m[2].str()));
    }
  }
  return notes;
}

class CoreFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gt-corefile-it-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    tmp_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  // `gputriage run --core -- crasher MODE`: the core in the bundle ("" when none was written).
  std::string RunCore(const std::string& mode) {
    std::string bundles = tmp_ / "bundles";
    RunOrFail({GT_GPUTRIAGE_BIN, "run", "--core", "--no-snapshot", "--bundle-dir", bundles, "--", kCrasher, mode},
              {"GPUTRIAGE_HOME=" + (tmp_ / "home").string()});
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(bundles, ec)) {
      if (fs::exists(entry.path() / "core")) return (entry.path() / "core").string();
    }
    return "";
  }

  // The kernel's core of `crasher MODE`, when core_pattern writes a plain file ("" otherwise;
  // `why` says why not).
  std::string KernelCore(const std::string& mode, std::string* why) {
    std::string pattern = ReadAll("/proc/sys/kernel/core_pattern");
    if (pattern.empty() || pattern[0] == '|' || pattern.find('/') != std::string::npos) {
      *why = "core_pattern does not write a core into the working directory: " + pattern;
      return "";
    }
    std::string dir = tmp_ / "kcore";
    fs::create_directories(dir);
    RunOrFail({"sh", "-c", "ulimit -c unlimited; cd " + dir + " && exec " + kCrasher + " " + mode});
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename().string().rfind("core", 0) == 0) return entry.path().string();
    }
    *why = "the kernel wrote no core (core_pattern '" + pattern + "')";
    return "";
  }

  fs::path tmp_;
};

std::string GdbBatch(const std::string& exe, const std::string& core) {
  core::ProcessOutcome out = RunOrFail({"gdb", "-batch", "-nx", "-ex", "info sharedlibrary", "-ex", "bt", exe, core});
  return out.stdout_data + out.stderr_tail;
}

// gdb reads our core as it reads the kernel's: it finds the shared libraries (through NT_AUXV,
// the executable's .dynamic and r_debug in the dumped memory), names the libc frames of an
// abort(), and warns no more than on the kernel's core (the XSAVE area's size: NT_X86_XSTATE and
// NT_X86_XSAVE_LAYOUT). The notes are the kernel's, in its order, at its sizes. Failed before:
// gdb said "No shared libraries loaded at this time." and showed the libc frames as ??.
TEST_F(CoreFileTest, GdbAndEuStackReadOurCoreAsTheKernels) {
  if (!HaveTool("gdb")) GTEST_SKIP() << "gdb is not installed (scripts/install-deps installs it)";
  if (!HaveTool("eu-stack")) GTEST_SKIP() << "eu-stack is not installed (package elfutils; scripts/install-deps)";
  std::string ours = RunCore("assert");
  ASSERT_NE(ours, "") << "gputriage run --core wrote no core";

  std::string gdb = GdbBatch(kCrasher, ours);
  EXPECT_EQ(gdb.find("No shared libraries loaded"), std::string::npos) << gdb;
  std::set<std::string> libraries = GdbLibraries(gdb);
  EXPECT_TRUE(libraries.count("libc.so.6")) << gdb;
  EXPECT_TRUE(libraries.count("libcrashlib.so")) << gdb;
  EXPECT_TRUE(std::any_of(libraries.begin(), libraries.end(), [](const std::string& l) {
    return l.rfind("ld-linux", 0) == 0;
  })) << gdb;
  EXPECT_TRUE(std::regex_search(gdb, std::regex(R"(#\d+ .* in (__GI_)?abort \()"))) << gdb;
  EXPECT_TRUE(std::regex_search(gdb, std::regex(R"(#\d+ .* in check_count \()"))) << gdb;
  EXPECT_FALSE(std::regex_search(gdb, std::regex(R"(#\d+ .* \?\? \()"))) << gdb;

  core::ProcessOutcome stack = RunOrFail({"eu-stack", "--core", ours, "-e", kCrasher});
  EXPECT_EQ(stack.exit_code, 0) << stack.stderr_tail;
  EXPECT_TRUE(std::regex_search(stack.stdout_data, std::regex(R"(#\d+\s+0x[0-9a-f]+ (__GI_)?abort\b)")))
      << stack.stdout_data;
  EXPECT_NE(stack.stdout_data.find(" check_count"), std::string::npos) << stack.stdout_data;

  std::string why;
  std::string kernel = KernelCore("assert", &why);
  if (kernel.empty()) {
    std::cerr << "not compared with a kernel core: " << why << "\n";
    return;
  }
  std::string kernel_gdb = GdbBatch(kCrasher, kernel);
  EXPECT_EQ(GdbLibraries(gdb), GdbLibraries(kernel_gdb)) << gdb << "\n---- kernel core:\n" << kernel_gdb;
  EXPECT_LE(Count(gdb, "warning:"), Count(kernel_gdb, "warning:")) << gdb << "\n---- kernel core:\n" << kernel_gdb;
  // Every note the kernel wrote, in its order and size; ours may add NT_X86_XSAVE_LAYOUT (type
  // 517), which kernels before 6.12 do not write.
  std::vector<std::string> ours_notes = NoteList(ours), kernel_notes = NoteList(kernel);
  ours_notes.erase(std::remove_if(ours_notes.begin(), ours_notes.end(),
                                  [&](const std::string& n) {
                                    return n.find(": 517") != std::string::npos &&
                                           std::find(kernel_notes.begin(), kernel_notes.end(), n) == kernel_notes.end();
                                  }),
                   ours_notes.end());
  EXPECT_EQ(ours_notes, kernel_notes);
}

}  // namespace
}  // namespace gputriage
