// `gputriage validate [--level 1|2|3] [--device N|all] [--ops LIST] [--dtypes LIST] [--repeat N]
// [--junit FILE] [--json]`: layer 2, known operations on each GPU checked against a reference.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "catalog/catalog.h"
#include "cli/common.h"
#include "cli/render.h"
#include "core/fs.h"
#include "validate/validate.h"

namespace gputriage::cli {
namespace {

struct ValidateFlags {
  int level = 1;
  std::string device = "all";
  std::vector<std::string> ops, dtypes;
  int repeat = 5;
  std::string junit, inject_fault;
  double duration = 0, memory_fraction = 0;
  bool json = false, allow_no_gpu = false, quiet = false;
};

int Validate(const ValidateFlags& flags) {
  auto catalog = catalog::BuiltinCatalog();
  if (!catalog.ok()) return Fail(catalog.error().message, kExitInternal);
  validate::ValidateOptions options;
  options.level = flags.level;
  options.ops = flags.ops;
  options.dtypes = flags.dtypes;
  options.repeat = flags.repeat;
  options.inject_fault = flags.inject_fault;
  options.stress_seconds = flags.duration;
  options.memory_fraction = flags.memory_fraction;
  if (flags.device != "all") {
    try {
      size_t used = 0;
      int index = std::stoi(flags.device, &used);
      if (used != flags.device.size()) throw std::invalid_argument(flags.device);
      options.devices = {index};
    } catch (const std::exception&) {
      return Fail(fmt::format("validate: --device takes a device number or 'all', not '{}'", flags.device), kExitUsage);
    }
  }
  // Progress on stderr, one line per check, when stderr is a terminal (or --json is off).
  if (!flags.quiet && isatty(STDERR_FILENO)) {
    options.progress = [](const std::string& line) { std::fprintf(stderr, "validate: %s\n", line.c_str()); };
  }
  core::ValidationReport report = validate::RunValidate(options, (*catalog)->product_peaks);
  if (!flags.junit.empty()) {
    if (auto written = core::WriteOutputFile(flags.junit, RenderJunit(report)); !written.ok())
      return Fail(fmt::format("validate: cannot write the JUnit report: {}", written.error().message), kExitUsage);
  }
  core::CheckCounts counts = core::CountChecks(report.checks);
  bool no_gpu = report.devices_found == 0;
  int rc = counts.fail > 0 || counts.error > 0 ? kExitFindings : kExitOk;
  if (no_gpu) rc = flags.allow_no_gpu && flags.level == 1 && counts.error == 0 ? kExitOk : kExitFindings;
  if (flags.json) {
    core::Json j = core::ToJson(report);
    j["exit_code"] = rc;
    PrintJson(j);
  } else {
    std::fputs(RenderValidation(report).c_str(), stdout);
  }
  if (no_gpu) {
    PrintError(fmt::format("validate: no usable GPU, every check skipped ({}){}",
                           report.notes.empty() ? "no backend" : fmt::format("{}", fmt::join(report.notes, "; ")),
                           rc == kExitOk ? "" : "; --allow-no-gpu makes this exit 0 at level 1"));
  }
  return rc;
}

}  // namespace

Command ValidateCommand() {
  return Command{
      "validate", "Is the GPU stack itself sound? Known operations on each GPU, checked against a reference.",
      [](CLI::App& app) -> std::function<int()> {
        auto flags = std::make_shared<ValidateFlags>();
        app.description(
            "Layer 2: strips the user's code away and runs known operations on each GPU, every result checked "
            "against a float64 CPU reference (max |result - reference| / rms(reference) against a tolerance for the "
            "dtype), outputs poisoned first so an element never written shows, inputs random, never zeros, and "
            "every run compared bitwise with the first (nondeterminism is a failure). Checks: gemm (cuBLAS / "
            "rocBLAS; fp32 fp16 bf16 fp64; odd shapes), conv2d (cuDNN / MIOpen; 1x64x224x224 with 64x64x3x3), "
            "layernorm, softmax, reduce (gputriage's own kernels), atomics (add sub min max exchange CAS under "
            "contention; int32 int64 fp32 fp64), launch_limits (at the limit works, one past is refused), "
            "memory_pattern (address-in-address, random; walking ones at level 2; bad addresses reported), "
            "bandwidth (device copy, GB/s), pinned_copy (asynchronous both ways, verified), peer_copy, and at "
            "level 3 stress_gemm (8192^3 bf16) and stress_bandwidth, sustained while temperature, power, clocks "
            "and throttle reasons are sampled. Throughput is judged against the product's datasheet peak "
            "(kb/tables/gpu-arch-limits.yaml) and against the other GPUs. Levels: 1 quick (under 30 s per "
            "GPU), 2 thorough (more shapes, 80% of free memory), 3 stress (level 2 plus --duration seconds of "
            "each stress phase). The CUDA backend (driver API, libcuda.so.1) and the HIP backend (libamdhip64) "
            "are loaded at run time; the HIP backend, rocBLAS and MIOpen are NOT VERIFIED ON AMD HARDWARE. "
            "Exit status: 0 when every check passed or was skipped, 1 when one failed or erred, or when no GPU "
            "is usable (0 with --allow-no-gpu at level 1).");
        app.add_option("--level", flags->level, "1 quick, 2 thorough, 3 stress")->check(CLI::Range(1, 3));
        app.add_option("--device", flags->device, "A device number (CUDA's, then HIP's devices) or 'all'")
            ->type_name("N|all");
        app.add_option("--ops", flags->ops, "Only these checks (comma-separated)")->delimiter(',')->type_name("LIST");
        app.add_option("--dtypes", flags->dtypes, "Only these dtypes: fp32,fp16,bf16,fp64 (int32,int64 for atomics)")
            ->delimiter(',')
            ->type_name("LIST");
        app.add_option("--repeat", flags->repeat, "Runs per check, compared bitwise (default 5)")
            ->check(CLI::Range(1, 1000));
        app.add_option("--duration", flags->duration, "Level 3: seconds per stress phase (default 30)")
            ->check(CLI::Range(1.0, 86400.0));
        app.add_option("--memory-fraction", flags->memory_fraction,
                       "Fraction of free memory the pattern test covers (default: 1 GiB at level 1, 0.8 above)")
            ->check(CLI::Range(0.01, 0.95));
        app.add_option("--junit", flags->junit, "Also write the results as JUnit XML (one testcase per check)")
            ->type_name("FILE");
        app.add_option("--inject-fault", flags->inject_fault,
                       "Corrupt the result of this check on purpose (NAME or NAME:DTYPE, e.g. gemm:fp16) to see that "
                       "a failure is caught and reported")
            ->type_name("CHECK");
        app.add_flag("--allow-no-gpu", flags->allow_no_gpu, "At level 1, exit 0 when there is no GPU (checks skip)");
        app.add_flag("--quiet", flags->quiet, "No progress lines on stderr");
        app.add_flag(
            "--json", flags->json,
            "Print {level, devices: [{index, vendor, name, arch, ...}], checks: [{name, device, dtype, status "
            "(pass|fail|skip|error), detail, max_rel_error, tolerance, median_ms, throughput, throughput_unit, "
            "fraction_of_peak, runs, seconds}], telemetry, findings, notes, exit_code}");
        return [flags]() { return Validate(*flags); };
      }};
}

}  // namespace gputriage::cli
