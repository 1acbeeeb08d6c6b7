#include "kb/analysis.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <re2/re2.h>
#include <re2/set.h>

#include "checks/knowledge.h"
#include "kmsg/classify.h"
#include "kmsg/kmsg.h"
#include "core/json_read.h"
#include "core/text.h"
#include "core/process.h"
#include "core/signals.h"
#include "core/snapshot.h"
#include "kb/vm_fault.h"

namespace gputriage::kb {
namespace {

using core::Json;

// The general classifier: what a line says about the category when no known issue decides it.
// Weights: 3 = the runtime's own name for the failure, 2 = a strong phrase, 1 = a hint.
struct GeneralSignal {
  const char* category;
  int weight;
  const char* pattern;
};

constexpr std::array kGeneral = {
    GeneralSignal{"device-assert", 3, R"(device-side assert triggered|cudaErrorAssert|hipErrorAssert|block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion)"},
    GeneralSignal{"illegal-address", 3, R"(illegal memory access|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS|hipErrorIllegalAddress|HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION|cudaErrorInvalidAddressSpace|misaligned address)"},
    GeneralSignal{"illegal-address", 3, R"(Invalid __(?:global|shared|local)__ (?:read|write)|Address 0x[0-9a-fA-F]+ is out of bounds|is misaligned)"},
    GeneralSignal{"illegal-address", 2, R"(unspecified launch failure|cudaErrorLaunchFailure|Xid \(PCI:[^)]*\): 31\b|MMU Fault)"},
    GeneralSignal{"page-fault", 3, R"(Memory access fault by GPU node|\[(?:gfxhub|mmhub)\d*\] (?:no-retry |retry )?page fault|VM_L2_PROTECTION_FAULT_STATUS|HSA_STATUS_ERROR_MEMORY_FAULT)"},
    GeneralSignal{"oom", 3, R"((?i)out of memory|cudaErrorMemoryAllocation|hipErrorOutOfMemory|CUDA_ERROR_OUT_OF_MEMORY|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|cudaMalloc failed)"},
    GeneralSignal{"oom", 2, R"((?i)failed to allocate|Could not create cudnn handle)"},
    GeneralSignal{"arch-mismatch", 3, R"(no kernel image is available for execution on the device|cudaErrorNoKernelImageForDevice|invalid device function|hipErrorNoBinaryForGpu|hipErrorInvalidDeviceFunction|No compatible code objects found|is not compatible with the current PyTorch installation|TensileLibrary.*(?:not found|Cannot|cannot)|[Cc]annot read \S*TensileLibrary|for GPU arch : gfx|HSA_OVERRIDE_GFX_VERSION)"},
    GeneralSignal{"arch-mismatch", 1, R"(\bsm_\d+a?\b|\bgfx\d{3,4}\b|CUDA capability)"},
    GeneralSignal{"abi-mismatch", 3, R"(undefined symbol|cannot open shared object file|version `(?:GLIBC|GLIBCXX|CXXABI)_[\d.]+' not found|symbol lookup error|ImportError: .*\.so)"},
    GeneralSignal{"compiler-jit", 3, R"(ptxas (?:fatal|error)|nvrtc: error|NVRTC_ERROR_\w+|HIPRTC_ERROR_\w+|hiprtc.*[Ee]rror|CompilationError|triton\.compiler|LLVM ERROR|clang(?:\+\+)?: error|error: unknown target|nvcc fatal|offload-arch)"},
    GeneralSignal{"compiler-jit", 1, R"(\berror: |compil(?:e|ation) (?:failed|error))"},
    GeneralSignal{"compiler-jit", 3, R"(OutOfResources|out of resource: shared memory)"},
    GeneralSignal{"compiler-jit", 2, R"(triton/compiler/)"},
    GeneralSignal{"hang-timeout", 3, R"(Watchdog caught collective operation timeout|ring \w+[\d.]* timeout|MES failed to respond|failed to remove hardware queue|GPU hang|[Hh]ung task|NCCL.*[Tt]imeout|timed out after|Xid \(PCI:[^)]*\): (?:8|109)\b)"},
    GeneralSignal{"hang-timeout", 2, R"((?i)\b(?:hangs?|hanging|hung|deadlock(?:ed|s)?|stuck)\b)"},
    GeneralSignal{"hang-timeout", 1, R"((?i)timeout|timed out)"},
    GeneralSignal{"hardware", 3, R"((?i)uncorrectable ECC|ECC error|fallen off the bus|Xid \(PCI:[^)]*\): (?:32|48|54|63|64|74|79|92|94|95|110|140|144)\b|PCIe Bus Error|Hardware Error|Machine check|RAS (?:error|event)|row remap)"},
    GeneralSignal{"hardware", 1, R"((?i)AER|PCIe|power|thermal|overheat)"},
    GeneralSignal{"hardware", 2, R"(rejects atomics|PCIe atomics)"},
    GeneralSignal{"driver-runtime", 3, R"(Failed to initialize NVML|Driver/library version mismatch|CUDA driver version is insufficient|no CUDA-capable device is detected|cudaErrorNoDevice|hipErrorNoDevice|HSA_STATUS_ERROR_OUT_OF_RESOURCES|hsa_init|Unable to open /dev/kfd|/dev/kfd|NCCL WARN .*(?:socket|Bootstrap)|no socket interface found|NVIDIA-SMI has failed|cudaErrorInitializationError|Found no NVIDIA driver)"},
    // Transport set-up (NCCL/RCCL sockets, bootstrap) and GSP firmware (Xid 119/120/38/150 are
    // driver-firmware in NVIDIA's Xid catalog).
    GeneralSignal{"driver-runtime", 3, R"(ncclSystemError|unhandled system error|Socket creation failed|ncclSocket\w*:|NET/Socket|Xid \(PCI:[^)]*\): (?:38|119|120|150)\b|RPC from GSP)"},
    GeneralSignal{"driver-runtime", 1, R"((?i)permission denied|driver|not supported by the|KFD)"},
    GeneralSignal{"numerical", 3, R"(Difference at \d+: |(?i)verification (?:failed|failure)|(?:Forward|Backward) (?:Convolution|Conv) (?:Failed|Verification))"},
    GeneralSignal{"numerical", 3, R"((?i)\bnan\b|\binf\b|Mismatched elements|not close|mismatch|wrong results?|incorrect results?|verification failed|garbage)"},
    // Weight 0: no category, only a candidate line for the signature when nothing else is.
    GeneralSignal{"", 0, R"((?i)error|fault|fail|abort|exception|panic|killed|terminate)"},
};

const RE2::Set& GeneralSet() {
  static const RE2::Set* set = [] {
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);
    options.set_log_errors(false);
    // RE2's default 8 MiB leaves the DFA of these case-insensitive alternations rebuilding its
    // state cache over and over (or giving up) on long inputs.
    options.set_max_mem(64 << 20);
    auto* s = new RE2::Set(options, RE2::UNANCHORED);
    for (const GeneralSignal& g : kGeneral) s->Add(g.pattern, nullptr);
    s->Compile();
    return s;
  }();
  return *set;
}

// The Categories() index of general signal `signal` (computed once; a per-line string key
// would allocate on every hit).
int CategoryIndex(int signal) {
  static const std::vector<int> kIndex = [] {
    std::vector<int> out;
    for (const GeneralSignal& g : kGeneral) {
      int found = 0;
      for (size_t i = 0; i < Categories().size(); ++i) {
        if (Categories()[i] == g.category) found = static_cast<int>(i);
      }
      out.push_back(found);
    }
    return out;
  }();
  return kIndex[static_cast<size_t>(signal)];
}

// "RuntimeError: CUDA error: ...", "torch.AcceleratorError: ...", "[rank0]: RuntimeError: ...":
// the last line of a Python traceback.
bool IsPythonExceptionLine(std::string_view line) {
  static const RE2 kException(R"(^(?:\[rank\d+\]:\s*)?(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b: )");
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), kException);
}

std::string Clip(std::string_view line) {
  std::string s = core::SanitizeUtf8(core::Trim(line));
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.') {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::vector<std::string> NextSteps(const std::string& category, bool matched) {
  std::vector<std::string> steps;
  if (category == "illegal-address" || category == "page-fault" || category == "device-assert") {
    steps.push_back("Rerun under `gputriage run --repeat 5 -- CMD` to tell a deterministic fault from a random one.");
    steps.push_back("Rerun with synchronous launches (CUDA_LAUNCH_BLOCKING=1 on NVIDIA, AMD_SERIALIZE_KERNEL=3 on AMD) so the error is reported by the kernel that faulted, not a later call.");
    steps.push_back("NVIDIA: run under `compute-sanitizer --tool memcheck`; AMD: load rocm-debug-agent (HSA_TOOLS_LIB=librocm-debug-agent.so.2) to get the faulting wave's kernel and PC.");
  } else if (category == "hang-timeout") {
    steps.push_back("Rerun under `gputriage run --timeout DURATION -- CMD` to get every thread's stack when it hangs.");
    steps.push_back("Check the kernel log around the hang (`gputriage doctor`): ring timeouts, GPU resets, Xid 8/109.");
  } else if (category == "hardware") {
    steps.push_back("Run `gputriage doctor` on the node: Xid/RAS records, ECC and row-remap counters, PCIe link state.");
    steps.push_back("Check whether the failure follows the GPU (other GPUs, other jobs) before suspecting software.");
  } else if (category == "driver-runtime") {
    steps.push_back("Run `gputriage doctor`: driver loaded, user-space and kernel driver versions, device permissions.");
  } else if (category == "arch-mismatch" || category == "abi-mismatch" || category == "compiler-jit") {
    steps.push_back("Run `gputriage snapshot` and compare the GPU architecture and the ROCm/CUDA/PyTorch versions with what the failing binaries were built for.");
  } else if (category == "oom") {
    steps.push_back("Check the device memory in use by other processes and the job's peak (`nvidia-smi` / `rocm-smi`), and the allocator's own report in the error.");
  } else {
    steps.push_back("Rerun under `gputriage run -- CMD` to capture the failure at machine level (signal, stacks, kernel log).");
  }
  if (!matched) {
    steps.push_back("No known issue matched: search the projects' issue trackers with the signature (links below) and include the crash bundle in a new report.");
  }
  return steps;
}

std::string DefaultVerdict(const std::string& category) {
  if (category == "hardware") return "hardware";
  if (category == "driver-runtime") return "driver-firmware";
  if (category == "arch-mismatch" || category == "abi-mismatch" || category == "compiler-jit") return "library";
  if (category == "illegal-address" || category == "device-assert" || category == "oom" ||
      category == "page-fault" || category == "numerical") {
    return "application";
  }
  return "unknown";
}

std::string CategoryOfKind(const std::string& kind, const std::string& category) {
  if (!category.empty() && category != "other") return category;
  if (kind == "stack-overflow" || kind == "null-dereference" || kind == "wild-pointer") return "other";
  return category.empty() ? "other" : category;
}

}  // namespace

// One scan over the inputs of one analysis.
//
// Plain-log lines are not matched one by one as they arrive: they are gathered into chunks of
// about 1 MiB, and one RE2::Set pass over the whole chunk first asks whether any line in it can
// still change the result: a knowledge-base signal that has not matched yet, a general signal
// that has not reached its cap, the "asynchronously reported" note. Only then are the chunk's
// lines matched one by one. The prefilter set is rebuilt from what is still wanted whenever that
// shrinks, so on a long log full of the same errors the steady state is one cheap DFA pass per
// chunk. The result is the same as matching every line (tests compare both).
class Analyzer::Scan {
 public:
  // A general signal stops counting after this many lines: a log repeating one warning a
  // million times does not outweigh everything else, and a long log stops costing per line.
  static constexpr int kGeneralCap = 32;
  static constexpr size_t kChunkBytes = 1 << 20;

  // Compiled prefilters by their pattern list, shared by the scans of one Analyzer: a new scan
  // starts from the same list, and compiling ~200 patterns is most of analysing a short log.
  using FilterCache = std::map<std::string, std::shared_ptr<const RE2::Set>>;

  Scan(Matcher& matcher, bool prefilter, FilterCache& cache)
      : matcher_(matcher), prefilter_(prefilter), filter_cache_(cache) {
    matcher_.Reset();
  }

  void Line(LineSource source, std::string_view raw, uint64_t number, std::string_view input) {
    std::string_view line = raw;
    std::string stripped;
    if (line.find('\x1b') != std::string_view::npos) {
      stripped = StripAnsi(line);
      line = stripped;
    }
    if (source != LineSource::kUnknown || !prefilter_) {
      Flush();  // keep the order of lines from different inputs
      Process(source, line, number, input);
      return;
    }
    if (input != chunk_input_) {
      Flush();
      chunk_input_.assign(input);
    }
    chunk_lines_.push_back({chunk_.size(), line.size(), number});
    chunk_.append(line);
    chunk_.push_back('\n');
    if (chunk_.size() >= kChunkBytes) Flush();
  }

  // Matches the buffered lines (when the prefilter says any of them can matter).
  void Flush() {
    if (chunk_lines_.empty()) return;
    bool per_line = true;
    if (filter_stale_) RebuildFilter();
    if (!filter_broken_ && !vm_.open()) {  // an open fault block needs its next lines
      if (!filter_) {
        per_line = false;  // nothing left that a line could change
      } else {
        RE2::Set::ErrorInfo error;
        per_line = filter_->Match(re2::StringPiece(chunk_.data(), chunk_.size()), nullptr, &error) ||
                   error.kind != RE2::Set::kNoError;
      }
    }
    if (per_line) {
      for (const ChunkLine& l : chunk_lines_) {
        Process(LineSource::kUnknown, std::string_view(chunk_).substr(l.offset, l.size), l.number, chunk_input_);
      }
    }
    chunk_.clear();
    chunk_lines_.clear();
  }

  void Prior(const std::string& category, int weight, core::Evidence evidence) {
    for (size_t i = 0; i < Categories().size(); ++i) {
      if (Categories()[i] != category) continue;
      scores_[i] += weight;
      ++strong_[i];
    }
    evidence_.insert(evidence_.begin(), std::move(evidence));
  }

  // The reasons beyond the category: the Xid catalog's class of each Xid seen and on how many
  // GPUs, the snapshot's hardware health, how a `run --repeat` went, what changed since the last
  // good snapshot. Hardware evidence turns an undecided verdict into "hardware".
  void AddVerdictEvidence(const Facts* facts, Analysis& a) const {
    static const checks::Knowledge* knowledge = [] {
      auto loaded = checks::LoadBuiltinKnowledge();
      return loaded.ok() ? new checks::Knowledge(std::move(*loaded)) : new checks::Knowledge();
    }();
    bool hardware = false, driver = false, application = false;
    std::vector<std::string> hardware_why;
    for (const VmFault& f : vm_faults_) a.vm_faults.push_back(ToJson(f));
    if (!vm_faults_.empty()) {
      const VmFault& first = vm_faults_.front();
      a.verdict_reasons.push_back(fmt::format("{} amdgpu VM fault{} (each block of kernel-log lines is one); the first: {}",
                                              vm_fault_count_, vm_fault_count_ == 1 ? "" : "s", first.Describe()));
      if (first.address && *first.address < 0x10000) {
        a.verdict_reasons.push_back(fmt::format("the faulting page {:#x} is at the bottom of the address space: a null "
                                                "(or nearly null) pointer used by the GPU", *first.address));
      }
      if (first.vmid && *first.vmid == 0) {
        a.verdict_reasons.push_back("vmid 0 is the system context (kb/tables/amdgpu-vm-fault.yaml): the access came "
                                    "from the kernel driver or firmware, not from a user's kernel");
        driver = true;
      }
    }
    for (const auto& [code, seen] : xids_) {
      auto it = knowledge->xid.find(static_cast<int>(code));
      std::string name = it != knowledge->xid.end() ? it->second.name : "not in the Xid catalog";
      std::string klass = it != knowledge->xid.end() ? it->second.verdict : "unknown";
      std::string gpus;
      for (const std::string& g : seen.gpus) gpus += (gpus.empty() ? "" : ", ") + g;
      a.xids.push_back({{"code", code}, {"name", name}, {"class", klass}, {"count", seen.count},
                        {"gpus", seen.gpus}, {"first_line", seen.first_line}});
      std::string times = seen.count > 1 ? fmt::format(" ({} times)", seen.count) : "";
      if (klass == "hardware" || klass == "driver-firmware" || klass == "application") {
        a.verdict_reasons.push_back(fmt::format("Xid {} ({}) on {}{}: NVIDIA's Xid catalog classes it as {}",
                                                code, name, gpus, times, klass));
      } else {
        a.verdict_reasons.push_back(fmt::format("Xid {} ({}) on {}{}: its cause can be the program, the driver "
                                                "or the hardware", code, name, gpus, times));
      }
      if (klass == "hardware") {
        hardware = true;
        hardware_why.push_back(fmt::format("Xid {}", code));
      }
      driver = driver || klass == "driver-firmware";
      application = application || klass == "application";
      if (seen.gpus.size() > 1) {
        a.verdict_reasons.push_back(fmt::format(
            "Xid {} on {} GPUs at once: one failing GPU does not make others fail, so this points at "
            "what they share (the job, the driver, the node)", code, seen.gpus.size()));
      } else if (klass == "hardware" && facts && facts->gpu_count > 1) {
        a.verdict_reasons.push_back(fmt::format(
            "only {} of the {} GPUs in the snapshot reports Xid {}: the failure follows that GPU", gpus,
            facts->gpu_count, code));
      }
    }
    if (facts) {
      for (const std::string& alert : facts->hardware_alerts) {
        a.verdict_reasons.push_back("snapshot: " + alert);
        hardware = true;
        hardware_why.push_back(alert);
      }
      for (const std::string& change : facts->changes) {
        a.verdict_reasons.push_back("changed since the last good snapshot: " + change);
      }
    }
    if (repeat_ && repeat_->runs > 1) {
      const RepeatStats& r = *repeat_;
      if (r.failures == r.runs && r.distinct_signatures == 1) {
        a.verdict_reasons.push_back(fmt::format(
            "failed {} of {} runs with the same signature: deterministic, which points at the program "
            "or a library rather than failing hardware", r.failures, r.runs));
        application = true;
      } else if (r.failures == r.runs) {
        a.verdict_reasons.push_back(fmt::format(
            "failed {} of {} runs but with {} different signatures: a race or memory corruption in the "
            "program, or unstable hardware", r.failures, r.runs, r.distinct_signatures));
      } else {
        a.verdict_reasons.push_back(fmt::format(
            "failed {} of {} runs ({} with this signature): intermittent, so a race, uninitialised "
            "memory or marginal hardware rather than a plain bug", r.failures, r.runs, r.same_signature));
      }
    }
    if (a.matches.empty()) {
      std::string before = a.verdict;
      if (hardware) {
        a.verdict = "hardware";
      } else if (driver) {
        a.verdict = "driver-firmware";
      } else if (a.verdict == "unknown" && application) {
        a.verdict = "application";
      }
      if (a.verdict != before) {
        a.verdict_reasons.push_back(fmt::format("verdict {} (the error lines alone said {})", a.verdict, before));
      }
    } else if (hardware && a.verdict != "hardware") {
      std::string why;
      for (const std::string& w : hardware_why) why += (why.empty() ? "" : "; ") + w;
      a.verdict_reasons.push_back(fmt::format(
          "the known issue says {}, but there is hardware evidence too ({}): check the GPU before "
          "blaming the software", a.verdict, why));
    }
  }

  void Count(const ReadStats& s) {
    stats_.bytes += s.bytes;
    stats_.lines += s.lines;
    stats_.cut_lines += s.cut_lines;
    if (stats_.compression.empty() || stats_.compression == "none") stats_.compression = s.compression;
  }

  Matcher& matcher_;
  std::vector<int> scores_ = std::vector<int>(Categories().size(), 0);  // by Categories() index
  std::vector<int> strong_ = std::vector<int>(Categories().size(), 0);  // lines with weight >= 2
  std::optional<RepeatStats> repeat_;  // from a bundle's repeat.json
  std::vector<core::Evidence> evidence_;
  std::string key_line_;
  std::string fallback_line_;
  bool asynchronous_ = false;
  int key_weight_ = 0;
  int last_exception_category_ = -1;  // Categories() index of the last Python exception line
  ReadStats stats_;
  std::string source_;
  SignatureScanner signature_;
  struct XidSeen {
    uint64_t count = 0;
    std::vector<std::string> gpus;  // PCI addresses
    std::string first_line;
  };
  std::map<uint32_t, XidSeen> xids_;
  std::vector<VmFault> vm_faults_;  // the first kVmFaults
  uint64_t vm_fault_count_ = 0;

  void FinishVmFaults() {
    vm_.Finish(&vm_done_);
    TakeVmFaults();
  }

 private:
  static constexpr std::string_view kAsynchronous = "asynchronously reported";
  // Xid lines looked at (for the verdict: which codes, on which GPUs); past this, no more.
  static constexpr int kXidLines = 256;
  static constexpr size_t kVmFaults = 64;
  VmFaultAssembler vm_;
  std::vector<VmFault> vm_done_;
  void TakeVmFaults() {
    for (VmFault& f : vm_done_) {
      ++vm_fault_count_;
      if (vm_faults_.size() < kVmFaults) {
        vm_faults_.push_back(std::move(f));
        if (vm_faults_.size() == kVmFaults) filter_stale_ = true;
      }
    }
    vm_done_.clear();
  }
  bool signature_wanted_ = true;
  const ErrorCode* scored_code_ = nullptr;
  int xid_lines_ = 0;

  void Process(LineSource source, std::string_view line, uint64_t number, std::string_view input) {
    if (matcher_.Feed(source, line, number, input) > 0) filter_stale_ = true;
    if (source == LineSource::kFrames || source == LineSource::kSignal) return;
    if (signature_wanted_ && signature_.Line(line)) {
      filter_stale_ = true;
      signature_wanted_ = !signature_.WantedPattern().empty();
      if (const ErrorCode* code = signature_.first_code(); code && code != scored_code_) {
        // The runtime's own error code, read through the CUDA/HIP error tables: as strong as
        // the general classifier's strongest signals (the first code, and a sticky one after it).
        scored_code_ = code;
        for (size_t i = 0; i < Categories().size(); ++i) {
          if (Categories()[i] != code->category) continue;
          scores_[i] += 3;
          ++strong_[i];
        }
        if (evidence_.size() < 12) {
          evidence_.push_back({std::string(input) + ":" + std::to_string(number),
                               fmt::format("{} ({} {}): {}", Clip(line), code->name, code->value, code->category)});
        }
        if (key_weight_ < 3) {
          if (key_line_.empty()) filter_stale_ = true;
          key_line_ = std::string(line.substr(0, 400));
          key_weight_ = 3;
        }
      }
    }
    if (source != LineSource::kStderr) {
      // An amdgpu VM fault block is one event: its field lines say nothing more to the classifier.
      VmFaultAssembler::LineKind kind = vm_.Line(line, number, input, &vm_done_);
      TakeVmFaults();
      if (kind == VmFaultAssembler::LineKind::kContinuation) return;
    }
    if (xid_lines_ < kXidLines && line.find("Xid") != std::string_view::npos) {
      if (auto xid = kmsg::ParseXid(line)) {
        if (++xid_lines_ == kXidLines) filter_stale_ = true;
        XidSeen& seen = xids_[xid->code];
        ++seen.count;
        if (std::find(seen.gpus.begin(), seen.gpus.end(), xid->pci) == seen.gpus.end()) seen.gpus.push_back(xid->pci);
        if (seen.first_line.empty()) seen.first_line = std::string(input) + ":" + std::to_string(number);
      }
    }
    // PyTorch/CUDA: "CUDA kernel errors might be asynchronously reported at some other API
    // call, so the stacktrace below might be incorrect."
    if (!asynchronous_ && line.find(kAsynchronous) != std::string_view::npos) {
      asynchronous_ = true;
      filter_stale_ = true;
    }
    hits_.clear();
    if (!GeneralSet().Match(re2::StringPiece(line.data(), line.size()), &hits_)) return;
    int line_weight = 0, line_category = -1;
    for (int index : hits_) {
      const GeneralSignal& g = kGeneral[static_cast<size_t>(index)];
      if (g.weight == 0) {
        // No category: remember the last line that reads like an error, for the signature.
        if (hits_.size() == 1) fallback_line_.assign(line.substr(0, 400));
        continue;
      }
      int& count = general_counts_[static_cast<size_t>(index)];
      if (count >= kGeneralCap) continue;
      if (++count == kGeneralCap) filter_stale_ = true;
      scores_[static_cast<size_t>(CategoryIndex(index))] += g.weight;
      if (g.weight > line_weight) {
        line_weight = g.weight;
        line_category = CategoryIndex(index);
      }
      if (g.weight >= 2) {
        ++strong_[static_cast<size_t>(CategoryIndex(index))];
        if (evidence_.size() < 12) evidence_.push_back({std::string(input) + ":" + std::to_string(number), Clip(line)});
        if (key_line_.empty() || g.weight > key_weight_) {
          if (key_line_.empty()) filter_stale_ = true;  // the fallback line is no longer wanted
          key_line_ = std::string(line.substr(0, 400));
          key_weight_ = g.weight;
        }
      }
    }
    // Python: in a chain of exceptions ("During handling of the above exception, another
    // exception occurred") the last one raised is the one that counts: it becomes the key line
    // and its category breaks ties.
    if (line_weight >= 2 && line_weight >= key_weight_ && IsPythonExceptionLine(line)) {
      key_line_ = std::string(line.substr(0, 400));
      key_weight_ = line_weight;
      last_exception_category_ = line_category;
    }
  }

  // The prefilter: every pattern a line could still change the result with.
  void RebuildFilter() {
    filter_stale_ = false;
    filter_.reset();
    std::vector<std::string> wanted = matcher_.PendingPatterns(LineSource::kUnknown);
    for (size_t i = 0; i < kGeneral.size(); ++i) {
      const GeneralSignal& g = kGeneral[i];
      bool want = g.weight == 0 ? key_line_.empty() : general_counts_[i] < kGeneralCap;
      if (want) wanted.emplace_back(g.pattern);
    }
    if (!asynchronous_) wanted.emplace_back(kAsynchronous);
    if (signature_wanted_) wanted.push_back(signature_.WantedPattern());
    if (xid_lines_ < kXidLines) wanted.emplace_back(R"(Xid \()");
    if (vm_faults_.size() < kVmFaults) wanted.emplace_back(VmFaultLinePattern());
    if (wanted.empty()) return;
    std::string key;
    for (const std::string& pattern : wanted) key += pattern + '\n';
    if (auto cached = filter_cache_.find(key); cached != filter_cache_.end()) {
      filter_ = cached->second;
      return;
    }
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);
    options.set_log_errors(false);
    // A pattern matches within one line: never across the chunk's newlines, and with ^ and $
    // at each line's start and end.
    options.set_never_nl(true);
    options.set_max_mem(64 << 20);
    auto set = std::make_unique<RE2::Set>(options, RE2::UNANCHORED);
    for (const std::string& pattern : wanted) {
      bool anchored = pattern.find_first_of("^$") != std::string::npos;
      if (set->Add(anchored ? "(?m)" + pattern : pattern, nullptr) < 0) {
        filter_broken_ = true;  // match every line: slower, never wrong
        return;
      }
    }
    if (!set->Compile()) {
      filter_broken_ = true;
      return;
    }
    filter_ = std::move(set);
    if (filter_cache_.size() < 16) filter_cache_.emplace(std::move(key), filter_);
  }

  struct ChunkLine {
    size_t offset;
    size_t size;
    uint64_t number;
  };

  const bool prefilter_;
  std::vector<int> hits_;
  std::array<int, kGeneral.size()> general_counts_{};
  std::string chunk_;
  std::vector<ChunkLine> chunk_lines_;
  std::string chunk_input_;
  std::shared_ptr<const RE2::Set> filter_;
  FilterCache& filter_cache_;
  bool filter_stale_ = true;
  bool filter_broken_ = false;
};

std::string NormalizeLine(std::string_view line) {
  static const RE2 kTimestamp(R"(^\s*(?:\[\s*\d+\.\d+\]\s*|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]\s*|\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\s*|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d\s+\S+\s+)(?:kernel:\s*)?)");
  static const RE2 kHex(R"(0x[0-9a-fA-F_]+|\b[0-9a-fA-F]{8,}\b)");
  static const RE2 kPid(R"(\bpid[=: ]\s*\d+)");
  static const RE2 kSize(R"(\d+(?:\.\d+)?\s*(?:[KMGT]i?B|bytes)\b)");
  static const RE2 kShape(R"(\[\d+(?:\s*,\s*\d+)+\]|\(\d+(?:\s*,\s*\d+)+\))");
  static const RE2 kNumber(R"(\d+)");
  static const RE2 kSpaces(R"(\s+)");
  std::string s = StripAnsi(line);
  RE2::Replace(&s, kTimestamp, "");
  RE2::GlobalReplace(&s, kHex, "X");
  RE2::GlobalReplace(&s, kPid, "pid=N");
  RE2::GlobalReplace(&s, kSize, "SIZE");
  RE2::GlobalReplace(&s, kShape, "SHAPE");
  RE2::GlobalReplace(&s, kNumber, "N");
  RE2::GlobalReplace(&s, kSpaces, " ");
  return std::string(core::Trim(s));
}

core::Result<std::unique_ptr<Analyzer>> Analyzer::Create(const KnowledgeBase& kb) {
  std::unique_ptr<Analyzer> a(new Analyzer());
  a->kb_ = &kb;
  GT_ASSIGN_OR_RETURN(a->matcher_, Matcher::Build(kb.issues));
  a->Begin("");
  return a;
}

Analyzer::~Analyzer() = default;

void Analyzer::Begin(std::string label) {
  if (!filter_cache_) filter_cache_ = std::make_unique<std::map<std::string, std::shared_ptr<const RE2::Set>>>();
  scan_ = std::make_unique<Scan>(*matcher_, prefilter_, *filter_cache_);
  scan_->source_ = std::move(label);
}

void Analyzer::AddText(std::string_view text, std::string_view name) {
  auto stats = ReadLinesFromMemory(text, name, [&](std::string_view line, uint64_t n) {
    scan_->Line(LineSource::kUnknown, line, n, name);
  });
  if (stats.ok()) scan_->Count(*stats);
}

core::Result<void> Analyzer::AddLog(const std::string& path) {
  std::string name = path == "-" ? "stdin" : path;
  auto stats = ReadLines(path, [&](std::string_view line, uint64_t n) {
    scan_->Line(LineSource::kUnknown, line, n, name);
  });
  if (!stats.ok()) return stats.error();
  scan_->Count(*stats);
  return {};
}

core::Result<void> Analyzer::AddBundle(const std::string& dir) {
  auto read = [&](const std::string& file) -> std::optional<std::string> {
    std::ifstream in(dir + "/" + file, std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  auto process_text = read("process.json");
  if (!process_text) return core::MakeError("{}: not a crash bundle (no process.json)", dir);
  Json process = Json::parse(*process_text, nullptr, false);
  if (process.is_discarded()) return core::MakeError("{}/process.json: not valid JSON", dir);
  if (auto err = read("stderr.tail")) {
    auto stats = ReadLinesFromMemory(*err, "stderr.tail", [&](std::string_view line, uint64_t n) {
      scan_->Line(LineSource::kStderr, line, n, "stderr.tail");
    });
    if (stats.ok()) scan_->Count(*stats);
  }
  if (auto kmsg = read("kmsg.log")) {
    uint64_t n = 0;
    kmsg::ParseKmsgBuffer(*kmsg, [&](kmsg::Record&& r) {
      scan_->Line(LineSource::kKmsg, r.message, ++n, "kmsg.log");
    });
  }
  AddProcess(core::ProcessReportFromJson(process), dir + "/process.json");
  if (auto repeat_text = read("repeat.json")) {
    Json r = Json::parse(*repeat_text, nullptr, false);
    if (r.is_object() && r.value("runs", 0) > 0) {
      RepeatStats stats;
      stats.runs = r.value("runs", 0);
      stats.failures = r.value("failures", 0);
      stats.same_signature = r.value("same_signature", 0);
      stats.distinct_signatures = r.value("distinct_signatures", 0);
      scan_->repeat_ = stats;
    }
  }
  return {};
}

void Analyzer::AddProcess(const core::ProcessReport& report, const std::string& name) {
  scan_->Flush();
  if (report.signal) scan_->Line(LineSource::kSignal, core::SignalName(*report.signal), 1, "signal");
  uint64_t n = 0;
  for (const core::ThreadState& t : report.threads) {
    for (const core::Frame& f : t.frames) {
      if (!f.function.empty()) scan_->Line(LineSource::kFrames, f.function, ++n, "frames");
    }
  }
  if (report.classification) {
    std::string category = CategoryOfKind(report.classification->kind,
                                          std::string(core::CategoryName(report.classification->category)));
    if (category != "other") scan_->Prior(category, 4, {name, report.classification->summary});
    if (scan_->key_line_.empty()) scan_->key_line_ = report.classification->summary;
  }
}

Analysis Analyzer::Finish(const Facts* facts) {
  Scan& scan = *scan_;
  scan.Flush();
  scan.FinishVmFaults();
  Analysis a;
  a.source = scan.source_;
  a.stats = scan.stats_;
  a.matches = matcher_->Results(facts);
  a.evidence = scan.evidence_;
  // Category: the best known issue decides; else the general classifier's strongest category
  // among those with at least one strong signal (weak hints alone name no category).
  std::string general, hinted;
  int best = 0, total = 0, best_hint = 0;
  for (size_t ci = 0; ci < scan.scores_.size(); ++ci) {
    const std::string& category = Categories()[ci];
    // The last Python exception's category wins a tie.
    int score = scan.scores_[ci] + (static_cast<int>(ci) == scan.last_exception_category_ ? 1 : 0);
    total += score;
    if (scan.strong_[ci] > 0 && score > best) {
      best = score;
      general = category;
    }
    if (score > best_hint) {
      best_hint = score;
      hinted = category;
    }
  }
  if (!a.matches.empty()) {
    const IssueMatch& top = a.matches.front();
    a.category = top.issue->category;
    a.confidence = std::min(0.95, 0.6 + top.score / 100.0);
    a.verdict = top.issue->verdict;
    a.verdict_reasons.push_back(fmt::format("known issue {}: {}", top.issue->id, top.issue->title));
  } else if (!general.empty()) {
    a.category = general;
    double share = total > 0 ? static_cast<double>(best) / total : 0;
    a.confidence = std::min(0.7, 0.15 + 0.05 * best) * (0.5 + 0.5 * share);
    a.verdict = DefaultVerdict(general);
    a.verdict_reasons.push_back(fmt::format("no known issue matched; the error lines point to {} "
                                            "(general signals, score {} of {})", general, best, total));
  } else if (!hinted.empty()) {
    a.category = "other";
    a.confidence = 0.1;
    a.verdict_reasons.push_back(fmt::format("no known issue matched and no clear GPU error; only weak hints "
                                            "of {} (words like those of such failures, score {})", hinted, best_hint));
  } else {
    a.category = "other";
    a.confidence = 0.05;
    a.verdict_reasons.push_back("no known issue matched and no GPU error signal was found");
  }
  scan.AddVerdictEvidence(facts, a);
  a.signature = NormalizeLine(scan.key_line_.empty() ? scan.fallback_line_ : scan.key_line_);
  a.gpu_signature = scan.signature_.Finish(facts);
  a.group_key = a.gpu_signature.empty() ? a.signature : a.gpu_signature.Key();
  a.next_steps = NextSteps(a.category, !a.matches.empty());
  if (scan.asynchronous_) {
    a.verdict_reasons.push_back(
        "the runtime says the error was reported asynchronously: the traceback shows the API call "
        "that noticed it, not the kernel that failed");
    a.next_steps.insert(a.next_steps.begin(),
                        "Rerun with CUDA_LAUNCH_BLOCKING=1 (AMD: AMD_SERIALIZE_KERNEL=3) so the error "
                        "is raised at the launch of the kernel that failed; the traceback then points at it.");
  }
  if (a.matches.empty() && !a.signature.empty()) {
    // Search on the stable words of the signature (placeholders dropped).
    std::string query;
    for (std::string_view word : core::SplitWhitespace(a.signature)) {
      while (!word.empty() && std::string_view("()[]{},:;.'\"`").find(word.front()) != std::string_view::npos) word.remove_prefix(1);
      while (!word.empty() && std::string_view("()[]{},:;.'\"`").find(word.back()) != std::string_view::npos) word.remove_suffix(1);
      if (word.empty() || word == "N" || word == "X" || word == "SIZE" || word == "SHAPE" || word == "pid=N") continue;
      if (query.size() + word.size() > 120) break;
      query += (query.empty() ? "" : " ") + std::string(word);
    }
    std::string q = UrlEncode(query);
    a.search_links.push_back("https://github.com/search?type=issues&q=" + q);
    for (const char* repo : {"pytorch/pytorch", "ROCm/ROCm", "NVIDIA/nccl"}) {
      a.search_links.push_back(fmt::format("https://github.com/{}/issues?q={}", repo, q));
    }
  }
  return a;
}

Analysis Analyzer::AnalyzeText(std::string_view text, std::string_view name, const Facts* facts) {
  Begin(std::string(name));
  AddText(text, name);
  return Finish(facts);
}

namespace {

// Hardware health a snapshot shows for one GPU, one line each.
void AddHardwareAlerts(const core::Gpu& gpu, std::vector<std::string>& alerts) {
  std::string pci = gpu.pci_address.value_or("");
  if (const std::optional<core::NvidiaGpu>& nv = gpu.nvidia) {
    uint64_t volatile_ue = nv->ecc ? nv->ecc->volatile_uncorrected.value_or(0) : 0;
    uint64_t lifetime_ue = nv->ecc ? nv->ecc->aggregate_uncorrected.value_or(0) : 0;
    if (volatile_ue > 0) {
      alerts.push_back(fmt::format("GPU {}: {} uncorrectable ECC errors since the driver loaded", pci, volatile_ue));
    } else if (lifetime_ue > 0) {
      alerts.push_back(fmt::format("GPU {}: {} uncorrectable ECC errors over its lifetime", pci, lifetime_ue));
    }
    const std::optional<core::NvidiaRemappedRows>& rows = nv->remapped_rows;
    if (rows && rows->uncorrectable.value_or(0) > 0) {
      alerts.push_back(fmt::format("GPU {}: {} rows remapped for uncorrectable errors", pci, *rows->uncorrectable));
    }
    if (rows && rows->failure.value_or(false)) {
      alerts.push_back(fmt::format("GPU {}: row remapping failed (the GPU is out of spare rows)", pci));
    }
    if ((rows && rows->pending.value_or(false)) || (nv->retired_pages && nv->retired_pages->pending.value_or(false))) {
      alerts.push_back(fmt::format("GPU {}: a row remap or page retirement is pending a GPU reset", pci));
    }
  }
  if (gpu.amd && gpu.amd->ras) {
    for (const auto& [block, counts] : *gpu.amd->ras) {
      if (counts.ue.value_or(0) > 0) {
        alerts.push_back(fmt::format("GPU {}: {} uncorrectable RAS errors in block {}", pci, *counts.ue, block));
      }
    }
  }
}

}  // namespace

Facts FactsFromSnapshot(const core::Snapshot& snapshot) {
  Facts facts;
  if (snapshot.gpus) {
    facts.gpu_count = snapshot.gpus->size();
    for (const core::Gpu& gpu : *snapshot.gpus) AddHardwareAlerts(gpu, facts.hardware_alerts);
  }
  for (const core::GpuArch& g : core::GpuArchitectures(snapshot)) facts.gpu_archs.push_back(g.arch);
  if (const core::TorchInstall* torch = snapshot.Torch()) {
    if (torch->version && !torch->version->empty()) facts.versions.push_back({"torch", *torch->version});
    if (torch->cuda && !torch->cuda->empty()) facts.versions.push_back({"cuda", *torch->cuda});
    if (torch->hip && !torch->hip->empty()) facts.versions.push_back({"rocm", *torch->hip});
  }
  if (snapshot.software && snapshot.software->nvidia && snapshot.software->nvidia->driver_version &&
      !snapshot.software->nvidia->driver_version->empty()) {
    facts.versions.push_back({"nvidia-driver", *snapshot.software->nvidia->driver_version});
  }
  if (snapshot.host && snapshot.host->kernel && snapshot.host->kernel->release &&
      !snapshot.host->kernel->release->empty()) {
    facts.versions.push_back({"kernel", *snapshot.host->kernel->release});
  }
  if (snapshot.env && snapshot.env->variables) {
    for (const auto& [name, value] : *snapshot.env->variables) facts.env.push_back({name, value});
  }
  return facts;
}

Json GpuSignatureJson(const GpuSignature& g) {
  Json versions = Json::object();
  for (const auto& [name, version] : g.versions) versions[name] = version;
  return {{"key", g.Key()},
          {"error", g.error.empty() ? Json(nullptr) : Json(g.error)},
          {"error_category", g.error_category.empty() ? Json(nullptr) : Json(g.error_category)},
          {"kernel", g.kernel.empty() ? Json(nullptr) : Json(g.kernel)},
          {"archs", g.archs},
          {"versions", versions}};
}

Json ToJson(const Analysis& a) {
  Json matches = Json::array();
  for (const IssueMatch& m : a.matches) {
    const KnownIssue& i = *m.issue;
    Json refs = Json::array();
    for (const Reference& r : i.references) refs.push_back(r.url);
    Json fixes = Json::array();
    for (const Fix& f : i.fixes) fixes.push_back({{"kind", f.kind}, {"action", f.action}, {"cost", f.cost}});
    Json evidence = Json::array();
    for (const Hit& h : m.hits) {
      const Signal& s = i.signals[h.signal];
      evidence.push_back({{"input", h.input}, {"line_number", h.line_number}, {"line", h.line},
                          {"source", SourceName(s.source)}, {"pattern", s.pattern}, {"required", s.required}});
    }
    matches.push_back({{"id", i.id}, {"title", i.title}, {"category", i.category}, {"verdict", i.verdict},
                       {"score", m.score}, {"fix", i.fixes.empty() ? "" : i.fixes.front().action},
                       {"fixes", fixes}, {"explanation", i.explanation}, {"references", refs},
                       {"evidence", evidence}, {"conditions", m.condition_notes}});
  }
  return Json{{"source", a.source},
              {"category", a.category},
              {"confidence", a.confidence},
              {"verdict", a.verdict},
              {"verdict_reasons", a.verdict_reasons},
              {"known_issue_matched", !a.matches.empty()},
              {"matches", matches},
              {"evidence", a.evidence},
              {"next_steps", a.next_steps},
              {"signature", a.signature},
              {"gpu_signature", GpuSignatureJson(a.gpu_signature)},
              {"group_key", a.group_key},
              {"xids", a.xids},
              {"vm_faults", a.vm_faults},
              {"search_links", a.search_links},
              {"input", {{"bytes", a.stats.bytes}, {"lines", a.stats.lines}, {"cut_lines", a.stats.cut_lines},
                         {"compression", a.stats.compression}}}};
}

}  // namespace gputriage::kb
