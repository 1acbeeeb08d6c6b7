#include "kb/next_steps.h"

#include <fmt/format.h>

#include "core/redact.h"
#include "core/text.h"

namespace gputriage::kb {
namespace {

using core::Category;

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.') {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> NextSteps(Category category, bool matched) {
  std::vector<std::string> steps;
  switch (category) {
    case Category::kIllegalAddress:
    case Category::kPageFault:
    case Category::kDeviceAssert:
      steps.push_back("Rerun under `gputriage run --repeat 5 -- CMD` to tell a deterministic fault from a random one.");
      steps.push_back(
          "Rerun with synchronous launches (CUDA_LAUNCH_BLOCKING=1 on NVIDIA, AMD_SERIALIZE_KERNEL=3 on AMD) so the "
          "error is reported by the kernel that faulted, not a later call.");
      steps.push_back(
          "NVIDIA: run under `compute-sanitizer --tool memcheck`; AMD: load rocm-debug-agent "
          "(HSA_TOOLS_LIB=librocm-debug-agent.so.2) to get the faulting wave's kernel and PC.");
      break;
    case Category::kHangTimeout:
      steps.push_back(
          "Rerun under `gputriage run --timeout DURATION -- CMD` to get every thread's stack when it hangs.");
      steps.push_back(
          "Check the kernel log around the hang (`gputriage doctor`): ring timeouts, GPU resets, Xid 8/109.");
      break;
    case Category::kHardware:
      steps.push_back(
          "Run `gputriage doctor` on the node: Xid/RAS records, ECC and row-remap counters, PCIe link state.");
      steps.push_back("Check whether the failure follows the GPU (other GPUs, other jobs) before suspecting software.");
      break;
    case Category::kDriverRuntime:
      steps.push_back(
          "Run `gputriage doctor`: driver loaded, user-space and kernel driver versions, device permissions.");
      break;
    case Category::kArchMismatch:
    case Category::kAbiMismatch:
    case Category::kCompilerJit:
      steps.push_back(
          "Run `gputriage snapshot` and compare the GPU architecture and the ROCm/CUDA/PyTorch versions with what "
          "the failing binaries were built for.");
      break;
    case Category::kOom:
      steps.push_back(
          "Check the device memory in use by other processes and the job's peak (`nvidia-smi` / `rocm-smi`), and "
          "the allocator's own report in the error.");
      break;
    default:
      steps.push_back(
          "Rerun under `gputriage run -- CMD` to capture the failure at machine level (signal, stacks, kernel log).");
  }
  if (!matched) {
    steps.push_back(
        "No known issue matched: search the projects' issue trackers with the signature (links below) and include "
        "the crash bundle in a new report.");
  }
  return steps;
}

core::Verdict DefaultVerdict(Category category) {
  switch (category) {
    case Category::kHardware:
      return core::Verdict::kHardware;
    case Category::kArchMismatch:
    case Category::kAbiMismatch:
    case Category::kCompilerJit:
      return core::Verdict::kLibrary;
    // A runtime's or driver's error report (driver-runtime) names who noticed, not who is at fault:
    // a missing driver, a mis-set NCCL interface, a container without device access and a broken
    // install all read alike; the stack's own messages that place the fault (a driver/library
    // version mismatch, an insufficient driver) vote for driver-firmware in the vocabulary.
    // A symptom does not say where the fault lies: an illegal address, an assert, running out of
    // memory, a page fault or a wrong result came from the program as often as from a library
    // regression, a miscompile, the driver or a failing GPU in public reports. Only evidence
    // (the stack's own messages, Xid/RAS classes, a repeat series, a known issue) decides.
    default:
      return core::Verdict::kUnknown;
  }
}

std::vector<std::string> SearchLinks(const std::string& signature) {
  // Search on the stable words of the signature (placeholders dropped), redacted first: once
  // URL-encoded, a password or token is no longer recognisable ("https%3A%2F%2Fu%3Apw%40host").
  const std::string redacted = core::RedactText(signature);
  std::string query;
  for (std::string_view word : core::SplitWhitespace(redacted)) {
    if (word.find(core::kRedacted) != std::string_view::npos) continue;
    while (!word.empty() && std::string_view("()[]{},:;.'\"`").find(word.front()) != std::string_view::npos) {
      word.remove_prefix(1);
    }
    while (!word.empty() && std::string_view("()[]{},:;.'\"`").find(word.back()) != std::string_view::npos) {
      word.remove_suffix(1);
    }
    if (word.empty() || word == "N" || word == "X" || word == "SIZE" || word == "SHAPE" || word == "pid=N") continue;
    if (query.size() + word.size() > 120) break;
    query += (query.empty() ? "" : " ") + std::string(word);
  }
  std::vector<std::string> links;
  if (signature.empty()) return links;
  std::string q = UrlEncode(query);
  links.push_back("https://github.com/search?type=issues&q=" + q);
  for (const char* repo : {"pytorch/pytorch", "ROCm/ROCm", "NVIDIA/nccl"}) {
    links.push_back(fmt::format("https://github.com/{}/issues?q={}", repo, q));
  }
  return links;
}

}  // namespace gputriage::kb
