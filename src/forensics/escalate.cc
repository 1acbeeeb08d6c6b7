#include "forensics/escalate.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/scoped_fd.h"
#include "forensics/debug_agent_report.h"
#include "forensics/exec_failure.h"
#include "forensics/gpu_record.h"
#include "forensics/sanitizer_report.h"
#include "forensics/supervisor.h"

namespace gputriage::forensics {
namespace {

// One rerun: the job with `env`, not traced, its output kept (tails) but not shown again.
struct StepRun {
  std::optional<SuperviseOutcome> outcome;
  std::string error;
  double seconds = 0;
};

StepRun Rerun(const std::vector<std::string>& argv, const std::vector<std::string>& env,
              const std::optional<std::chrono::milliseconds>& timeout) {
  StepRun step;
  core::ScopedFd null_fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  SuperviseOptions options;
  options.argv = argv;
  options.env_overrides = env;
  options.timeout = timeout;
  options.trace = false;
  options.kmsg_path = "";
  options.stdout_fd = null_fd.get();
  options.stderr_fd = null_fd.get();
  double start = MonotonicSeconds();
  auto outcome = Supervise(options);
  step.seconds = MonotonicSeconds() - start;
  if (!outcome.ok()) {
    step.error = outcome.error().message;
  } else {
    step.outcome = std::move(*outcome);
  }
  return step;
}

std::optional<int64_t> Status(const SuperviseOutcome& o) {
  if (o.exec_errno) return std::nullopt;
  return o.ShellStatus();
}

// Runs a checking step's command (compute-sanitizer, the job with the ROCm debug agent) and reads
// the tool's report from its output into the step; false, with the outcome said, when it could
// not run.
bool RunCheckStep(core::EscalationStep& step, const EscalateRequest& request, std::string_view what,
                  SanitizerReport (*parse)(std::string_view)) {
  StepRun checked = Rerun(step.command, step.environment, request.timeout);
  step.seconds = checked.seconds;
  if (!checked.outcome) {
    step.outcome = fmt::format("could not run {}: {}", what, checked.error);
    return false;
  }
  step.exit_status = Status(*checked.outcome);
  SanitizerReport report = parse(checked.outcome->stdout_tail + "\n" + checked.outcome->stderr_tail);
  step.errors = std::move(report.errors);
  step.errors_reported = report.errors_reported;
  return true;
}

}  // namespace

std::optional<std::string> AssertLocation(std::string_view message) {
  // CUDA's device assert: "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1021: indexFuncSmallIndex:
  // block: [0,0,0], thread: [0,0,0] Assertion `...` failed."; HIP's and glibc's: "file:line: function:
  // Assertion `...' failed."
  static const re2::RE2 kAt(R"((?:^|\s)(\S+\.(?:cu|cuh|cpp|cxx|cc|c|h|hpp|hip|py)):(\d+):)");
  std::string file, line;
  if (!re2::RE2::PartialMatch(re2::StringPiece(message.data(), message.size()), kAt, &file, &line)) return std::nullopt;
  return file + ":" + line;
}

bool Escalatable(const RunAssessment& run) {
  if (!run.failed()) return false;
  core::Category c = run.classification->category;
  return c == core::Category::kIllegalAddress || c == core::Category::kPageFault || c == core::Category::kDeviceAssert;
}

std::optional<std::string> FindComputeSanitizer() {
  std::vector<std::string> candidates;
  if (std::optional<std::string> in_path = CommandPath("compute-sanitizer")) candidates.push_back(*in_path);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(var); v && *v) candidates.push_back(std::string(v) + "/bin/compute-sanitizer");
  }
  candidates.emplace_back("/usr/local/cuda/bin/compute-sanitizer");
  for (const std::string& candidate : candidates) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::optional<std::string> FindDebugAgent() {
  if (const char* set = std::getenv("HSA_TOOLS_LIB");
      set && std::string_view(set).find("debug-agent") != std::string_view::npos)
    return std::string(set);
  std::vector<std::string> dirs;
  if (const char* rocm = std::getenv("ROCM_PATH"); rocm && *rocm) dirs.push_back(std::string(rocm) + "/lib");
  dirs.insert(dirs.end(), {"/opt/rocm/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"});
  for (const std::string& dir : dirs) {
    for (const char* name : {"librocm-debug-agent.so.2", "librocm-debug-agent.so"}) {
      std::string path = dir + "/" + name;
      if (::access(path.c_str(), R_OK) == 0) return path;
    }
  }
  return std::nullopt;
}

core::Escalation Escalate(const EscalateRequest& request, double job_seconds, const catalog::ErrorCodes& errors) {
  core::Escalation esc;
  esc.job_seconds = job_seconds;
  auto say = [&](const std::string& text) {
    if (request.progress) request.progress(text);
  };

  // Step 1: synchronous launches, with the recorder.
  core::EscalationStep sync;
  sync.step = "sync";
  sync.command = request.command;
  sync.environment = {"CUDA_LAUNCH_BLOCKING=1", "AMD_SERIALIZE_KERNEL=3", "HIP_LAUNCH_BLOCKING=1"};
  say("gputriage: escalation 1/2: rerunning with synchronous launches to name the faulting kernel\n");
  RecordSession recording;
  recording.Start(request.recorder_library, request.record_parent, request.writer_tag);
  std::vector<std::string> env = sync.environment;
  env.insert(env.end(), recording.env().begin(), recording.env().end());
  StepRun run = Rerun(request.command, env, request.timeout);
  sync.seconds = run.seconds;
  if (!run.outcome) {
    sync.outcome = "could not rerun the job: " + run.error;
    esc.steps.push_back(std::move(sync));
    esc.summary = esc.steps.back().outcome;
    return esc;
  }
  sync.exit_status = Status(*run.outcome);
  if (recording.not_possible()) {
    sync.outcome = fmt::format("exit status {}; the recorder could not be loaded ({}), so no launch was named",
                               sync.exit_status.value_or(-1), *recording.not_possible());
  } else {
    core::GpuCalls calls = recording.Read(errors, request.command.front());
    // A launch that itself failed, else the newest launch before the first sticky error.
    for (const core::GpuCall& c : calls.calls) {
      if (c.kernel && c.result != 0) {
        sync.failing_launch = c;
        break;
      }
    }
    bool sticky_seen = false;
    for (const core::GpuErrorCount& e : calls.errors)
      sticky_seen = sticky_seen || IsStickyError(errors, e.api, e.result);
    if (!sync.failing_launch && sticky_seen && !calls.candidates.empty())
      sync.failing_launch = calls.candidates.front();
    if (sync.failing_launch) {
      const core::GpuCall& l = *sync.failing_launch;
      std::string shape = core::LaunchShapeText(l);
      if (!shape.empty()) shape += ", ";
      sync.outcome = fmt::format("the error surfaced right after kernel {} ({}{} at {:.3f} ms)", l.kernel.value_or("?"),
                                 shape, l.api, l.t_ms);
      esc.kernel = l.kernel;
    } else if (sync.exit_status == 0) {
      sync.outcome = "the job passed with synchronous launches: the failure did not reproduce (timing-dependent?)";
    } else {
      sync.outcome = fmt::format("exit status {}, but no GPU call reported a context-killing error: no kernel to name",
                                 sync.exit_status.value_or(-1));
    }
  }
  esc.steps.push_back(sync);

  // Step 2: compute-sanitizer on that kernel (NVIDIA only).
  bool nvidia = sync.failing_launch && ApiVendor(sync.failing_launch->api) == "cuda";
  if (request.sync_only || !esc.kernel) {
    esc.summary = esc.steps.back().outcome;
    return esc;
  }
  core::EscalationStep san;
  san.step = "sanitizer";
  std::optional<std::string> tool = nvidia ? FindComputeSanitizer() : std::nullopt;
  if (!request.device_assert.empty()) {
    std::optional<std::string> at = AssertLocation(request.device_assert);
    san.outcome = fmt::format(
        "not run: a device-side assert is the kernel's own check and fired before any bad access, so memcheck "
        "has nothing to add; the assert names {}",
        at ? *at : "no file:line (" + request.device_assert.substr(0, 200) + ")");
    if (at) esc.location = *at;
  } else if (!nvidia) {
    // AMD: the ROCm debug agent, loaded by the ROCm runtime through HSA_TOOLS_LIB, prints the
    // stopped waves, their kernel and source line when a queue error or memory fault stops the job.
    san.step = "debug-agent";
    std::optional<std::string> agent = FindDebugAgent();
    if (!agent) {
      san.outcome =
          "not run: the ROCm debug agent (librocm-debug-agent.so.2) was not found ($ROCM_PATH/lib, /opt/rocm/lib, "
          "the system's library directories)";
    } else {
      san.environment = {"HSA_TOOLS_LIB=" + *agent};
      san.command = request.command;
      say("gputriage: escalation 2/2: rerunning with the ROCm debug agent (HSA_TOOLS_LIB)\n");
      if (RunCheckStep(san, request, "the job with the ROCm debug agent", ParseDebugAgentReport)) {
        if (san.errors.empty()) {
          san.outcome = fmt::format("the debug agent reported no queue error or memory fault (exit status {})",
                                    san.exit_status.value_or(-1));
        } else {
          const core::SanitizerError& e = san.errors.front();
          san.outcome = fmt::format("{}{}{}{}{}", e.kind, e.kernel.empty() ? "" : " in " + e.kernel,
                                    e.file ? fmt::format(" at {}:{}", *e.file, e.line.value_or(0)) : "",
                                    e.address ? " address " + *e.address : "", e.problem ? ": " + *e.problem : "");
          if (!e.kernel.empty()) esc.kernel = e.kernel;
          if (e.file) esc.location = fmt::format("{}:{}", *e.file, e.line.value_or(0));
        }
      }
    }
  } else if (!tool) {
    san.outcome = "not run: compute-sanitizer was not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)";
  } else {
    // A graph launch has several kernels: memcheck then checks them all (no name filter).
    bool graph = sync.failing_launch->graph_kernels.has_value();
    std::string base = graph ? "the graph's kernels" : KernelBaseName(*esc.kernel);
    // Not set here: PYTORCH_NO_CUDA_MEMORY_CACHING=1 (each tensor its own cudaMalloc, so memcheck
    // sees a tensor's end; c10/cuda/CUDACachingAllocator.cpp: "the caching allocator foils
    // cuda-memcheck"). On the H200 it made this step of a 1000-step training job that faults at
    // the end take 53 s, against 9 s for the job and 68 s for the whole job under the sanitizer:
    // every tensor's free synchronises. The attribution says when to rerun with it.
    san.command = {*tool, "--tool", "memcheck", "--print-limit", "20"};
    if (!graph) san.command.insert(san.command.end(), {"--kernel-name", "kns=" + base});
    san.command.insert(san.command.end(), request.command.begin(), request.command.end());
    say(fmt::format("gputriage: escalation 2/2: rerunning under compute-sanitizer memcheck, {} only\n",
                    graph ? base : "kernel " + base));
    if (RunCheckStep(san, request, "compute-sanitizer", ParseSanitizerReport)) {
      if (san.errors.empty()) {
        san.outcome =
            fmt::format("memcheck reported no access error in {} (exit status {})", base, san.exit_status.value_or(-1));
      } else {
        const core::SanitizerError& e = san.errors.front();
        std::string where = e.file ? fmt::format("{}:{}", *e.file, e.line.value_or(0)) : e.pc_offset.value_or("?");
        san.outcome = fmt::format("{} of {} bytes in {} at {}, thread {} block {}, address {} {}", e.kind,
                                  e.access_bytes.value_or(0), e.kernel, where, core::DimsText(e.thread),
                                  core::DimsText(e.block), e.address.value_or("?"), e.problem.value_or(""));
        if (e.relation && e.nearest_allocation) {
          san.outcome += fmt::format(" ({} the nearest allocation at {}, {} bytes)", *e.relation, *e.nearest_allocation,
                                     e.nearest_allocation_bytes.value_or(0));
        }
        esc.kernel = e.kernel;
        if (e.file) esc.location = where;
      }
    }
  }
  esc.steps.push_back(std::move(san));
  esc.summary = esc.steps.back().errors.empty() ? esc.steps.front().outcome : esc.steps.back().outcome;
  return esc;
}

void AddEscalation(RunAssessment& run, core::Escalation escalation) {
  core::Finding finding;
  finding.id = "run.gpu-kernel";
  finding.layer = 4;
  finding.severity = escalation.kernel ? core::Severity::kError : core::Severity::kInfo;
  finding.title = escalation.kernel ? fmt::format("faulting kernel: {}{}", *escalation.kernel,
                                                  escalation.location ? " at " + *escalation.location : "")
                                    : "escalation could not name the faulting kernel";
  finding.detail = escalation.summary;
  double total = 0;
  for (const core::EscalationStep& s : escalation.steps) {
    total += s.seconds;
    finding.evidence.push_back({"escalation.json", fmt::format("{} ({:.1f} s): {}", s.step, s.seconds, s.outcome)});
  }
  finding.evidence.push_back({"escalation.json", fmt::format("the job itself: {:.1f} s; escalation: {:.1f} s",
                                                             escalation.job_seconds, total)});
  run.findings.push_back(std::move(finding));
  run.escalation = std::move(escalation);
}

}  // namespace gputriage::forensics
