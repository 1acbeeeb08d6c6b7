#include "forensics/classify.h"

#include <signal.h>
#include <sys/stat.h>

#include <array>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/signals.h"
#include "core/text.h"
#include "forensics/capture.h"

namespace gputriage::forensics {
using core::Classification;
using core::Frame;
using core::Hex;
using core::Instruction;
using core::IsSentByProcess;
using core::Mapping;
using core::ProcessReport;
using core::SiCodeMeaning;
using core::SiCodeName;
using core::SignalName;
using core::ThreadState;
namespace {

struct OutputPattern {
  const char* kind;
  core::Category category;
  const char* pattern;
};

// Error lines of the GPU runtimes and frameworks, the most specific first. The names are the
// runtimes' own (cudaError_t / hipError_t / hsa_status_t enumerators and their messages).
constexpr std::array kOutputPatterns = {
    OutputPattern{
        "gpu-device-assert", core::Category::kDeviceAssert,
        R"(device-side assert triggered|cudaErrorAssert|hipErrorAssert|CUDA_ERROR_ASSERT|block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion)"},
    OutputPattern{
        "gpu-illegal-address", core::Category::kIllegalAddress,
        R"(illegal memory access|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS|hipErrorIllegalAddress|HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION|misaligned address|cudaErrorMisalignedAddress|cudaErrorInvalidAddressSpace|CUDA_ERROR_INVALID_ADDRESS_SPACE|operation not supported on global/shared address space|unspecified launch failure|cudaErrorLaunchFailure|hipErrorLaunchFailure)"},
    OutputPattern{"gpu-page-fault", core::Category::kPageFault,
                  R"(Memory access fault by GPU node|HSA_STATUS_ERROR_MEMORY_FAULT)"},
    OutputPattern{
        "gpu-out-of-memory", core::Category::kOom,
        R"(CUDA out of memory|HIP out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory|CUBLAS_STATUS_ALLOC_FAILED|HSA_STATUS_ERROR_OUT_OF_RESOURCES|OutOfMemoryError)"},
    OutputPattern{
        "gpu-no-kernel-image", core::Category::kArchMismatch,
        R"(no kernel image is available for execution on the device|cudaErrorNoKernelImageForDevice|invalid device function|hipErrorInvalidDeviceFunction|hipErrorNoBinaryForGpu|No compatible code objects found)"},
    OutputPattern{
        "gpu-runtime-init", core::Category::kDriverRuntime,
        R"(no CUDA-capable device is detected|CUDA driver version is insufficient|cudaErrorInsufficientDriver|cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE|hipErrorNoDevice|Found no NVIDIA driver|cudaErrorInitializationError|hipErrorNotInitialized|CUDA_ERROR_NOT_INITIALIZED)"},
    OutputPattern{"collective-timeout", core::Category::kHangTimeout,
                  R"(Watchdog caught collective operation timeout|ProcessGroupNCCL.*[Tt]imeout|NCCL.*timed? ?out)"},
    OutputPattern{
        "gpu-compile-error", core::Category::kCompilerJit,
        R"(ptxas (?:fatal|error)|NVRTC_ERROR_\w+|nvrtc: error|HIPRTC_ERROR_\w+|hiprtc.*error|CompilationError)"},
    OutputPattern{
        "gpu-runtime-error", core::Category::kOther,
        R"(CUDA error|cudaError\w+|CUDA_ERROR_\w+|HIP error|hipError\w+|HSA_STATUS_ERROR_\w+|NCCL error|ncclInternalError|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+|rocBLAS error|MIOpen Error)"},
};

struct AbortPattern {
  const char* kind;
  const char* pattern;
  const char* explanation;
};

// Messages printed just before abort(): glibc's assert and heap checks, the C++ runtime.
constexpr std::array kAbortPatterns = {
    AbortPattern{"assertion-failed", R"(: Assertion [`'].*' failed\.)", "an assert() in the program failed"},
    AbortPattern{
        "heap-corruption",
        R"(free\(\): invalid|free\(\): double free detected|double free or corruption|malloc\(\): |corrupted size vs\. prev_size|corrupted double-linked list|munmap_chunk\(\): invalid pointer|realloc\(\): invalid|malloc_consolidate\(\): )",
        "glibc's allocator found its heap corrupted (double free, buffer overrun, use "
        "after free) and aborted"},
    AbortPattern{"stack-smashing", R"(\*\*\* stack smashing detected \*\*\*)",
                 "the stack protector found a local buffer overrun"},
    AbortPattern{"buffer-overflow", R"(\*\*\* buffer overflow detected \*\*\*)",
                 "a _FORTIFY_SOURCE check caught a buffer overflow"},
    AbortPattern{"c10-error", R"(terminate called after throwing an instance of 'c10::\w+)",
                 "a PyTorch (c10) error escaped as an uncaught C++ exception"},
    AbortPattern{"uncaught-exception", R"(terminate called after throwing an instance of)",
                 "a C++ exception was not caught"},
    AbortPattern{"terminate", R"(terminate called without an active exception|pure virtual method called)",
                 "std::terminate was called"},
};

const RE2& CompiledOutput(size_t i) {
  static const std::vector<std::unique_ptr<RE2>> compiled = [] {
    std::vector<std::unique_ptr<RE2>> out;
    for (const OutputPattern& p : kOutputPatterns) out.push_back(std::make_unique<RE2>(p.pattern));
    return out;
  }();
  return *compiled[i];
}

const RE2& CompiledAbort(size_t i) {
  static const std::vector<std::unique_ptr<RE2>> compiled = [] {
    std::vector<std::unique_ptr<RE2>> out;
    for (const AbortPattern& p : kAbortPatterns) out.push_back(std::make_unique<RE2>(p.pattern));
    return out;
  }();
  return *compiled[i];
}

std::string Clip(std::string_view line, size_t max = 400) {
  std::string s = core::SanitizeUtf8(core::Trim(line));
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

bool IsAbortHelper(std::string_view function) {
  static const RE2 kHelpers(
      R"(^(?:abort|raise|gsignal|__GI_\w+|__pthread_kill\w*|pthread_kill\w*|__assert_fail\w*|__libc_message\w*|__fortify_fail|__chk_fail|__stack_chk_fail|malloc_printerr|_int_free\w*|__libc_free|free|cfree|std::terminate|__cxa_throw|__cxa_rethrow|__gnu_cxx::__verbose_terminate_handler|__cxxabiv1::\w+|_Unwind_\w+|c10::detail::torchCheckFail\w*|c10::detail::torchInternalAssertFail\w*)\b)");
  return RE2::PartialMatch(re2::StringPiece(function.data(), function.size()), kHelpers);
}

bool IsSystemModule(std::string_view module) {
  static const RE2 kSystem(
      R"(^/(?:usr/)?lib(?:32|64|x32)?/|/ld-linux|/libc\.so|/libstdc\+\+|/libgcc_s|/libpthread|/libm\.so|/libpython|/python\d|/site-packages/|/dist-packages/|^linux-vdso|^\[vdso\])");
  return module.empty() || RE2::PartialMatch(re2::StringPiece(module.data(), module.size()), kSystem);
}

std::string FrameText(const Frame& f) {
  std::string text = f.function.empty() ? Hex(f.pc) : f.function;
  std::string where;
  if (f.file) {
    where = f.line ? fmt::format("{}:{}", *f.file, *f.line) : *f.file;
  } else if (!f.module.empty()) {
    std::string_view base = f.module;
    if (size_t slash = base.rfind('/'); slash != std::string_view::npos) base.remove_prefix(slash + 1);
    where = f.offset ? fmt::format("{}+{}", base, Hex(*f.offset)) : std::string(base);
  }
  return where.empty() ? text : fmt::format("{} ({})", text, where);
}

std::string FaultingInstruction(const ProcessReport& p) {
  if (!p.disassembly) return {};
  for (const Instruction& i : p.disassembly->instructions) {
    if (i.faulting) return i.text;
  }
  return {};
}

const ThreadState* CrashedThread(const ProcessReport& p) { return p.threads.empty() ? nullptr : &p.threads.front(); }

void AddFrameEvidence(const ProcessReport& p, Classification& c) {
  const ThreadState* t = CrashedThread(p);
  if (!t || t->frames.empty()) return;
  c.evidence.push_back({"stack", "crashed in " + FrameText(t->frames.front())});
  if (const Frame* user = FirstUserFrame(t->frames); user && user != &t->frames.front()) {
    c.evidence.push_back({"stack", "first frame in the program's own code: " + FrameText(*user)});
  }
}

std::optional<std::string> GpuModuleOnTop(const ProcessReport& p) {
  const ThreadState* t = CrashedThread(p);
  if (!t || t->frames.empty()) return std::nullopt;
  if (IsGpuRuntimeModule(t->frames.front().module)) return t->frames.front().module;
  return std::nullopt;
}

// A fault signal that a process sent with kill/tgkill/sigqueue instead of the CPU raising it:
// si_pid names the sender, which may be the process itself (raise(), kill(getpid())).
Classification ClassifySent(const ProcessReport& p, const std::set<int>* job_pids) {
  Classification c;
  c.kind = "signal-sent";
  const std::string name = SignalName(*p.signal);
  const std::string fault = *p.signal == SIGSEGV || *p.signal == SIGBUS ? "a memory fault" : "a fault";
  if (!p.sender_pid) {
    c.summary = fmt::format("{} was sent by a process, not caused by {}", name, fault);
  } else if (*p.sender_pid == p.pid) {
    c.summary = fmt::format("the process sent {} to itself (raise(), kill(getpid())), not {}", name, fault);
  } else if (job_pids && job_pids->count(*p.sender_pid)) {
    c.summary =
        fmt::format("{} was sent by another process of the job (pid {}), not caused by {}", name, *p.sender_pid, fault);
  } else {
    c.summary = fmt::format("{} was sent by another process (pid {}, outside the job), not caused by {}", name,
                            *p.sender_pid, fault);
  }
  c.detail = fmt::format("si_code {} says a process sent it; si_pid is the sender.",
                         SiCodeName(*p.signal, p.si_code.value_or(0)));
  return c;
}

Classification ClassifySegv(const ProcessReport& p) {
  Classification c;
  int code = p.si_code.value_or(0);
  std::string where = p.fault_location ? p.fault_location->description : "";
  if (code == SI_KERNEL) {
    c.kind = "wild-pointer";
    c.summary = "general-protection fault: a non-canonical (garbage) pointer was dereferenced";
    c.detail =
        "x86-64 reports accesses through addresses outside the canonical range as SIGSEGV "
        "with SI_KERNEL and no fault address; the pointer held garbage (uninitialised, "
        "overwritten, or freed memory).";
  } else if (p.fault_location && p.fault_location->kind == "null-page") {
    c.kind = "null-dereference";
    // A call through a null pointer faults fetching its first instruction: the PC is the fault
    // address. Code that merely could not be read (not in a core, file moved) says nothing.
    std::optional<uint64_t> pc = p.threads.empty() ? std::nullopt : ProgramCounter(p.threads.front().registers);
    bool call_null = pc && p.fault_address && *pc == *p.fault_address;
    c.summary = call_null ? "call through a null function pointer"
                          : fmt::format("null pointer dereference (address {})", Hex(*p.fault_address));
    c.detail = where;
    if (!call_null && p.disassembly && p.disassembly->instructions.empty()) {
      c.detail += (c.detail.empty() ? "" : " ") + std::string("(No instruction to show: ") +
                  p.disassembly->note.value_or("the code at the PC could not be read") + ".)";
    }
  } else if (p.fault_location && p.fault_location->kind == "stack-guard") {
    c.kind = "stack-overflow";
    c.summary = "stack overflow";
    c.detail = where;
  } else if (p.fault_location && p.fault_location->kind == "mapped") {
    c.kind = "access-violation";
    const Mapping* m = p.fault_location->mapping ? &*p.fault_location->mapping : nullptr;
    std::string perms = m ? m->perms : "";
    c.summary = fmt::format("access not allowed by the mapping's permissions ({})", perms.empty() ? "?" : perms);
    if (perms.size() == 4 && perms[1] == '-') c.summary = "write to read-only memory";
    if (perms.size() == 4 && perms[2] == '-' && p.fault_address && p.threads.size() &&
        ProgramCounter(p.threads.front().registers) == p.fault_address) {
      c.summary = "execution of non-executable memory";
    }
    c.detail = where;
  } else {
    c.kind = "wild-pointer";
    c.summary = p.fault_address
                    ? fmt::format("access to unmapped address {}: wild or dangling pointer", Hex(*p.fault_address))
                    : "access to an unmapped address";
    c.detail = where;
  }
  if (auto module = GpuModuleOnTop(p)) {
    c.summary += fmt::format(" inside the GPU runtime library {}", *module);
    c.kind = "fault-in-gpu-runtime";
    c.detail +=
        (c.detail.empty() ? "" : " ") + std::string(
                                            "The faulting frame is in a GPU runtime or driver library: either that "
                                            "library has a bug, or it was handed a bad pointer or a stale handle "
                                            "(look at the first frame in the program's own code).");
  }
  return c;
}

Classification ClassifyBus(const ProcessReport& p) {
  Classification c;
  int code = p.si_code.value_or(0);
  const Mapping* m = p.fault_location && p.fault_location->mapping ? &*p.fault_location->mapping : nullptr;
  if (code == 4 || code == 5) {  // BUS_MCEERR_AR / BUS_MCEERR_AO
    c.kind = "hardware-memory-error";
    c.category = core::Category::kHardware;
    c.summary = "uncorrectable hardware memory error in the process's memory (machine check)";
    return c;
  }
  if (code == BUS_ADRALN) {
    c.kind = "misaligned-access";
    c.summary = "misaligned memory access";
    return c;
  }
  if (m && core::StartsWith(m->path, "/dev/")) {
    c.kind = "sigbus-device-mapping";
    c.summary = fmt::format("bus error on a device memory mapping ({})", m->path);
    c.detail =
        "The address is inside memory mapped from a device file: the device (GPU BAR, "
        "device memory) could not complete the access — the device was reset, fell off "
        "the bus, or the mapping outlived its allocation. Check the kernel log.";
    return c;
  }
  if (m && !m->path.empty() && m->path[0] == '/' && p.fault_address) {
    struct stat st {};
    uint64_t file_position = m->file_offset + (*p.fault_address - m->start);
    if (stat(m->path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && file_position >= static_cast<uint64_t>(st.st_size)) {
      c.kind = "sigbus-truncated-file";
      c.summary = fmt::format("bus error reading past the end of a memory-mapped file ({})", m->path);
      c.detail = fmt::format(
          "The access is at byte {} of {}, which is now {} bytes long: the file was truncated "
          "(or written shorter) after it was mapped — typically a checkpoint or dataset file "
          "rewritten while another process mmaps it, or a full disk.",
          file_position, m->path, st.st_size);
      return c;
    }
  }
  c.kind = "sigbus";
  c.summary = "bus error";
  if (p.fault_location) c.detail = p.fault_location->description;
  return c;
}

Classification ClassifyIll(const ProcessReport& p) {
  Classification c;
  std::string insn = FaultingInstruction(p);
  if (insn == "ud2" || core::StartsWith(insn, "ud1") || core::StartsWith(insn, "ud0") ||
      core::StartsWith(insn, "udf") || core::StartsWith(insn, "brk")) {
    c.kind = "deliberate-trap";
    c.summary = fmt::format(
        "deliberate trap instruction ({}): the compiler's __builtin_trap, "
        "code marked unreachable was reached, or a runtime check failed",
        insn);
    return c;
  }
  if (p.disassembly && !p.disassembly->missing_on_cpu.empty()) {
    c.kind = "illegal-instruction-isa";
    c.category = core::Category::kArchMismatch;
    std::string missing = fmt::format("{}", fmt::join(p.disassembly->missing_on_cpu, ", "));
    c.summary = fmt::format("built for a newer CPU: `{}` needs {}, which this CPU does not have", insn, missing);
    c.detail =
        "The code was compiled for a CPU with more instruction-set extensions than this "
        "one (e.g. -march=native on the build machine, or a wheel built for newer CPUs). "
        "Rebuild for this CPU's level, or use a build with runtime dispatch.";
    return c;
  }
  c.kind = "illegal-instruction";
  c.summary = insn.empty() ? "illegal instruction" : fmt::format("illegal instruction `{}`", insn);
  c.detail =
      "The CPU could not execute the instruction at the PC: corrupted code, a jump into "
      "data, or an extension this disassembler does not know.";
  return c;
}

Classification ClassifyFpe(const ProcessReport& p) {
  Classification c;
  int code = p.si_code.value_or(0);
  if (code == FPE_INTDIV) {
    c.kind = "integer-divide-by-zero";
    c.summary = "integer division by zero (or INT_MIN / -1)";
  } else if (code == FPE_INTOVF) {
    c.kind = "integer-overflow";
    c.summary = "integer overflow trap";
  } else {
    c.kind = "floating-point-exception";
    c.summary = fmt::format("floating-point exception ({})", SiCodeMeaning(SIGFPE, code));
  }
  return c;
}

Classification ClassifyAbort(const ProcessReport* p, std::string_view stderr_tail) {
  Classification c;
  c.kind = "abort";
  c.summary = "the program called abort()";
  // The last abort message in stderr is the one that matters.
  std::vector<std::string_view> lines = core::SplitLines(stderr_tail);
  for (size_t li = lines.size(); li-- > 0;) {
    re2::StringPiece line(lines[li].data(), lines[li].size());
    for (size_t i = 0; i < kAbortPatterns.size(); ++i) {
      if (!RE2::PartialMatch(line, CompiledAbort(i))) continue;
      c.kind = kAbortPatterns[i].kind;
      c.summary = fmt::format("{}: {}", kAbortPatterns[i].explanation, Clip(lines[li], 200));
      c.evidence.push_back({"stderr", Clip(lines[li])});
      if (li + 1 < lines.size() && core::Trim(lines[li + 1]).rfind("what():", 0) == 0) {
        c.evidence.push_back({"stderr", Clip(lines[li + 1])});
        c.summary += " — " + Clip(lines[li + 1], 200);
      }
      li = 0;
      break;
    }
  }
  if (p) {
    if (const ThreadState* t = CrashedThread(*p)) {
      for (const Frame& f : t->frames) {
        if (f.function.empty() || IsAbortHelper(f.function)) continue;
        c.evidence.push_back({"stack", "aborting frame: " + FrameText(f)});
        break;
      }
    }
  }
  return c;
}

}  // namespace

bool IsGpuRuntimeModule(std::string_view module) {
  static const RE2 kGpu(
      R"((?:^|/)lib(?:cuda|cudart|nvidia-\w+|nvrtc|cublas\w*|cudnn\w*|cufft\w*|curand|cusparse\w*|cusolver\w*|nccl|nvJitLink|amdhip64|hsa-runtime64|hiprtc|rocblas|hipblas\w*|miopen|MIOpen|rccl|rocm_smi64|amd_comgr|hipfft|rocfft|torch_cuda\w*|torch_hip\w*|c10_cuda|c10_hip)\b)");
  return RE2::PartialMatch(re2::StringPiece(module.data(), module.size()), kGpu);
}

const Frame* FirstUserFrame(const std::vector<Frame>& frames) {
  for (const Frame& f : frames) {
    if (IsSystemModule(f.module) || IsGpuRuntimeModule(f.module)) continue;
    if (!f.function.empty() && IsAbortHelper(f.function)) continue;
    return &f;
  }
  return nullptr;
}

std::optional<OutputError> FindOutputError(std::string_view text) {
  std::vector<std::string_view> lines = core::SplitLines(text);
  // GPU errors first, in pattern order (most specific), the first line that says it.
  for (size_t i = 0; i < kOutputPatterns.size(); ++i) {
    for (std::string_view line : lines) {
      if (RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), CompiledOutput(i))) {
        return OutputError{kOutputPatterns[i].kind, kOutputPatterns[i].category, Clip(line)};
      }
    }
  }
  // A Python traceback: its last "SomeError: message" line.
  static const RE2 kPyLast(R"(^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning))(?::.*)?$)");
  bool traceback = false;
  std::optional<OutputError> last;
  for (std::string_view line : lines) {
    if (core::StartsWith(line, "Traceback (most recent call last):")) traceback = true;
    if (traceback && RE2::FullMatch(re2::StringPiece(line.data(), line.size()), kPyLast)) {
      last = OutputError{"python-exception", core::Category::kOther, Clip(line)};
    }
  }
  return last;
}

namespace {

// A job stopped at its --timeout: where its main thread was waiting.
Classification ClassifyHang(const ProcessReport* p) {
  Classification c;
  c.kind = "hang";
  c.category = core::Category::kHangTimeout;
  c.summary = "the job did not finish before the timeout and was terminated";
  if (p && !p->threads.empty() && !p->threads.front().frames.empty()) {
    c.evidence.push_back({"stack", "main thread was in " + FrameText(p->threads.front().frames.front())});
    if (const Frame* user = FirstUserFrame(p->threads.front().frames)) {
      c.evidence.push_back({"stack", "waiting from the program's own code at " + FrameText(*user)});
    }
  }
  return c;
}

// A process captured while running (`gputriage capture`): where its main thread was waiting. It
// was not stopped by a timeout and has not failed as far as we know; the user suspects a hang.
Classification ClassifyCaptured(const ProcessReport* p) {
  Classification c;
  c.kind = "captured-running";
  c.category = core::Category::kHangTimeout;
  std::string who = p && p->pid ? fmt::format("pid {}", *p->pid) : std::string("the process");
  c.summary =
      fmt::format("{} was captured while running (gputriage capture): every thread's stack, then detached", who);
  c.detail =
      "A snapshot of a live process, taken because it was thought to be hung; it was not terminated, "
      "and no timeout expired.";
  if (p && !p->threads.empty() && !p->threads.front().frames.empty()) {
    c.evidence.push_back({"stack", "main thread was in " + FrameText(p->threads.front().frames.front())});
    if (const Frame* user = FirstUserFrame(p->threads.front().frames)) {
      c.evidence.push_back({"stack", "waiting from the program's own code at " + FrameText(*user)});
    }
  }
  return c;
}

// A captured process that died of a signal; an abort after a GPU error line takes that error.
Classification ClassifySignal(const ProcessReport& p, const FailureContext& ctx,
                              const std::optional<OutputError>& output) {
  Classification c;
  // abort() and raise(SIGTRAP) send the signal to the process itself: those keep their meaning.
  const bool self_sent_by_design =
      (*p.signal == SIGABRT || *p.signal == SIGTRAP) && (!p.sender_pid || *p.sender_pid == p.pid);
  const bool sent = p.si_code && IsSentByProcess(*p.si_code) && !self_sent_by_design;
  switch (sent ? 0 : *p.signal) {
    case 0:
      c = ClassifySent(p, ctx.job_pids);
      break;
    case SIGSEGV:
      c = ClassifySegv(p);
      break;
    case SIGBUS:
      c = ClassifyBus(p);
      break;
    case SIGILL:
      c = ClassifyIll(p);
      break;
    case SIGFPE:
      c = ClassifyFpe(p);
      break;
    case SIGABRT:
      c = ClassifyAbort(&p, ctx.stderr_tail);
      break;
    case SIGTRAP:
      c.kind = "breakpoint-trap";
      c.summary = "trace/breakpoint trap (int3 or __builtin_debugtrap) with no debugger attached";
      break;
    case SIGSYS:
      c.kind = "seccomp-violation";
      c.category = core::Category::kDriverRuntime;
      c.summary = "a system call forbidden by the seccomp filter (container profile)";
      break;
    default:
      c.kind = "crash";
      c.summary = SignalName(*p.signal);
  }
  if (*p.signal != SIGABRT) AddFrameEvidence(p, c);
  if (*p.signal == SIGABRT && c.kind == "abort" && output) {
    // Frameworks abort after printing a GPU error: that error is the cause.
    c.kind = output->kind;
    c.category = output->category;
    c.summary = output->line;
  }
  return c;
}

// A job killed by a signal without a capture: the OOM killer when the kernel log says so.
Classification ClassifyTermination(int term_signal, const std::vector<CorrelatedRecord>* kernel_log) {
  Classification c;
  bool oom = false;
  if (kernel_log) {
    for (const CorrelatedRecord& r : *kernel_log) {
      if (r.oom_kill) {
        oom = true;
        c.evidence.push_back({"kernel log", Clip(r.record.message)});
      }
    }
  }
  if (term_signal == SIGKILL && oom) {
    c.kind = "oom-killed";
    c.category = core::Category::kOom;
    c.summary = "killed by the kernel's OOM killer: the host (or the container's memory cgroup) ran out of memory";
  } else if (term_signal == SIGKILL) {
    c.kind = "killed";
    c.summary =
        "killed by SIGKILL from outside (another process, a scheduler, or a container "
        "runtime); the kernel log shows no OOM kill of it";
  } else {
    c.kind = "terminated-by-signal";
    c.summary = fmt::format("terminated by {}", SignalName(term_signal));
  }
  return c;
}

// The error line from stderr (unless a crash's own evidence already has it) and the kernel-log
// records that name the job.
void AddOutputAndKernelLogEvidence(const FailureContext& ctx, const std::optional<OutputError>& output,
                                   Classification& c) {
  const ProcessReport* p = ctx.process;
  if (output && (!p || !p->signal || *p->signal == SIGABRT)) {
    bool already = false;
    for (const core::Evidence& e : c.evidence) already = already || e.text == output->line;
    if (!already) c.evidence.push_back({"stderr", output->line});
  }
  if (ctx.kernel_log) {
    for (const CorrelatedRecord& r : *ctx.kernel_log) {
      if (!r.job_pid || r.oom_kill) continue;
      std::string text = Clip(r.record.message);
      c.evidence.push_back({r.xid ? fmt::format("kernel log (Xid {})", *r.xid) : "kernel log", text});
    }
  }
}

// Errors of the GPU stack itself (not a collective timeout, which is the waiting side, and not a
// Python exception, which may be anything).
bool IsGpuOutputError(std::string_view kind) { return kind.starts_with("gpu-") && kind != "gpu-compile-error"; }

std::string TimeoutAfterFailureText(const ProcessReport& p) {
  std::string who =
      p.rank ? fmt::format("rank {} (pid {})", *p.rank, p.pid.value_or(0)) : fmt::format("pid {}", p.pid.value_or(0));
  std::string when = p.stopped_at_s ? fmt::format(" at +{:.2f} s", *p.stopped_at_s) : "";
  return fmt::format(
      "{} failed first{}; the rest of the job was still running when the timeout expired, "
      "waiting for it: the timeout is a consequence, not the cause",
      who, when);
}

}  // namespace

std::optional<Classification> Classify(const FailureContext& ctx) {
  const ProcessReport* p = ctx.process;
  std::optional<OutputError> output = FindOutputError(ctx.stderr_tail);
  std::optional<Classification> result;
  if (ctx.captured_running) {
    result = ClassifyCaptured(p);
  } else if (ctx.timed_out && p && p->signal) {
    // A process of the job died before the timeout (one rank of a distributed job): that is
    // the first failure; the rest of the job waiting for it until the timeout is its consequence.
    result = ClassifySignal(*p, ctx, output);
    result->evidence.push_back({"timeout", TimeoutAfterFailureText(*p)});
  } else if (ctx.timed_out && output && IsGpuOutputError(output->kind)) {
    // A GPU error was printed (a rank that raised it and exited) and the job then hung.
    Classification c;
    c.kind = output->kind;
    c.category = output->category;
    c.summary = output->line;
    c.evidence.push_back({"timeout",
                          "the job printed this error, then did not finish before the timeout: the "
                          "processes left were waiting for the one that failed"});
    result = c;
  } else if (ctx.timed_out) {
    result = ClassifyHang(p);
  } else if (p && p->signal) {
    result = ClassifySignal(*p, ctx, output);
  } else if (ctx.term_signal && *ctx.term_signal == SIGPIPE && ctx.output_reader_gone) {
    return std::nullopt;  // `job | head`: the reader had what it wanted
  } else if (ctx.term_signal) {
    result = ClassifyTermination(*ctx.term_signal, ctx.kernel_log);
  } else if (ctx.exit_code && *ctx.exit_code != 0 && output) {
    Classification c;
    c.kind = output->kind;
    c.category = output->category;
    c.summary = output->line;
    result = c;
  }
  if (!result) return std::nullopt;
  AddOutputAndKernelLogEvidence(ctx, output, *result);
  return result;
}

std::string CrashSignature(const ProcessReport* process, const Classification& classification) {
  std::string sig = classification.kind;
  if (process && process->signal) sig = SignalName(*process->signal) + "/" + sig;
  if (process && !process->threads.empty()) {
    int taken = 0;
    for (const Frame& f : process->threads.front().frames) {
      if (f.function.empty() || IsAbortHelper(f.function)) continue;
      std::string name = f.function.substr(0, f.function.find('('));
      sig += " " + name;
      if (++taken == 3) break;
    }
  } else {
    // No stack: the error line with its numbers blanked (pointers, sizes, pids vary per run).
    static const RE2 kNumbers(R"(0x[0-9a-fA-F]+|\d+)");
    std::string line = classification.summary;
    RE2::GlobalReplace(&line, kNumbers, "N");
    sig += " " + line;
  }
  return sig;
}

}  // namespace gputriage::forensics
