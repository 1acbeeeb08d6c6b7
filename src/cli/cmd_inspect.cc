// `gputriage inspect PATH... [--pid PID] [--kernel NAME] [--disasm] [--json] [--verbose]`: the GPU kernels
// inside binaries, their resources, and whether they carry code for this machine's GPUs.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "cli/common.h"
#include "cli/render.h"
#include "inspect/disasm.h"
#include "inspect/run.h"

namespace gputriage::cli {
namespace {

struct InspectFlags {
  inspect::InspectRequest request;  // paths, kernel, json and threads come straight from the flags
  int pid = 0;
  bool disasm = false;
  std::string snapshot;
  bool no_snapshot = false;
  bool low_memory = false;
  bool verbose = false;
};

// "inspect: 3/14 files, libcudnn_engines_precompiled.so.9: 120/800 MiB, 2,789 code objects".
std::string ProgressLine(const inspect::InspectProgress& p) {
  size_t slash = p.path.rfind('/');
  std::string name(slash == std::string_view::npos ? p.path : p.path.substr(slash + 1));
  std::string line = fmt::format("inspect: {}/{} file(s), {}", p.file_index + 1, p.files, name);
  if (p.bytes_total > 0) line += fmt::format(": {} of {}", HumanBytes(p.bytes_done), HumanBytes(p.bytes_total));
  if (p.code_objects > 0) line += fmt::format(", {} code object(s)", p.code_objects);
  return line;
}

// The GPUs to check coverage against, --snapshot's or this machine's, and the
// HSA_OVERRIDE_GFX_VERSION the runtime would see. Fails only for a --snapshot that does not load.
core::Result<void> SetGpus(const InspectFlags& flags, inspect::InspectRequest& request) {
  if (const char* o = std::getenv("HSA_OVERRIDE_GFX_VERSION"); o && *o) request.hsa_override = o;
  request.check_coverage = !flags.no_snapshot;
  if (flags.no_snapshot) return {};
  GT_ASSIGN_OR_RETURN(std::optional<core::Snapshot> snapshot, LoadOrTakeSnapshot(flags.snapshot));
  if (!snapshot) return {};
  request.gpus = core::GpuArchitectures(*snapshot);
  request.snapshot_used = true;
  if (auto v = snapshot->EnvValue("HSA_OVERRIDE_GFX_VERSION"); v && !flags.snapshot.empty()) request.hsa_override = v;
  return {};
}

int Inspect(InspectFlags& flags) {
  inspect::InspectRequest& request = flags.request;
  if (flags.low_memory) inspect::ReturnFreedBuffersToTheSystem();
  if (flags.pid > 0) {
    auto mapped = inspect::MappedFiles(flags.pid);
    if (!mapped.ok()) {
      return Fail(mapped.error().message, kExitUsage);
    }
    request.paths.insert(request.paths.end(), mapped->begin(), mapped->end());
  }
  if (request.paths.empty()) {
    return Fail("inspect: give a PATH or --pid PID", kExitUsage);
  }
  if (flags.disasm) {
    if (request.kernel.empty()) {
      return Fail("inspect: --disasm needs --kernel NAME (the symbol or a part of its name)", kExitUsage);
    }
    return inspect::DisassembleKernels(request.paths, request.kernel, PrintError) ? kExitOk : kExitUsage;
  }
  request.from_process = flags.pid != 0;
  request.error = PrintError;
  if (auto set = SetGpus(flags, request); !set.ok()) {
    return Fail(set.error().message, kExitUsage);
  }
  // On stderr, only on a terminal and after a second of work (a large library, --pid).
  auto progress = std::make_shared<Progress>();
  request.progress = [progress](const inspect::InspectProgress& p) { progress->Show(ProgressLine(p)); };
  inspect::InspectOutcome outcome = inspect::InspectFiles(request, stdout);
  progress.reset();  // erased before the findings are printed
  if (!request.json && !outcome.ranked.empty()) {
    std::fputs(RenderInspectFindings(outcome.ranked, flags.verbose).c_str(), stdout);
  }
  std::fflush(stdout);
  auto worst = core::MaxSeverity(outcome.findings);
  if (worst && *worst >= core::Severity::kError) return kExitFindings;
  return (outcome.file_failed && !request.from_process) || outcome.file_damaged ? kExitUsage : kExitOk;
}

}  // namespace

Command InspectCommand() {
  return Command{
      "inspect", "GPU kernels inside binaries: architectures, registers, shared memory/LDS, launch limits, coverage.",
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
            "near the limit, launch bounds above 1024. Exit status 1 when a finding is an error, 2 when a "
            "file could not be read fully (missing, truncated, damaged headers or GPU code).");
        app.add_option("paths", flags->request.paths, "Files to inspect");
        app.add_option("--pid", flags->pid, "Inspect every file mapped into this running process")->type_name("PID");
        app.add_option("--kernel", flags->request.kernel,
                       "Only kernels whose (mangled or demangled) name contains NAME; "
                       "without --json, lists them with their numbers")
            ->type_name("NAME");
        app.add_flag("--disasm", flags->disasm,
                     "With --kernel: disassemble it with the vendor tool (cuobjdump for SASS, llvm-objdump "
                     "for amdgcn); says which tool is missing and how to get it");
        app.add_flag("--json", flags->request.json,
                     "Print {files: [{path, kind, code_objects: [{vendor, arch, target_id, format, "
                     "compressed, size, error, kernels: [...]}], problems}], findings, gpus}");
        app.add_option("--snapshot", flags->snapshot,
                       "Check coverage against the GPUs of this snapshot instead of this machine's: a "
                       "JSON file (gputriage snapshot --json), - for stdin, or a stored snapshot's id, "
                       "'latest', 'previous'")
            ->type_name("SNAPSHOT");
        app.add_flag("--no-snapshot", flags->no_snapshot, "Do not check architecture coverage");
        app.add_flag("--verbose,-v", flags->verbose,
                     "Show every finding in full: without it, facts about a known GPU library's own kernels "
                     "(kb/tables/gpu-libraries.yaml: cuDNN's stack frames, rocSPARSE's spills) are folded into "
                     "one line per library; --json always has them all");
        app.add_option("--threads", flags->request.threads,
                       "Threads decoding fatbin entries (default: one per CPU, at most 8)");
        app.add_flag("--low-memory", flags->low_memory,
                     "Return decoding buffers to the system as soon as they are freed: about 40 % less peak "
                     "memory on a large library, and slower (page faults); pair with --threads 16 on a big machine");
        return [flags]() { return Inspect(*flags); };
      }};
}

}  // namespace gputriage::cli
