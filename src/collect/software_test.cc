#include "collect/software.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "capture_tree.h"
#include "core/text.h"

namespace gputriage::collect {
namespace {

core::OsView H200Root() { return core::OsView::Rooted(std::string(GT_FIXTURES_DIR) + "/h200-root").value(); }

// Independent count of installed packages in a dpkg status file whose name matches `pred`.
size_t CountInstalled(const std::string& status, bool (*pred)(std::string_view)) {
  size_t count = 0;
  std::string name;
  bool installed = false;
  const std::string text = status + "\n";
  for (std::string_view line : core::SplitLines(text)) {
    if (line.starts_with("Package: ")) name = std::string(line.substr(9));
    if (line.starts_with("Status: ")) installed = line.ends_with(" installed");
    if (line.empty()) {
      if (!name.empty() && installed && pred(name)) ++count;
      name.clear();
      installed = false;
    }
  }
  return count;
}

TEST(SoftwareTest, CapturedH200Tree) {
  core::Section section = CollectSoftware(H200Root(), SoftwareOptions{});
  const core::Json& sw = section.data;
  EXPECT_EQ(sw["kernel_modules"]["nvidia"]["version"], "580.159.04");
  EXPECT_EQ(sw["kernel_modules"]["nvidia"]["loaded"], true);
  EXPECT_TRUE(sw["kernel_modules"].contains("nvidia_uvm"));
  EXPECT_FALSE(sw["kernel_modules"].contains("amdgpu"));
  std::string status = H200Root().TryReadFile("/var/lib/dpkg/status", 64u << 20).value();
  size_t cuda = CountInstalled(status, [](std::string_view n) { return n.starts_with("cuda-"); });
  size_t listed_cuda = 0;
  for (const core::Json& p : sw["packages"]) {
    if (p["name"].get<std::string>().starts_with("cuda-")) ++listed_cuda;
    EXPECT_EQ(p["source"], "dpkg");
  }
  EXPECT_GT(cuda, 10u);
  EXPECT_EQ(listed_cuda, cuda);
  // /usr/local/cuda is an absolute link into /etc/alternatives, which the capture lacks.
  ASSERT_EQ(sw["cuda"]["installations"].size(), 2u);
  EXPECT_EQ(sw["cuda"]["installations"][0]["link_target"], "/etc/alternatives/cuda");
  EXPECT_FALSE(sw["cuda"]["installations"][0].contains("version"));
}

// A partial CUDA install (container images install some cuda-* packages, without version.json):
// the release comes from the CUDA runtime's file name, and version_source says so; a captured
// tree's nvcc is never run.
TEST(SoftwareTest, CudaReleaseFromTheRuntimeLibraryWhenNoVersionFile) {
  testing::TempTree tree;
  tree.Write("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96", "");
  tree.Link("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13", "libcudart.so.13.0.96");
  tree.Link("/usr/local/cuda-13.0/lib64", "targets/x86_64-linux/lib");
  tree.Write("/usr/local/cuda-13.0/bin/nvcc", "#!/bin/sh\necho must not run >&2\nexit 1\n");
  tree.Write("/usr/local/cuda-12.4/version.json", R"({"cuda" : {"name" : "CUDA SDK", "version" : "12.4.1"}})");
  tree.MakeDir("/usr/local/cuda-11.0");
  core::Section section = CollectSoftware(core::OsView::Rooted(tree.root()).value(), SoftwareOptions{});
  std::map<std::string, core::Json> by_path;
  for (const core::Json& i : section.data["cuda"]["installations"]) by_path[i["path"].get<std::string>()] = i;
  ASSERT_EQ(by_path.size(), 3u) << section.data["cuda"].dump();
  EXPECT_EQ(by_path["/usr/local/cuda-13.0"]["version"], "13.0");
  EXPECT_EQ(by_path["/usr/local/cuda-13.0"]["version_source"], "lib64/libcudart.so.13.0.96");
  EXPECT_EQ(by_path["/usr/local/cuda-12.4"]["version"], "12.4.1");
  EXPECT_EQ(by_path["/usr/local/cuda-12.4"]["version_source"], "version.json");
  EXPECT_FALSE(by_path["/usr/local/cuda-11.0"].contains("version")) << "nothing says it: no version";
}

TEST(SoftwareTest, DpkgStatusKeepsOnlyInstalledGpuPackages) {
  core::Json packages = ParseDpkgStatus(
      "Package: rocm-core\nStatus: install ok installed\nVersion: 6.3.3.60303-74~22.04\n\n"
      "Package: bash\nStatus: install ok installed\nVersion: 5.2\n\n"
      "Package: cuda-toolkit-12-4\nStatus: deinstall ok config-files\nVersion: 12.4.1-1\n\n"
      "Package: libnccl2\nStatus: install ok installed\nVersion: 2.21.5-1+cuda12.4\n");
  ASSERT_EQ(packages.size(), 2u) << packages.dump();
  EXPECT_EQ(packages[0]["name"], "rocm-core");
  EXPECT_EQ(packages[0]["version"], "6.3.3.60303-74~22.04");
  EXPECT_EQ(packages[1]["name"], "libnccl2");
  EXPECT_TRUE(ParseDpkgStatus(std::string("\xff\x00Package", 9)).empty());
}

TEST(SoftwareTest, CudaVersionFiles) {
  EXPECT_EQ(ParseCudaVersion(R"({"cuda" : {"name" : "CUDA SDK", "version" : "13.0.1"}, "cuda_cccl": {}})"), "13.0.1");
  EXPECT_EQ(ParseCudaVersion("CUDA Version 11.8.0\n"), "11.8.0");
  EXPECT_EQ(ParseCudaVersion("{}"), std::nullopt);
}

TEST(SoftwareTest, LibrariesOnTheLoaderPath) {
  testing::TempDir dir;
  testing::WriteFile(dir.path(), "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  testing::WriteFile(dir.path(), "/etc/ld.so.conf.d/nvidia.conf", "/usr/local/nvidia/lib64\n");
  testing::WriteFile(dir.path(), "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04", "");
  testing::WriteFile(dir.path(), "/usr/local/nvidia/lib64/libcuda.so.580.159.04", "");
  testing::WriteFile(dir.path(), "/usr/local/nvidia/lib64/libfoo.so.1", "");
  std::filesystem::create_symlink("libcuda.so.580.159.04", dir.path() + "/usr/local/nvidia/lib64/libcuda.so.1");
  core::Section section = CollectSoftware(core::OsView::Rooted(dir.path()).value(), {});
  const core::Json& libs = section.data["libraries"];
  ASSERT_EQ(libs.size(), 2u) << libs.dump(2);
  EXPECT_EQ(libs[0]["name"], "libcuda");
  EXPECT_EQ(libs[0]["version"], "580.159.04");
  EXPECT_EQ(libs[0]["path"], "/usr/local/nvidia/lib64/libcuda.so.580.159.04");
  EXPECT_EQ(libs[1]["name"], "libnvidia-ml");
}

}  // namespace
}  // namespace gputriage::collect

namespace gputriage::collect {
namespace {

// The torch venv of the H200 test machine: its site-packages listing and torch/version.py.
TEST(SoftwareTest, PythonPackagesFromACapturedVenv) {
  testing::TempDir dir;
  const std::string site = "/opt/torch/.venv/lib/python3.12/site-packages";
  std::string listing = testing::ReadFixture("python/h200-site-packages-listing.txt");
  size_t gpu_dists = 0;
  for (std::string_view entry : core::SplitLines(listing)) {
    if (entry.empty()) continue;
    std::filesystem::create_directories(dir.path() + site + "/" + std::string(entry));
    gpu_dists += entry.starts_with("nvidia_") || entry.starts_with("torch-") || entry.starts_with("triton-");
  }
  testing::WriteFile(dir.path(), site + "/torch/version.py",
                     testing::ReadFixture("python/torch-2.11.0+cu130-version.py.txt"));
  SoftwareOptions options;
  options.site_dirs = {site};
  core::Section section = CollectSoftware(core::OsView::Rooted(dir.path()).value(), options);
  const core::Json& python = section.data["python"];
  EXPECT_EQ(python["torch"]["version"], "2.11.0+cu130");
  EXPECT_EQ(python["torch"]["cuda"], "13.0");
  EXPECT_FALSE(python["torch"].contains("hip"));  // `hip: Optional[str] = None`
  EXPECT_EQ(python["torch"]["git_version"], "70d99e998b4955e0049d13a98d77ae1b14db1f45");
  size_t listed = 0;
  bool torch_seen = false;
  for (const core::Json& p : python["packages"]) {
    std::string name = p["name"];
    listed += name.starts_with("nvidia_") || name == "torch" || name == "triton";
    if (name == "torch") torch_seen = p["version"] == "2.11.0";  // dist-info drops the local tag
  }
  EXPECT_TRUE(torch_seen);
  EXPECT_EQ(listed, gpu_dists);
}

TEST(SoftwareTest, TorchVersionPyVariants) {
  core::Json rocm = ParseTorchVersionPy("__version__ = '2.4.0+rocm6.1'\ncuda = None\nhip = '6.1.40091-a8dbc0c19'\n");
  EXPECT_EQ(rocm["version"], "2.4.0+rocm6.1");
  EXPECT_EQ(rocm["hip"], "6.1.40091-a8dbc0c19");
  EXPECT_FALSE(rocm.contains("cuda"));
  EXPECT_TRUE(ParseTorchVersionPy("\xff\xfe garbage = = '").empty());
}

}  // namespace
}  // namespace gputriage::collect

namespace gputriage::collect {
namespace {

// "[pip3] numpy==2.5.2" -> ("numpy", "2.5.2"); "[conda] numpy   1.26.4   pypi_0   pypi" -> ("numpy",
// "1.26.4"); other lines -> nullopt.
std::optional<std::pair<std::string, std::string>> CollectEnvPackage(std::string_view line) {
  for (std::string_view tag : {"[pip3] ", "[pip] ", "[conda] "}) {
    if (!line.starts_with(tag)) continue;
    line.remove_prefix(tag.size());
    if (size_t eq = line.find("=="); eq != std::string_view::npos) {
      return std::pair{std::string(line.substr(0, eq)), std::string(line.substr(eq + 2))};
    }
    auto fields = core::SplitWhitespace(line);
    if (fields.size() >= 2 && fields[1].find_first_of("0123456789") == 0) {
      return std::pair{std::string(fields[0]), std::string(fields[1])};
    }
  }
  return std::nullopt;
}

std::string Normalized(std::string name) {
  name = core::ToLower(name);
  for (char& c : name) {
    if (c == '-' || c == '.') c = '_';
  }
  return name;
}

bool IsLinter(const std::string& name) {
  return name.find("mypy") != std::string::npos || name.find("flake8") != std::string::npos;
}

// Every package `python -m torch.utils.collect_env` lists under "Versions of relevant libraries"
// in the captured outputs (mypy and flake8 aside) is one the snapshot keeps.
TEST(SoftwareTest, KeepsWhatCollectEnvLists) {
  size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(GT_FIXTURES_DIR) + "/torch-collect-env")) {
    std::string text = testing::ReadCapture("torch-collect-env/" + entry.path().filename().string());
    for (std::string_view line : core::SplitLines(text)) {
      auto package = CollectEnvPackage(line);
      if (!package || IsLinter(package->first)) continue;
      EXPECT_TRUE(IsGpuPythonDistribution(Normalized(package->first))) << entry.path().filename() << ": " << line;
      ++checked;
    }
  }
  EXPECT_GT(checked, 60u);
  for (const char* other : {"requests", "pillow", "absl_py", "mypy_extensions", "flake8"}) {
    EXPECT_FALSE(IsGpuPythonDistribution(other)) << other;
  }
}

// The H200 torch venv: what collect_env printed there, found again in its site-packages.
TEST(SoftwareTest, VenvPackagesMatchCollectEnvOnTheH200) {
  testing::TempDir dir;
  const std::string site = "/opt/torch/.venv/lib/python3.12/site-packages";
  const std::string listing = testing::ReadFixture("python/h200-site-packages-listing.txt");  // the lines point into it
  for (std::string_view entry : core::SplitLines(listing)) {
    if (!entry.empty()) std::filesystem::create_directories(dir.path() + site + "/" + std::string(entry));
  }
  SoftwareOptions options;
  options.site_dirs = {site};
  core::Section section = CollectSoftware(core::OsView::Rooted(dir.path()).value(), options);
  std::map<std::string, std::string> listed;
  for (const core::Json& p : section.data["python"]["packages"]) listed[p["name"]] = p["version"];
  std::string text = testing::ReadCapture("torch-collect-env/collect-env-h200-cuda13.0-torch2.11.txt");
  size_t checked = 0;
  for (std::string_view line : core::SplitLines(text)) {
    auto package = CollectEnvPackage(line);
    if (!package || IsLinter(package->first)) continue;
    EXPECT_EQ(listed[Normalized(package->first)], package->second) << line;
    ++checked;
  }
  EXPECT_EQ(checked, 29u);  // 30 [pip3] lines, mypy_extensions aside
  EXPECT_EQ(listed["numpy"], "2.5.2");
}

}  // namespace
}  // namespace gputriage::collect
