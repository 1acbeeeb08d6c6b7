// `gputriage inspect PATH... [--pid PID] [--kernel NAME] [--disasm] [--json]`: the GPU kernels
// inside binaries, their resources, and whether they carry code for this machine's GPUs.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/common.h"
#include "cli/render.h"
#include "core/subprocess.h"
#include "core/version.h"
#include "inspect/findings.h"
#include "inspect/inspect.h"
#include "inspect/occupancy.h"
#include "store/data_home.h"
#include "store/snapshot_arg.h"
#include "store/snapshot_store.h"

namespace gputriage::cli {
namespace {

using core::Json;

struct InspectFlags {
  std::vector<std::string> paths;
  int pid = 0;
  std::string kernel;
  bool disasm = false;
  bool json = false;
  std::string snapshot;
  bool no_snapshot = false;
  unsigned threads = 0;
  bool low_memory = false;
};

// Every distinct file mapped into process `pid` (its executable and shared libraries).
core::Result<std::vector<std::string>> MappedFiles(int pid) {
  std::string path = fmt::format("/proc/{}/maps", pid);
  std::ifstream in(path);
  if (!in) return core::MakeError("{}: cannot read (no such process, or no permission)", path);
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::string line; std::getline(in, line);) {
    size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string file = line.substr(slash);
    if (file.size() > 10 && file.compare(file.size() - 10, 10, " (deleted)") == 0) continue;
    if (seen.insert(file).second) out.push_back(file);
  }
  return out;
}

bool KernelMatches(const inspect::Kernel& k, const std::string& filter) {
  return filter.empty() || k.symbol.find(filter) != std::string::npos || k.name.find(filter) != std::string::npos;
}

std::string Opt(const std::optional<uint32_t>& v) { return v ? std::to_string(*v) : "-"; }

std::string KernelLine(const inspect::CodeObject& co, const inspect::Kernel& k) {
  std::string name = k.name.empty() ? k.symbol : k.name;
  if (name.size() > 100) name = name.substr(0, 97) + "...";
  std::string occupancy;
  if (const inspect::ArchLimits* limits = co.format == "ptx" ? nullptr : inspect::FindArchLimits(co.arch)) {
    occupancy = "\n      occupancy: " + inspect::EstimateOccupancy(k, *limits).explanation;
  }
  if (co.vendor == "amd") {
    return fmt::format("    {}  sgpr {} vgpr {} agpr {} spills s{}/v{} lds {} scratch {} wg<= {} wave{}{}\n", name,
                       Opt(k.sgpr_count), Opt(k.vgpr_count), Opt(k.agpr_count), Opt(k.sgpr_spill_count),
                       Opt(k.vgpr_spill_count), Opt(k.lds_bytes), Opt(k.scratch_bytes), Opt(k.max_workgroup_size),
                       Opt(k.wavefront_size), occupancy);
  }
  return fmt::format("    {}  regs {} shared {} local {} max_threads {} params {}{}\n", name, Opt(k.registers),
                     Opt(k.shared_bytes), Opt(k.local_bytes), Opt(k.max_threads), Opt(k.param_bytes), occupancy);
}

// --disasm: the vendor tool does it.
int Disassemble(const std::vector<std::string>& paths, const std::string& kernel) {
  auto find = [](const std::vector<std::string>& candidates) -> std::string {
    for (const std::string& c : candidates) {
      if (c.find('/') != std::string::npos) {
        if (access(c.c_str(), X_OK) == 0) return c;
        continue;
      }
      for (const std::string dir : {"/usr/local/cuda/bin", "/opt/rocm/llvm/bin", "/usr/bin", "/usr/local/bin"}) {
        std::string p = dir + "/" + c;
        if (access(p.c_str(), X_OK) == 0) return p;
      }
    }
    return "";
  };
  int rc = kExitOk;
  for (const std::string& path : paths) {
    std::string kind;
    std::string arch;
    std::vector<std::string> symbols;  // the kernels NAME matches, as stored (the tools want those)
    auto summary = inspect::InspectFile(path, {}, [&](inspect::CodeObject&& co, std::string&&) {
      if (kind.empty()) kind = co.vendor;
      if (arch.empty() && co.vendor == "amd") arch = co.arch;
      for (const inspect::Kernel& k : co.kernels) {
        // AMD metadata names the kernel descriptor ("_Z3fooPf.kd"); the code is the function.
        std::string sym = k.symbol;
        if (co.vendor == "amd" && sym.size() > 3 && sym.compare(sym.size() - 3, 3, ".kd") == 0) sym.resize(sym.size() - 3);
        if (KernelMatches(k, kernel) && std::find(symbols.begin(), symbols.end(), sym) == symbols.end()) {
          symbols.push_back(sym);
        }
      }
    });
    if (!summary.ok()) {
      PrintError(summary.error().message);
      rc = kExitUsage;
      continue;
    }
    if (summary->code_objects > 0 && symbols.empty()) {
      PrintError(fmt::format("{}: no kernel matches '{}' (`gputriage inspect --kernel` lists them)", path, kernel));
      rc = kExitUsage;
      continue;
    }
    if (symbols.size() > 20) symbols.resize(20);
    std::string joined;
    for (const std::string& sym : symbols) joined += (joined.empty() ? "" : ",") + sym;
    std::vector<std::vector<std::string>> commands;
    if (kind == "nvidia") {
      std::string tool = find({"cuobjdump"});
      if (tool.empty()) {
        PrintError("--disasm needs cuobjdump (CUDA toolkit, package cuda-cuobjdump-<version> from NVIDIA's repository, "
                   "or the full toolkit); it was not found in PATH or /usr/local/cuda/bin");
        return kExitUsage;
      }
      for (const std::string& sym : symbols) commands.push_back({tool, "-sass", "-fun", sym, path});
    } else if (kind == "amd") {
      std::string tool = find({"llvm-objdump", "llvm-objdump-15", "llvm-objdump-14"});
      if (tool.empty()) {
        PrintError("--disasm needs llvm-objdump with the AMDGPU target (ROCm's /opt/rocm/llvm/bin, or Debian's "
                   "llvm-15 package); it was not found");
        return kExitUsage;
      }
      if (summary->kind != "amdgpu-code-object") {
        PrintError(fmt::format("{}: --disasm reads standalone AMD code objects; extract one first with `clang-offload-bundler "
                               "--unbundle --type=o --targets=hipv4-amdgcn-amd-amdhsa--{} --input={} --output=k.co` "
                               "(for a host binary, from its .hip_fatbin section)", path, arch.empty() ? "gfxXXX" : arch, path));
        rc = kExitUsage;
        continue;
      }
      commands.push_back({tool, "-d", "--mcpu=" + arch, "--disassemble-symbols=" + joined, path});
    } else {
      PrintError(fmt::format("{}: no GPU code objects to disassemble", path));
      rc = kExitUsage;
      continue;
    }
    for (std::vector<std::string>& argv : commands) {
      std::fflush(stdout);
      pid_t child = fork();
      if (child == 0) {
        std::vector<char*> args;
        for (std::string& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
      }
      int status = 0;
      waitpid(child, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = kExitUsage;
    }
  }
  return rc;
}

int Inspect(InspectFlags& flags) {
  if (flags.low_memory) {
    // Entry buffers are megabytes each and come and go by the thousand. A fixed mmap threshold
    // hands them back to the system when freed; glibc's adaptive one moves them onto the
    // threads' heaps, which keep the pages. Costs page faults: slower, most on small machines.
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
  }
  if (flags.pid > 0) {
    auto mapped = MappedFiles(flags.pid);
    if (!mapped.ok()) {
      PrintError(mapped.error().message);
      return kExitUsage;
    }
    flags.paths.insert(flags.paths.end(), mapped->begin(), mapped->end());
  }
  if (flags.paths.empty()) {
    PrintError("inspect: give a PATH or --pid PID");
    return kExitUsage;
  }
  if (flags.disasm) {
    if (flags.kernel.empty()) {
      PrintError("inspect: --disasm needs --kernel NAME (the symbol or a part of its name)");
      return kExitUsage;
    }
    return Disassemble(flags.paths, flags.kernel);
  }
  // This machine's GPUs, for the coverage check.
  std::vector<inspect::MachineGpu> gpus;
  std::optional<std::string> hsa_override;
  if (const char* o = std::getenv("HSA_OVERRIDE_GFX_VERSION"); o && *o) hsa_override = o;
  bool snapshot_used = false;
  if (!flags.no_snapshot) {
    std::optional<core::Snapshot> snapshot;
    if (!flags.snapshot.empty()) {
      // A file, "-", or a stored snapshot (id, "latest", "previous"), as `snapshot diff` reads them.
      std::optional<store::SnapshotStore> db;
      if (auto path = store::DefaultDatabasePath(); path.ok()) {
        if (auto opened = store::SnapshotStore::Open(*path); opened.ok()) db = std::move(*opened);
      }
      auto loaded = store::LoadSnapshotArg(db ? &*db : nullptr, flags.snapshot);
      if (!loaded.ok()) {
        PrintError(loaded.error().message);
        return kExitUsage;
      }
      snapshot = std::move(*loaded);
    } else if (auto taken = TakeSnapshot(SnapshotFlags{}); taken.ok()) {
      snapshot = std::move(*taken);
    }
    if (snapshot) {
      gpus = core::GpuArchitectures(*snapshot);
      snapshot_used = true;
      if (auto v = snapshot->EnvValue("HSA_OVERRIDE_GFX_VERSION"); v && !flags.snapshot.empty()) hsa_override = v;
    }
  }
  inspect::InspectOptions options;
  options.threads = flags.threads;
  std::vector<core::Finding> findings;
  bool any_error = false;
  bool first_file = true;
  if (flags.json) std::fputs("{\"schema_version\": 1, \"files\": [", stdout);
  for (const std::string& path : flags.paths) {
    inspect::FileFindings file_findings(path);
    std::map<std::string, std::pair<size_t, size_t>> per_arch;  // arch/format -> objects, kernels
    bool first_object = true;
    std::string human;
    size_t shown_kernels = 0;
    // Filtering and rendering run on the decoding threads (prepare); the sink, in file order,
    // feeds the findings (all kernels, whatever the filter) and prints.
    options.prepare = [&flags](inspect::CodeObject& co) -> std::string {
      inspect::CodeObject shown;
      const inspect::CodeObject* view = &co;
      if (!flags.kernel.empty()) {
        shown = co;
        shown.kernels.clear();
        for (const inspect::Kernel& k : co.kernels) {
          if (KernelMatches(k, flags.kernel)) shown.kernels.push_back(k);
        }
        view = &shown;
      }
      if (flags.json) return inspect::ToJson(*view).dump(-1, ' ', false, Json::error_handler_t::replace);
      std::string text;
      if (co.error) text += fmt::format("  {} {} at {}: error: {}\n", co.arch.empty() ? "?" : co.arch, co.format, co.origin, *co.error);
      if (!flags.kernel.empty()) {
        for (const inspect::Kernel& k : view->kernels) {
          text += fmt::format("  {} {}{}:\n", co.arch, co.format, co.compressed ? " (compressed)" : "") + KernelLine(co, k);
        }
      }
      return text;
    };
    auto sink = [&](inspect::CodeObject&& co, std::string&& rendered) {
      file_findings.Add(co);
      auto& counts = per_arch[co.arch + " " + co.format];
      counts.first += 1;
      size_t matching = 0;
      for (const inspect::Kernel& k : co.kernels) matching += KernelMatches(k, flags.kernel) ? 1 : 0;
      counts.second += matching;
      if (flags.json) {
        if (!first_object) std::fputc(',', stdout);
        std::fputs(rendered.c_str(), stdout);
      } else if (human.size() < (4u << 20)) {
        human += rendered;
        shown_kernels += flags.kernel.empty() ? 0 : matching;
      }
      first_object = false;
    };
    // JSON is streamed: a file's code objects are printed as they are decoded, never all held.
    if (flags.json) {
      std::fputs(fmt::format("{}{{\"path\": {}, \"code_objects\": [", first_file ? "" : ",",
                             Json(path).dump(-1, ' ', false, Json::error_handler_t::replace)).c_str(), stdout);
    }
    auto summary = inspect::InspectFile(path, options, sink);
    first_file = false;
    std::vector<core::Finding> these = file_findings.Finish(gpus, hsa_override);
    if (!summary.ok()) {
      any_error = true;
      if (flags.pid > 0) {
        // A process maps many files that are not GPU code; say nothing about them.
      } else {
        PrintError(summary.error().message);
      }
    }
    if (flags.json) {
      Json file = {{"kind", summary.ok() ? summary->kind : ""},
                   {"error", summary.ok() ? Json(nullptr) : Json(summary.error().message)},
                   {"problems", summary.ok() ? Json(summary->problems) : Json::array()},
                   {"binary_archs", file_findings.binary_archs()},
                   {"ptx_archs", file_findings.ptx_archs()}};
      std::string rest = file.dump(-1, ' ', false, Json::error_handler_t::replace);
      std::fputs(("], " + rest.substr(1)).c_str(), stdout);
    } else if (summary.ok() && (summary->code_objects > 0 || flags.pid == 0)) {
      std::fputs(fmt::format("{}: {}, {} GPU code object(s)\n", path, summary->kind, summary->code_objects).c_str(), stdout);
      for (const auto& [key, counts] : per_arch) {
        if (!flags.kernel.empty() && counts.second == 0) continue;  // no matching kernel there
        std::fputs(fmt::format("  {:<24} {:>6} object(s) {:>8} kernel(s){}\n", key, counts.first, counts.second,
                               flags.kernel.empty() ? "" : " matching").c_str(), stdout);
      }
      for (const std::string& p : summary->problems) std::fputs(fmt::format("  problem: {}\n", p).c_str(), stdout);
      std::fputs(human.c_str(), stdout);
      if (human.size() >= (4u << 20)) std::fputs("  ... (output cut at 4 MiB; use --json)\n", stdout);
    }
    findings.insert(findings.end(), these.begin(), these.end());
  }
  bool errors = false;
  for (const core::Finding& f : findings) errors = errors || f.severity >= core::Severity::kError;
  if (flags.json) {
    Json tail = {{"findings", findings}, {"snapshot_used", snapshot_used}, {"tool_version", core::kToolVersion}};
    Json gpu_list = Json::array();
    for (const inspect::MachineGpu& g : gpus) gpu_list.push_back({{"arch", g.arch}, {"target_id", g.target_id}, {"pci_address", g.pci_address}});
    tail["gpus"] = gpu_list;
    std::string rest = tail.dump(-1, ' ', false, Json::error_handler_t::replace);
    std::fputs(("], " + rest.substr(1) + "\n").c_str(), stdout);
  } else {
    if (!gpus.empty()) {
      std::string list;
      for (const inspect::MachineGpu& g : gpus) list += (list.empty() ? "" : ", ") + g.target_id;
      std::fputs(fmt::format("this machine's GPUs: {}\n", list).c_str(), stdout);
    } else if (!flags.no_snapshot) {
      std::fputs("this machine's GPUs: none found (architecture coverage not checked)\n", stdout);
    }
    if (!findings.empty()) std::fputs(RenderFindings(findings).c_str(), stdout);
  }
  std::fflush(stdout);
  if (errors) return kExitFindings;
  return any_error && flags.pid == 0 ? kExitUsage : kExitOk;
}

}  // namespace

Command InspectCommand() {
  return Command{
      "inspect",
      "GPU kernels inside binaries: architectures, registers, shared memory/LDS, launch limits, coverage.",
      [](CLI::App& app) -> std::function<int()> {
        auto flags = std::make_shared<InspectFlags>();
        app.description(
            "Reads the GPU code inside executables, shared libraries, standalone code objects "
            "(.cubin, .hsaco/.co), fatbin files, clang offload bundles and PTX, without a GPU. "
            "NVIDIA: every fatbin entry (SASS per sm_XX, PTX per compute_XX; LZ4/zstd-compressed "
            "entries decoded) and per kernel registers, static shared memory, stack frame (local "
            "memory), launch bounds, parameter size. AMD: every code object per target id "
            "(gfx90a:sramecc+:xnack-) and per kernel SGPR/VGPR/AGPR counts, spills, LDS, scratch, "
            "kernarg size, max workgroup size, wavefront size. Then findings: architectures this "
            "machine's GPUs need but the file lacks (\"no kernel image is available\", "
            "hipErrorNoBinaryForGpu), PTX-only coverage (JIT at load), what "
            "HSA_OVERRIDE_GFX_VERSION makes the runtime load, register spills, shared memory/LDS "
            "near the limit, launch bounds above 1024. Exit status 1 when a finding is an error.");
        app.add_option("paths", flags->paths, "Files to inspect");
        app.add_option("--pid", flags->pid, "Inspect every file mapped into this running process")->type_name("PID");
        app.add_option("--kernel", flags->kernel, "Only kernels whose (mangled or demangled) name contains NAME; "
                                                   "without --json, lists them with their numbers")
            ->type_name("NAME");
        app.add_flag("--disasm", flags->disasm,
                     "With --kernel: disassemble it with the vendor tool (cuobjdump for SASS, llvm-objdump "
                     "for amdgcn); says which tool is missing and how to get it");
        app.add_flag("--json", flags->json,
                     "Print {files: [{path, kind, code_objects: [{vendor, arch, target_id, format, "
                     "compressed, size, error, kernels: [...]}], problems}], findings, gpus}");
        app.add_option("--snapshot", flags->snapshot,
                       "Check coverage against the GPUs of this snapshot instead of this machine's: a "
                       "JSON file (gputriage snapshot --json), - for stdin, or a stored snapshot's id, "
                       "'latest', 'previous'")
            ->type_name("SNAPSHOT");
        app.add_flag("--no-snapshot", flags->no_snapshot, "Do not check architecture coverage");
        app.add_option("--threads", flags->threads, "Threads decoding fatbin entries (default: one per CPU, at most 8)");
        app.add_flag("--low-memory", flags->low_memory,
                     "Return decoding buffers to the system as soon as they are freed: about 40 % less peak "
                     "memory on a large library, and slower (page faults); pair with --threads 16 on a big machine");
        return [flags]() { return Inspect(*flags); };
      }};
}

}  // namespace gputriage::cli
