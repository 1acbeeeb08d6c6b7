#include "checks/library_checks.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

namespace gputriage::checks {
namespace {

const catalog::LibraryTables& Tables() {
  auto t = catalog::BuiltinLibraryTables();
  EXPECT_TRUE(t.ok());
  return **t;
}

// The H200's versions (snapshot of 2026-12-04: driver 580.159.04, torch 2.11.0+cu130, glibc
// 2.39, GLIBCXX_3.4.33) with the driver swapped for an R575 one: the CUDA 13 wheel's driver
// floor is violated; with the real driver nothing is.
core::Snapshot H200(const std::string& driver) {
  core::Snapshot s;
  s.software = core::Software{};
  s.software->nvidia = core::NvidiaSoftware{};
  s.software->nvidia->driver_version = driver;
  s.software->python = core::PythonSoftware{};
  s.software->python->torch = core::TorchInstall{};
  s.software->python->torch->version = "2.11.0+cu130";
  s.software->python->torch->cuda = "13.0";
  s.software->glibc = core::Glibc{};
  s.software->glibc->version = "2.39";
  s.software->libstdcxx = core::Libstdcxx{};
  s.software->libstdcxx->glibcxx = "GLIBCXX_3.4.33";
  return s;
}

TEST(LibraryChecks, VersionMatrixOnTheSnapshotsVersions) {
  std::map<std::string, std::string> v = catalog::SnapshotVersions(H200("580.159.04"));
  EXPECT_EQ(v["torch"], "2.11.0");
  EXPECT_EQ(v["torch-cuda"], "13.0");
  EXPECT_EQ(v["libstdcxx"], "3.4.33");
  EXPECT_TRUE(LibraryChecks(H200("580.159.04"), Tables(), false).empty());
  std::set<std::string> ids;
  for (const core::Finding& f : LibraryChecks(H200("575.57.08"), Tables(), false)) ids.insert(f.id);
  EXPECT_TRUE(ids.count("compat.torch-cuda-13-wheel-needs-driver-580")) << ids.size();
  core::Snapshot old_glibc = H200("580.159.04");
  old_glibc.software->glibc->version = "2.17";
  ids.clear();
  for (const core::Finding& f : LibraryChecks(old_glibc, Tables(), false)) ids.insert(f.id);
  EXPECT_TRUE(ids.count("compat.torch-2-7-linux-wheels-need-glibc-2-28"));
}

// The frameworks' GPU libraries are found where their wheels put them (files named as the wheels
// name them; where doctor looks does not depend on their contents) and nothing else there is.
TEST(LibraryChecks, FrameworkLibrariesAreRoots) {
  char dir[] = "/tmp/gt-site-XXXXXX";
  std::string site = mkdtemp(dir);
  std::filesystem::create_directories(site + "/jax_plugins/xla_cuda12");
  std::filesystem::create_directories(site + "/tensorflow");
  std::ofstream(site + "/jax_plugins/xla_cuda12/xla_cuda_plugin.so") << "x";
  std::ofstream(site + "/jax_plugins/xla_cuda12/other.so") << "x";
  std::ofstream(site + "/tensorflow/libtensorflow_framework.so.2") << "x";
  core::Snapshot s;
  s.software = core::Software{};
  s.software->python = core::PythonSoftware{};
  s.software->python->site_packages = std::vector<std::string>{site};
  std::vector<std::string> roots = GpuStackRoots(s);
  EXPECT_EQ(roots, (std::vector<std::string>{site + "/jax_plugins/xla_cuda12/xla_cuda_plugin.so",
                                             site + "/tensorflow/libtensorflow_framework.so.2"}));
  std::filesystem::remove_all(site);
}

}  // namespace
}  // namespace gputriage::checks
