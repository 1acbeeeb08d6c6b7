#include "inspect/disasm.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "core/text.h"
#include "inspect/inspect.h"
#include "inspect/run.h"

namespace gputriage::inspect {
namespace {

// The tools take at most this many kernels of a file per run (AMD: one comma-separated list).
constexpr size_t kMaxKernels = 20;

// What --disasm needs of one file's code objects.
struct Targets {
  std::string vendor;                // of the first code object
  std::string arch;                  // of the first AMD code object
  std::vector<std::string> symbols;  // the matching kernels as stored (the tools want those)
};

void AddTargets(const CodeObject& co, const std::string& kernel, Targets& targets) {
  if (targets.vendor.empty()) targets.vendor = co.vendor;
  if (targets.arch.empty() && co.vendor == "amd") targets.arch = co.arch;
  for (const Kernel& k : co.kernels) {
    // AMD metadata names the kernel descriptor ("_Z3fooPf.kd"); the code is the function.
    std::string symbol = k.symbol;
    if (co.vendor == "amd" && symbol.size() > 3 && core::EndsWith(symbol, ".kd")) symbol.resize(symbol.size() - 3);
    if (KernelMatches(k, kernel) &&
        std::find(targets.symbols.begin(), targets.symbols.end(), symbol) == targets.symbols.end()) {
      targets.symbols.push_back(symbol);
    }
  }
}

// The first of `names` that is an executable: as given when it has a '/', else in `dirs`.
std::string FindTool(const std::vector<std::string>& names, const std::vector<std::string>& dirs) {
  for (const std::string& name : names) {
    if (name.find('/') != std::string::npos) {
      if (access(name.c_str(), X_OK) == 0) return name;
      continue;
    }
    for (const std::string& dir : dirs) {
      std::string path = dir + "/" + name;
      if (access(path.c_str(), X_OK) == 0) return path;
    }
  }
  return "";
}

// Runs `argv` (argv[0] a path) with our standard streams; its wait status. Fails when it could
// not be started or waited for.
core::Result<int> RunWithOurOutput(std::vector<std::string> argv) {
  std::fflush(stdout);
  pid_t child = fork();
  if (child < 0) return core::ErrnoError(errno, "{}: cannot start it: fork", argv[0]);
  if (child == 0) {
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return core::ErrnoError(errno, "{}: waitpid", argv[0]);
  }
  return status;
}

// The tool's command lines for one file's targets.
std::vector<std::vector<std::string>> Commands(const std::string& tool, const Targets& targets,
                                               const std::string& path) {
  std::vector<std::vector<std::string>> commands;
  if (targets.vendor == "nvidia") {
    for (const std::string& symbol : targets.symbols) commands.push_back({tool, "-sass", "-fun", symbol, path});
    return commands;
  }
  std::string joined;
  for (const std::string& symbol : targets.symbols) joined += (joined.empty() ? "" : ",") + symbol;
  commands.push_back({tool, "-d", "--mcpu=" + targets.arch, "--disassemble-symbols=" + joined, path});
  return commands;
}

enum class FileResult { kDone, kFailed, kStop };

// Finds the file's matching kernels and its tool, refuses what the tool cannot read, runs it.
FileResult DisassembleFile(const std::string& path, const std::string& kernel,
                           const std::function<void(const std::string&)>& error,
                           const std::vector<std::string>& tool_dirs) {
  Targets targets;
  auto summary = InspectFile(path, {}, [&](CodeObject&& co, std::string&&) { AddTargets(co, kernel, targets); });
  if (!summary.ok()) {
    error(summary.error().message);
    return FileResult::kFailed;
  }
  if (summary->code_objects > 0 && targets.symbols.empty()) {
    error(fmt::format("{}: no kernel matches '{}' (`gputriage inspect --kernel` lists them)", path, kernel));
    return FileResult::kFailed;
  }
  if (targets.symbols.size() > kMaxKernels) targets.symbols.resize(kMaxKernels);
  if (targets.vendor != "nvidia" && targets.vendor != "amd") {
    error(fmt::format("{}: no GPU code objects to disassemble", path));
    return FileResult::kFailed;
  }
  auto tool = FindDisassembler(targets.vendor, tool_dirs);
  if (!tool.ok()) {
    error(tool.error().message);
    return FileResult::kStop;
  }
  if (targets.vendor == "amd" && summary->kind != "amdgpu-code-object") {
    error(
        fmt::format("{}: --disasm reads standalone AMD code objects; extract one first with `clang-offload-bundler "
                    "--unbundle --type=o --targets=hipv4-amdgcn-amd-amdhsa--{} --input={} --output=k.co` "
                    "(for a host binary, from its .hip_fatbin section)",
                    path, targets.arch.empty() ? "gfxXXX" : targets.arch, path));
    return FileResult::kFailed;
  }
  FileResult result = FileResult::kDone;
  for (std::vector<std::string>& argv : Commands(*tool, targets, path)) {
    auto status = RunWithOurOutput(std::move(argv));
    if (!status.ok()) error(status.error().message);
    // A tool that fails has said why on stderr.
    if (!status.ok() || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) result = FileResult::kFailed;
  }
  return result;
}

}  // namespace

const std::vector<std::string>& DefaultToolDirs() {
  static const std::vector<std::string> kDirs = [] {
    std::vector<std::string> dirs;
    auto add = [&dirs](std::string dir) {
      if (!dir.empty() && std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(std::move(dir));
    };
    if (const char* path = std::getenv("PATH")) {
      for (std::string_view dir : core::Split(path, ':')) add(std::string(dir));
    }
    for (const char* dir : {"/usr/local/cuda/bin", "/opt/rocm/llvm/bin", "/usr/bin", "/usr/local/bin"}) add(dir);
    return dirs;
  }();
  return kDirs;
}

core::Result<std::string> FindDisassembler(std::string_view vendor, const std::vector<std::string>& dirs) {
  if (vendor == "nvidia") {
    std::string tool = FindTool({"cuobjdump"}, dirs);
    if (!tool.empty()) return tool;
    return core::MakeErrorCode(core::ErrorCode::kNotFound,
                               "--disasm needs cuobjdump (CUDA toolkit, package cuda-cuobjdump-<version> from "
                               "NVIDIA's repository, or the full toolkit); it was not found in PATH or "
                               "/usr/local/cuda/bin");
  }
  if (vendor == "amd") {
    std::string tool = FindTool({"llvm-objdump", "llvm-objdump-15", "llvm-objdump-14"}, dirs);
    if (!tool.empty()) return tool;
    return core::MakeErrorCode(core::ErrorCode::kNotFound,
                               "--disasm needs llvm-objdump with the AMDGPU target (ROCm's /opt/rocm/llvm/bin, "
                               "or Debian's llvm-15 package); it was not found in PATH or /opt/rocm/llvm/bin");
  }
  return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "no disassembler for {} code objects", vendor);
}

bool DisassembleKernels(const std::vector<std::string>& paths, const std::string& kernel,
                        const std::function<void(const std::string&)>& error,
                        const std::vector<std::string>& tool_dirs) {
  bool all_done = true;
  for (const std::string& path : paths) {
    FileResult result = DisassembleFile(path, kernel, error, tool_dirs);
    if (result == FileResult::kStop) return false;
    all_done = all_done && result == FileResult::kDone;
  }
  return all_done;
}

}  // namespace gputriage::inspect
