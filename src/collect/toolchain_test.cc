#include "collect/toolchain.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "capture_tree.h"
#include "collect/version_cache.h"
#include "core/file.h"
#include "core/subprocess.h"
#include "core/text.h"

namespace gputriage::collect {
namespace {

// Real `--version` outputs, run on the gputriage development machine (Debian 12), 2026-12-04.
constexpr std::string_view kDebianGcc =
    "gcc (Debian 12.2.0-14+deb12u1) 12.2.0\n"
    "Copyright (C) 2022 Free Software Foundation, Inc.\n"
    "This is free software; see the source for copying conditions.  There is NO\n"
    "warranty; not even for MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.\n\n";
constexpr std::string_view kDebianGxx = "g++ (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software\n";
constexpr std::string_view kDebianClang =
    "Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu\nThread model: posix\nInstalledDir: /usr/bin\n";
constexpr std::string_view kDebianClang15 =
    "Debian clang version 15.0.6\nTarget: x86_64-pc-linux-gnu\nThread model: posix\nInstalledDir: /usr/bin\n";
constexpr std::string_view kNvcc13 =
    "nvcc: NVIDIA (R) Cuda compiler driver\n"
    "Copyright (c) 2005-2025 NVIDIA Corporation\n"
    "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\n"
    "Cuda compilation tools, release 13.0, V13.0.88\n"
    "Build cuda_13.0.r13.0/compiler.36424714_0\n";
// Debian's hipcc (ROCm 5.2) prints the HIP version, then its clang's --version; the traceback of
// rocm_agent_enumerator (no /sys/class/kfd here) goes to stderr.
constexpr std::string_view kDebianHipcc =
    "HIP version: 5.2.21153-0\n"
    "Debian clang version 15.0.6\nTarget: x86_64-pc-linux-gnu\nThread model: posix\nInstalledDir: /usr/bin\n";
constexpr std::string_view kCmake =
    "cmake version 3.25.1\n\nCMake suite maintained and supported by Kitware (kitware.com/cmake).\n";

TEST(ToolchainTest, VersionsFromRealOutputs) {
  EXPECT_EQ(ParseToolVersion("gcc", kDebianGcc), (ToolVersion{"12.2.0", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"}));
  EXPECT_EQ(ParseToolVersion("gcc-12", kDebianGcc)->version, "12.2.0");
  EXPECT_EQ(ParseToolVersion("g++", kDebianGxx), (ToolVersion{"12.2.0", "g++ (Debian 12.2.0-14+deb12u1) 12.2.0"}));
  EXPECT_EQ(ParseToolVersion("clang", kDebianClang), (ToolVersion{"14.0.6", "Debian clang version 14.0.6"}));
  EXPECT_EQ(ParseToolVersion("clang++-15", kDebianClang15)->version, "15.0.6");
  EXPECT_EQ(ParseToolVersion("nvcc", kNvcc13),
            (ToolVersion{"13.0.88", "Cuda compilation tools, release 13.0, V13.0.88"}));
  EXPECT_EQ(ParseToolVersion("hipcc", kDebianHipcc), (ToolVersion{"5.2.21153-0", "HIP version: 5.2.21153-0"}));
  EXPECT_EQ(ParseToolVersion("cmake", kCmake), (ToolVersion{"3.25.1", "cmake version 3.25.1"}));
}

// collect_env prints these lines without the program name ("GCC version: (Ubuntu ...) 13.3.0",
// "Clang version: 17.0.0 (...)", "CMake version: version 4.4.3"); the program's own first line
// is that text after "gcc ", "clang version " (ROCm's clang says "AMD clang version") or "cmake ".
TEST(ToolchainTest, VersionsFromCollectEnvLines) {
  // The H200 test machine (tests/fixtures/torch-collect-env/collect-env-h200-cuda13.0-torch2.11.txt).
  EXPECT_EQ(ParseToolVersion("gcc", "gcc (Ubuntu 13.3.0-6ubuntu2~24.04.1) 13.3.0\n")->version, "13.3.0");
  EXPECT_EQ(ParseToolVersion("cmake", "cmake version 4.4.3\n")->version, "4.4.3");
  // collect-env-rocm4.2-mi50-vega20-torch1.9.0-legacy-no-cpu-section.txt: a date after the version.
  EXPECT_EQ(ParseToolVersion("gcc", "gcc (GCC) 4.8.5 20150623 (Red Hat 4.8.5-44)\n")->version, "4.8.5");
  // collect-env-vllm-variant-mi300x-rocm6.1-torch2.4.1-no-cpu-section.txt: ROCm's clang.
  EXPECT_EQ(ParseToolVersion("amdclang++",
                             "AMD clang version 17.0.0 (https://github.com/RadeonOpenCompute/"
                             "llvm-project roc-6.1.0 24103 7db7f5e49612030319346f900c08f474b1f9023a)\n")
                ->version,
            "17.0.0");
}

TEST(ToolchainTest, NoVersionIsInvented) {
  EXPECT_EQ(ParseToolVersion("nvcc", kDebianGcc), std::nullopt);     // the wrong tool's output
  EXPECT_EQ(ParseToolVersion("gcc", ""), std::nullopt);              // nothing printed
  EXPECT_EQ(ParseToolVersion("ld", "GNU ld 2.40\n"), std::nullopt);  // not a tool we know
  EXPECT_EQ(ParseToolVersion("hipcc", "HIP version:\n"), std::nullopt);
  EXPECT_EQ(ParseToolVersion("clang", "clang: error: no input files\n"), std::nullopt);
}

TEST(ToolchainTest, RootedViewListsPathsWithoutRunningThem) {
  testing::TempDir dir;
  for (const char* path : {"/usr/bin/gcc-12", "/usr/bin/clang++", "/usr/bin/clang-format", "/usr/bin/cmake",
                           "/usr/local/cuda-13.0/bin/nvcc", "/opt/rocm-6.2.0/bin/hipcc",
                           "/opt/rocm-6.2.0/bin/amdclang++", "/opt/rocm-6.2.0/llvm/bin/clang"}) {
    // A canary: were the rooted view's programs run, "99.0.0" would show up as a version.
    testing::WriteFile(dir.path(), path, "#!/bin/sh\necho 'gcc (canary, must not run) 99.0.0'\n");
  }
  // A venv on PATH with the cmake wheel (as on the H200 test machine), and /usr/bin again.
  testing::WriteFile(dir.path(), "/opt/torch/.venv/bin/cmake", "#!/bin/sh\n");
  ToolchainOptions options;
  options.extra_dirs = {"/opt/torch/.venv/bin", "relative/bin", "/usr/bin", "/nonexistent/bin",
                        "/usr/local/cuda-13.0/bin"};
  core::Json software;
  core::Section section;
  CollectToolchain(core::OsView::Rooted(dir.path()).value(), options, software, section);
  std::vector<std::string> paths;
  for (const core::Json& c : software["compilers"]) {
    paths.push_back(c["path"]);
    EXPECT_FALSE(c.contains("version")) << c.dump();
  }
  // The nvcc of the CUDA directory on PATH once, where PATH lists it.
  EXPECT_EQ(paths, (std::vector<std::string>{"/usr/bin/clang++", "/usr/bin/gcc-12", "/usr/local/cuda-13.0/bin/nvcc",
                                             "/opt/rocm-6.2.0/bin/hipcc", "/opt/rocm-6.2.0/bin/amdclang++",
                                             "/opt/rocm-6.2.0/llvm/bin/clang"}));
  EXPECT_EQ(software["tools"], core::Json::parse(R"([{"name": "cmake", "path": "/usr/bin/cmake"},
                                                     {"name": "cmake", "path": "/opt/torch/.venv/bin/cmake"}])"));
  EXPECT_TRUE(section.not_collected.empty());
}

// A real program on PATH, run through the version cache: the second collection takes the version
// from the cache (the program's run counter stays at one), a changed program is run again, and a
// malformed cache file is read as an empty one and rewritten.
TEST(ToolchainTest, VersionCacheRunsAProgramAgainOnlyWhenItsFileChanges) {
  testing::TempDir dir;
  std::string bin = dir.path() + "/bin";
  std::string counter = dir.path() + "/runs";
  auto write_cmake = [&](const std::string& version) {
    std::string path = bin + "/cmake";
    std::remove(path.c_str());  // a new file, as an upgrade writes one
    testing::WriteFile(dir.path(), "/bin/cmake",
                       "#!/bin/sh\necho run >> '" + counter + "'\necho 'cmake version " + version + "'\n");
    ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  };
  auto runs = [&]() {
    auto text = core::ReadFile(counter, 1 << 16);
    return text.ok() ? core::SplitLines(*text).size() : 0u;
  };
  auto cmake_version = [&]() {
    ToolchainOptions options;
    options.extra_dirs = {bin};
    options.version_cache = dir.path() + "/cache/tool-versions.json";
    core::Json software;
    core::Section section;
    CollectToolchain(core::OsView::Live(), options, software, section);
    for (const core::Json& t : software["tools"]) {
      if (t["path"] == bin + "/cmake") return t.value("version", std::string("none"));
    }
    return std::string("missing");
  };
  write_cmake("3.99.1");
  EXPECT_EQ(cmake_version(), "3.99.1");
  EXPECT_EQ(runs(), 1u);
  EXPECT_EQ(cmake_version(), "3.99.1");
  EXPECT_EQ(runs(), 1u) << "an unchanged program is not run again";
  write_cmake("3.99.2");
  EXPECT_EQ(cmake_version(), "3.99.2");
  EXPECT_EQ(runs(), 2u);
  std::ofstream(dir.path() + "/cache/tool-versions.json") << "{\"format\": 1, \"programs\": [\x01";
  EXPECT_EQ(cmake_version(), "3.99.2");
  EXPECT_EQ(runs(), 3u);
  EXPECT_EQ(cmake_version(), "3.99.2");
  EXPECT_EQ(runs(), 3u) << "the malformed cache was rewritten";
}

// Without a cache every collection runs the program; a cache in a directory that cannot be
// created changes nothing but the time.
TEST(ToolchainTest, WithoutAWritableCacheEveryCollectionRunsTheProgram) {
  testing::TempDir dir;
  std::string counter = dir.path() + "/runs";
  testing::WriteFile(dir.path(), "/bin/cmake",
                     "#!/bin/sh\necho run >> '" + counter + "'\necho 'cmake version 3.1.4'\n");
  ASSERT_EQ(::chmod((dir.path() + "/bin/cmake").c_str(), 0755), 0);
  testing::WriteFile(dir.path(), "/file", "not a directory");
  for (std::optional<std::string> cache :
       {std::optional<std::string>(), std::optional<std::string>(dir.path() + "/file/sub/tool-versions.json")}) {
    for (int i = 0; i < 2; ++i) {
      ToolchainOptions options;
      options.extra_dirs = {dir.path() + "/bin"};
      options.version_cache = cache;
      core::Json software;
      core::Section section;
      CollectToolchain(core::OsView::Live(), options, software, section);
      EXPECT_NE(software.dump().find("3.1.4"), std::string::npos);
    }
  }
  auto text = core::ReadFile(counter, 1 << 16);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(core::SplitLines(*text).size(), 4u);
}

// The live machine: gcc's version as gcc itself reports it through another option.
TEST(ToolchainTest, LiveGccVersionMatchesDumpfullversion) {
  core::Json software;
  core::Section section;
  CollectToolchain(core::OsView::Live(), {}, software, section);
  const core::Json* gcc = nullptr;
  for (const core::Json& c : software["compilers"]) {
    if (c["path"] == "/usr/bin/gcc") gcc = &c;
  }
  if (gcc == nullptr) GTEST_SKIP() << "no /usr/bin/gcc on this machine";
  auto dump = core::RunWithTimeout({"/usr/bin/gcc", "-dumpfullversion"}, {});
  ASSERT_TRUE(dump.ok());
  EXPECT_EQ(gcc->value("version", ""), std::string(core::Trim(dump->stdout_data))) << gcc->dump();
  EXPECT_TRUE(gcc->value("version_line", "").starts_with("gcc ")) << gcc->dump();
}

}  // namespace
}  // namespace gputriage::collect
