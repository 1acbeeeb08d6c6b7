#include "collect/software.h"

#include <re2/re2.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "collect/c_runtime.h"
#include "collect/toolchain.h"
#include "core/subprocess.h"
#include "core/text.h"

namespace gputriage::collect {

namespace {

using core::Json;

constexpr std::string_view kKernelModules[] = {"nvidia",         "nvidia_uvm", "nvidia_drm", "nvidia_modeset",
                                               "nvidia_peermem", "amdgpu",     "nouveau",    "amdxcp"};

// Libraries of the GPU stacks, by file name; group 1 is the soname stem, group 2 the version.
const RE2& GpuLibraryPattern() {
  static const RE2 kPattern(R"(^(libcuda|libcudart|libnvidia-ml|libnvidia-ptxjitcompiler|libcublas|libcublasLt|)"
                            R"(libcudnn|libnccl|libnvrtc|libcufft|libcusparse|libcusolver|libcurand|libnvJitLink|)"
                            R"(libamdhip64|libhsa-runtime64|libhsakmt|librocm_smi64|libamd_smi|librccl|librocblas|)"
                            R"(libMIOpen|libhipblaslt|libhiprtc|librocprofiler64|libroctracer64|libamd_comgr)"
                            R"()\.so\.([0-9][0-9A-Za-z.]*)$)");
  return kPattern;
}

std::string NormalizeDistName(std::string_view name) {
  std::string out = core::ToLower(name);
  for (char& c : out) {
    if (c == '-' || c == '.') c = '_';
  }
  return out;
}

void CollectModules(const core::OsView& os, Json& software) {
  Json modules = Json::object();
  std::string proc_modules = os.TryReadFile("/proc/modules").value_or("");
  for (std::string_view name : kKernelModules) {
    std::string dir = "/sys/module/" + std::string(name);
    bool in_proc = false;
    for (std::string_view line : core::SplitLines(proc_modules)) {
      auto fields = core::SplitWhitespace(line);
      if (!fields.empty() && fields[0] == name) in_proc = true;
    }
    if (!in_proc && !os.IsDirectory(dir)) continue;
    Json module = {{"loaded", in_proc || os.Exists(dir + "/initstate")}};
    if (auto v = os.ReadTrimmed(dir + "/version")) module["version"] = core::SanitizeUtf8(*v);
    if (auto v = os.ReadTrimmed(dir + "/srcversion")) module["srcversion"] = core::SanitizeUtf8(*v);
    modules[std::string(name)] = module;
  }
  software["kernel_modules"] = modules;
}

// rpm's database: /var/lib/rpm (rpmdb.sqlite since RHEL 9 / rpm 4.16, Packages (Berkeley DB)
// before, Packages.db for ndb on SUSE) or /usr/lib/sysimage/rpm (Fedora 36+, openSUSE), where
// /var/lib/rpm is then a link. Only a directory holding one of these files counts, so an empty
// /var/lib/rpm (Debian's rpm package creates it) does not make doctor start rpm.
std::optional<std::string> RpmDatabase(const core::OsView& os) {
  for (const char* dir : {"/var/lib/rpm", "/usr/lib/sysimage/rpm"}) {
    for (const char* file : {"rpmdb.sqlite", "Packages", "Packages.db"}) {
      std::string path = std::string(dir) + "/" + file;
      if (os.Exists(path)) return path;
    }
  }
  return std::nullopt;
}

void CollectRpmPackages(const core::OsView& os, Json& software, core::Section& section) {
  std::optional<std::string> database = RpmDatabase(os);
  if (!database) return;
  if (!os.live()) {
    // The captured tree's database may be in a format this machine's rpm cannot open (sqlite
    // vs Berkeley DB), and rpm --root would run this machine's rpm against another's files.
    section.NoteMissing("software.packages", fmt::format("the tree has an rpm database ({}) but rpm is run on the "
                                                         "live machine only; GPU libraries are still listed from "
                                                         "the loader path",
                                                         *database));
    return;
  }
  core::Result<RpmPackages> rpm = QueryRpmPackages();
  if (!rpm.ok()) {
    section.NoteMissing("software.packages", fmt::format("rpm database {}: {}", *database, rpm.error().message));
    return;
  }
  if (!software.contains("packages")) software["packages"] = Json::array();
  for (Json& package : rpm->packages) software["packages"].push_back(std::move(package));
  if (rpm->malformed > 0) {
    section.NoteMissing("software.packages", fmt::format("rpm -qa: {} malformed line{} skipped", rpm->malformed,
                                                         rpm->malformed == 1 ? "" : "s"));
  }
}

void CollectPackages(const core::OsView& os, Json& software, core::Section& section) {
  bool any_db = false;
  if (os.Exists("/var/lib/dpkg/status")) {
    any_db = true;
    auto status = os.TryReadFile("/var/lib/dpkg/status", 64u << 20);
    if (status.ok()) {
      software["packages"] = ParseDpkgStatus(*status);
    } else {
      section.NoteMissing("software.packages", status.error().message);
    }
  }
  if (RpmDatabase(os)) {
    any_db = true;
    CollectRpmPackages(os, software, section);
  }
  if (!any_db) {
    section.NoteMissing("software.packages", "no dpkg or rpm package database found");
  }
}

// The CUDA runtime library an installation carries, by its file name: "libcudart.so.13.0.96"
// (the runtime's own version; its major.minor is the toolkit's release).
std::optional<std::pair<std::string, std::string>> CudartFile(const core::OsView& os, const std::string& install) {
  static const RE2 kCudart(R"(libcudart\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)*))");
  for (const char* dir : {"/lib64", "/targets/x86_64-linux/lib", "/targets/sbsa-linux/lib", "/lib"}) {
    auto names = os.TryListDir(install + dir);
    if (!names.ok()) continue;
    std::string best, version;
    for (const std::string& n : *names) {
      std::string v;
      // The longest name is the real file (libcudart.so.13 and .so.13.0 are links to it).
      if (RE2::FullMatch(n, kCudart, &v) && v.size() > version.size()) {
        version = v;
        best = std::string(dir).substr(1) + "/" + n;
      }
    }
    if (!version.empty()) return std::make_pair(version, best);
  }
  return std::nullopt;
}

// The release and full version in nvcc's version output: "release 13.0, V13.0.88".
std::optional<std::pair<std::string, std::string>> ParseNvccRelease(const std::string& text) {
  static const RE2 kRelease(R"(release ([0-9]+\.[0-9]+), (V[0-9.]+))");
  std::string release, full;
  if (!RE2::PartialMatch(text, kRelease, &release, &full)) return std::nullopt;
  return std::make_pair(release, full);
}

// `nvcc --version` of a live installation (2 s at most).
std::optional<std::pair<std::string, std::string>> NvccRelease(const std::string& nvcc) {
  core::RunOptions options;
  options.timeout = std::chrono::milliseconds(2000);
  options.max_stdout_bytes = 16u << 10;
  options.max_stderr_bytes = 4u << 10;
  auto outcome = core::RunWithTimeout({nvcc, "--version"}, options);
  if (!outcome.ok() || outcome->timed_out) return std::nullopt;
  return ParseNvccRelease(outcome->stdout_data);
}

// The release the toolchain collector read from this nvcc (its version line, "Cuda compilation
// tools, release 13.0, V13.0.88"), when it ran the same file.
std::optional<std::pair<std::string, std::string>> ReleaseFromToolchain(const Json& software,
                                                                        const std::string& real_nvcc) {
  auto compilers = software.find("compilers");
  if (compilers == software.end() || !compilers->is_array()) return std::nullopt;
  for (const Json& c : *compilers) {
    if (!c.is_object() || !c.contains("path") || !c["path"].is_string() || !c.contains("version_line") ||
        !c["version_line"].is_string()) {
      continue;
    }
    std::error_code ec;
    std::string real = std::filesystem::canonical(c["path"].get<std::string>(), ec).string();
    if (ec || real != real_nvcc) continue;
    if (auto release = ParseNvccRelease(c["version_line"].get<std::string>())) return release;
  }
  return std::nullopt;
}

// /usr/local/cuda* installations and their release. An install carries version.json (CUDA 11.1
// and later) or version.txt (older); a partial install (only some cuda-* packages, as container
// images have) may carry neither: then nvcc --version (live machines only: a captured tree's
// nvcc is not run), then the CUDA runtime library's file name. version_source says which.
void CollectCuda(const core::OsView& os, Json& software) {
  Json installs = Json::array();
  // /usr/local/cuda, cuda-13 and cuda-13.0 are usually one install behind symlinks: its nvcc
  // runs once (about 50 ms each time).
  std::map<std::string, std::optional<std::pair<std::string, std::string>>> nvcc_runs;
  auto entries = os.TryListDir("/usr/local");
  if (!entries.ok()) return;
  for (const std::string& entry : *entries) {
    if (!entry.starts_with("cuda")) continue;
    std::string path = "/usr/local/" + entry;
    Json install = {{"path", path}};
    if (auto link = os.TryReadLink(path); link.ok()) install["link_target"] = *link;
    for (const char* file : {"version.json", "version.txt"}) {
      if (auto text = os.TryReadFile(path + "/" + file, 1u << 20); text.ok()) {
        if (auto version = ParseCudaVersion(*text)) {
          install["version"] = *version;
          install["version_source"] = file;
          break;
        }
      }
    }
    if (os.Exists(path + "/bin/nvcc")) install["nvcc"] = path + "/bin/nvcc";
    if (!install.contains("version") && os.live() && install.contains("nvcc")) {
      std::error_code ec;
      std::string real = std::filesystem::canonical(path + "/bin/nvcc", ec).string();
      if (ec) real = path + "/bin/nvcc";
      auto run = nvcc_runs.find(real);
      if (run == nvcc_runs.end()) {
        std::optional<std::pair<std::string, std::string>> release = ReleaseFromToolchain(software, real);
        if (!release) release = NvccRelease(path + "/bin/nvcc");
        run = nvcc_runs.emplace(real, std::move(release)).first;
      }
      if (const auto& release = run->second) {
        install["version"] = release->first;
        install["version_source"] = fmt::format("bin/nvcc --version ({})", release->second);
      }
    }
    if (!install.contains("version")) {
      if (auto cudart = CudartFile(os, path)) {
        size_t second_dot = cudart->first.find('.', cudart->first.find('.') + 1);
        install["version"] = cudart->first.substr(0, second_dot);
        install["version_source"] = cudart->second;
      }
    }
    installs.push_back(install);
  }
  software["cuda"] = Json{{"installations", installs}};
}

}  // namespace

std::vector<std::string> LoaderDirectories(const core::OsView& os, const std::vector<std::string>& extra) {
  std::vector<std::string> dirs = extra;
  std::vector<std::string> conf_files = {"/etc/ld.so.conf"};
  for (size_t i = 0; i < conf_files.size() && i < 64; ++i) {
    auto text = os.TryReadFile(conf_files[i], 1u << 20);
    if (!text.ok()) continue;
    for (std::string_view line : core::SplitLines(*text)) {
      line = core::Trim(line.substr(0, line.find('#')));
      if (line.empty()) continue;
      if (line.starts_with("include")) {
        std::string_view pattern = core::Trim(line.substr(7));
        // Only the usual "dir/*.conf" form is expanded.
        if (pattern.ends_with("/*.conf")) {
          std::string dir(pattern.substr(0, pattern.size() - 7));
          if (auto names = os.TryListDir(dir); names.ok()) {
            for (const std::string& n : *names) {
              if (n.ends_with(".conf")) conf_files.push_back(dir + "/" + n);
            }
          }
        }
        continue;
      }
      dirs.emplace_back(line);
    }
  }
  for (const char* d : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/usr/lib",
                        "/usr/local/lib", "/usr/local/cuda/lib64", "/usr/local/nvidia/lib64", "/opt/rocm/lib"}) {
    dirs.emplace_back(d);
  }
  return dirs;
}

namespace {

void CollectLibraries(const core::OsView& os, const SoftwareOptions& options, Json& software) {
  Json libraries = Json::array();
  std::set<std::string> seen_dirs;
  std::set<std::string> seen_files;
  for (const std::string& dir : LoaderDirectories(os, options.library_dirs)) {
    if (!seen_dirs.insert(dir).second) continue;
    auto names = os.TryListDir(dir);
    if (!names.ok()) continue;
    for (const std::string& name : *names) {
      std::string stem, version;
      if (!RE2::FullMatch(name, GpuLibraryPattern(), &stem, &version)) continue;
      std::string path = dir + "/" + name;
      if (os.TryReadLink(path).ok()) continue;  // a symlink: its target is listed on its own
      if (!seen_files.insert(path).second) continue;
      libraries.push_back({{"name", stem}, {"file", name}, {"path", path}, {"version", version}});
    }
  }
  software["libraries"] = libraries;
}

std::vector<std::string> SiteDirectories(const core::OsView& os, const std::vector<std::string>& extra) {
  std::vector<std::string> dirs;
  for (const std::string& prefix : extra) dirs.push_back(prefix);
  dirs.emplace_back("/usr/lib/python3/dist-packages");
  for (const char* base : {"/usr/lib", "/usr/local/lib"}) {
    auto entries = os.TryListDir(base);
    if (!entries.ok()) continue;
    for (const std::string& e : *entries) {
      if (!e.starts_with("python3")) continue;
      for (const char* sub : {"/site-packages", "/dist-packages"}) {
        std::string dir = std::string(base) + "/" + e + sub;
        if (os.IsDirectory(dir)) dirs.push_back(dir);
      }
    }
  }
  return dirs;
}

void AddTorch(const core::OsView& os, const std::string& site, Json& python) {
  std::string torch_dir = site + "/torch";
  auto version_py = os.TryReadFile(torch_dir + "/version.py", 1u << 20);
  if (!version_py.ok()) return;
  Json torch = ParseTorchVersionPy(*version_py);
  torch["path"] = torch_dir;
  Json bundled = Json::array();
  if (auto libs = os.TryListDir(torch_dir + "/lib"); libs.ok()) {
    // Where libtorch_cuda.so / libtorch_hip.so live: doctor checks their GPU code.
    torch["lib_dir"] = torch_dir + "/lib";
    for (const std::string& lib : *libs) {
      if (lib.find(".so") != std::string::npos) bundled.push_back(lib);
    }
  }
  torch["bundled_libraries"] = bundled;
  if (!python.contains("torch")) python["torch"] = torch;
}

void CollectPython(const core::OsView& os, const SoftwareOptions& options, Json& software) {
  Json python = Json::object();
  Json sites = Json::array();
  Json packages = Json::array();
  std::set<std::string> seen;
  for (const std::string& site : SiteDirectories(os, options.site_dirs)) {
    if (!seen.insert(site).second) continue;
    auto entries = os.TryListDir(site);
    if (!entries.ok()) continue;
    sites.push_back(site);
    for (const std::string& entry : *entries) {
      std::string_view e = entry;
      std::string_view suffix = e.ends_with(".dist-info") ? ".dist-info" : e.ends_with(".egg-info") ? ".egg-info" : "";
      if (suffix.empty()) continue;
      e.remove_suffix(suffix.size());
      // "<name>-<version>" where the name has no '-' (wheel naming normalises it to '_').
      size_t dash = e.find('-');
      if (dash == std::string_view::npos) continue;
      std::string name = NormalizeDistName(e.substr(0, dash));
      if (!IsGpuPythonDistribution(name)) continue;
      packages.push_back({{"name", name}, {"version", std::string(e.substr(dash + 1))}, {"path", site}});
    }
    AddTorch(os, site, python);
  }
  python["site_packages"] = sites;
  python["packages"] = packages;
  software["python"] = python;
}

}  // namespace

bool IsGpuPythonDistribution(std::string_view name) {
  static constexpr std::string_view kExact[] = {
      "jax",      "jaxlib",       "tensorflow", "tensorflow_gpu",     "cupy",
      "vllm",     "xformers",     "apex",       "flash_attn",         "deepspeed",
      "tensorrt", "bitsandbytes", "amdsmi",     "transformer_engine", "cmake"};
  // What `python -m torch.utils.collect_env` lists under "Versions of relevant libraries": pip
  // names containing one of its patterns (torch 2.x: torch, numpy, triton, optree, onnx; vLLM's
  // variant adds nccl, transformers, zmq, nvidia, pynvml). mypy and flake8 are linters, not
  // part of a GPU stack, and are left out. The cmake wheel is listed because it is often the
  // cmake on a venv's PATH (the one collect_env reported on the H200 test machine).
  static constexpr std::string_view kContains[] = {"torch", "numpy",        "triton", "optree", "onnx",
                                                   "nccl",  "transformers", "zmq",    "nvidia", "pynvml"};
  for (std::string_view e : kExact) {
    if (name == e) return true;
  }
  for (std::string_view part : kContains) {
    if (name.find(part) != std::string_view::npos) return true;
  }
  return name.starts_with("jax_cuda") || name.starts_with("jax_rocm") || name.starts_with("cupy_");
}

bool IsGpuPackageName(std::string_view name) {
  static const RE2 kPattern(
      R"(^(cuda|libcuda|nvidia|libnvidia|libnccl|libcudnn|cudnn|tensorrt|libnvinfer|nsight|)"
      R"(datacenter-gpu-manager|dcgm|rocm|hip|libamdhip|hsa|libhsa|rocminfo|rocblas|librocblas|)"
      R"(miopen|libmiopen|rccl|librccl|amdgpu|libdrm-amdgpu|amd-smi|librocm|rocprofiler|roctracer|)"
      R"(comgr|libamd-comgr|hipcc|libhipblas|hipblas|rocsolver|rocfft|composablekernel|)"
      R"(nvidia-container|libnvidia-container|xserver-xorg-video-nvidia|firmware-amd))");
  return RE2::PartialMatch(name, kPattern);
}

Json ParseDpkgStatus(std::string_view status) {
  Json packages = Json::array();
  std::string_view name, version, state;
  auto flush = [&]() {
    if (!name.empty() && state.find("installed") != std::string_view::npos &&
        state.find("not-installed") == std::string_view::npos && IsGpuPackageName(name)) {
      packages.push_back(
          {{"name", core::SanitizeUtf8(name)}, {"version", core::SanitizeUtf8(version)}, {"source", "dpkg"}});
    }
    name = version = state = {};
  };
  for (std::string_view line : core::SplitLines(status)) {
    if (line.empty()) {
      flush();
      continue;
    }
    if (line.starts_with("Package:"))
      name = core::Trim(line.substr(8));
    else if (line.starts_with("Version:"))
      version = core::Trim(line.substr(8));
    else if (line.starts_with("Status:"))
      state = core::Trim(line.substr(7));
  }
  flush();
  return packages;
}

RpmPackages ParseRpmQueryOutput(std::string_view output) {
  RpmPackages out;
  for (std::string_view line : core::SplitLines(output)) {
    if (core::Trim(line).empty()) continue;
    size_t tab1 = line.find('\t');
    size_t tab2 = tab1 == std::string_view::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string_view::npos || line.find('\t', tab2 + 1) != std::string_view::npos) {
      ++out.malformed;
      continue;
    }
    std::string_view name = line.substr(0, tab1);
    std::string_view version = line.substr(tab1 + 1, tab2 - tab1 - 1);
    std::string_view arch = line.substr(tab2 + 1);
    if (name.empty() || version.empty()) {
      ++out.malformed;
      continue;
    }
    ++out.total;
    if (!IsGpuPackageName(name)) continue;
    Json package = {{"name", core::SanitizeUtf8(name)}, {"version", core::SanitizeUtf8(version)}, {"source", "rpm"}};
    // gpg-pubkey entries and other arch-less headers print "(none)".
    if (!arch.empty() && arch != "(none)") package["arch"] = core::SanitizeUtf8(arch);
    out.packages.push_back(std::move(package));
  }
  return out;
}

core::Result<RpmPackages> QueryRpmPackages(const std::vector<std::string>& extra_args,
                                           std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {"rpm"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  argv.insert(argv.end(), {"-qa", "--queryformat", std::string(kRpmQueryFormat)});
  core::RunOptions options;
  options.timeout = timeout;
  // A RHEL workstation has 2000-5000 packages of ~40 bytes a line; 32 MiB is far beyond any.
  options.max_stdout_bytes = 32u << 20;
  options.max_stderr_bytes = 4u << 10;
  GT_ASSIGN_OR_RETURN(core::ProcessOutcome outcome, core::RunWithTimeout(argv, options));
  if (outcome.timed_out || outcome.exit_code != 0) {
    std::string_view err = core::Trim(outcome.stderr_tail);
    size_t last_line = err.rfind('\n');
    if (last_line != std::string_view::npos) err = err.substr(last_line + 1);
    return core::MakeError("rpm -qa {}{}{}", core::DescribeOutcome(outcome, options), err.empty() ? "" : ": ",
                           core::SanitizeUtf8(err.substr(0, 200)));
  }
  if (outcome.stdout_dropped_bytes > 0) {
    return core::MakeError("rpm -qa printed more than {} MiB; not read", options.max_stdout_bytes >> 20);
  }
  return ParseRpmQueryOutput(outcome.stdout_data);
}

Json ParseTorchVersionPy(std::string_view text) {
  // Lines like `__version__ = '2.11.0+cu130'`, `cuda: Optional[str] = '13.0'`, `hip = None`.
  static const RE2 kAssign(R"(^\s*(__version__|cuda|hip|git_version|debug)\s*(?::[^=]*)?=\s*(.*)$)");
  Json torch = Json::object();
  for (std::string_view line : core::SplitLines(text)) {
    std::string key, value;
    if (!RE2::FullMatch(line, kAssign, &key, &value)) continue;
    std::string_view v = core::Trim(value);
    if (v.size() < 2 || (v.front() != '\'' && v.front() != '"') || v.back() != v.front()) continue;
    v = v.substr(1, v.size() - 2);
    if (key == "__version__") key = "version";
    torch[key] = core::SanitizeUtf8(v);
  }
  return torch;
}

std::optional<std::string> ParseCudaVersion(std::string_view text) {
  static const RE2 kJson(R"re("cuda"\s*:\s*\{[^}]*"version"\s*:\s*"([0-9.]+)")re");
  static const RE2 kTxt(R"(CUDA Version\s+([0-9.]+))");
  std::string version;
  if (RE2::PartialMatch(text, kJson, &version)) return version;
  if (RE2::PartialMatch(text, kTxt, &version)) return version;
  return std::nullopt;
}

core::Section CollectSoftware(const core::OsView& os, const SoftwareOptions& options) {
  core::Section section;
  Json& software = section.data;
  auto timed = [&section](const char* name, auto&& collect) {
    auto start = std::chrono::steady_clock::now();
    collect();
    section.timings_ms[std::string("software.") + name] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  // The toolchain runs programs (`gcc --version`, `nvcc --version`; Debian's hipcc is a Perl
  // script of 1 to 2 s): it runs beside the file-reading collectors, in its own JSON and section.
  struct ToolchainPart {
    Json software = Json::object();
    core::Section section;
    double ms = 0;
  };
  auto toolchain = std::async(std::launch::async, [&os, &options]() {
    ToolchainPart part;
    auto start = std::chrono::steady_clock::now();
    CollectToolchain(os, options.toolchain, part.software, part.section);
    part.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return part;
  });
  timed("modules", [&] { CollectModules(os, software); });
  timed("packages", [&] { CollectPackages(os, software, section); });
  timed("libraries", [&] { CollectLibraries(os, options, software); });
  timed("python", [&] { CollectPython(os, options, software); });
  timed("c_runtime", [&] { CollectCRuntime(os, LoaderDirectories(os, options.library_dirs), software, section); });
  ToolchainPart part = toolchain.get();
  for (auto& [key, value] : part.software.items()) software[key] = std::move(value);
  for (auto& note : part.section.not_collected) section.not_collected.push_back(std::move(note));
  for (auto& finding : part.section.findings) section.findings.push_back(std::move(finding));
  section.timings_ms["software.toolchain"] = part.ms;
  // After the toolchain: an nvcc it already ran is not run again for the CUDA install's release.
  timed("cuda", [&] { CollectCuda(os, software); });
  return section;
}

}  // namespace gputriage::collect
