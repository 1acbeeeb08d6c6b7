#include "inspect/findings.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "inspect/inspect.h"
#include "inspect/occupancy.h"

namespace gputriage::inspect {
namespace {

// CUDA C++ Programming Guide, "Binary Compatibility" and "PTX Compatibility": a cubin for
// compute capability X.y runs on X.z for z >= y only; PTX for X.y is JIT-compiled by the driver
// for any device of X.y or higher.
constexpr const char* kCudaCompatibility =
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility";
constexpr const char* kAmdTargetIds = "https://llvm.org/docs/AMDGPUUsage.html#target-id";

int SmNumber(std::string_view arch) {
  // "sm_90" / "compute_90" -> 90
  size_t u = arch.find('_');
  if (u == std::string_view::npos) return -1;
  int v = -1;
  std::from_chars(arch.data() + u + 1, arch.data() + arch.size(), v);
  return v;
}

std::string Processor(std::string_view target_id) { return core::ProcessorOfTarget(target_id); }

// "gfx90a:sramecc+:xnack-" -> "xnack-" (or "" when the feature is not given, i.e. "any").
std::string Feature(std::string_view target_id, std::string_view feature) {
  size_t at = target_id.find(std::string(feature));
  if (at == std::string_view::npos || at + feature.size() >= target_id.size()) return "";
  return std::string(feature) + target_id[at + feature.size()];
}

// An object's target id runs on the device's when the processor is the same and every
// feature the object fixes ("xnack+", "sramecc-") agrees with the device's mode (a feature the
// object leaves unset, "any", runs in either mode; a device mode we do not know cannot rule it
// out).
bool TargetCompatible(std::string_view object, std::string_view device) {
  if (Processor(object) != Processor(device)) return false;
  for (std::string_view f : {"xnack", "sramecc"}) {
    std::string o = Feature(object, f), d = Feature(device, f);
    if (!o.empty() && !d.empty() && o != d) return false;
  }
  return true;
}

void Note(size_t& count, std::string& first, const std::string& what) {
  if (count++ == 0) first = what;
}

// "inspect.<name>", the id of a finding of this file.
std::string FindingId(std::string_view name) { return "inspect." + std::string(name); }

core::Finding MakeFinding(std::string id, core::Severity severity, std::string title, std::string detail,
                          std::string fix, std::vector<std::string> references = {}) {
  core::Finding f;
  f.id = std::move(id);
  f.layer = 3;
  f.severity = severity;
  f.title = std::move(title);
  f.detail = std::move(detail);
  f.fix = std::move(fix);
  f.references = std::move(references);
  return f;
}

}  // namespace

std::optional<std::string> GfxFromOverride(std::string_view value) {
  // major.minor.stepping, each a decimal number; the ISA name prints minor and stepping as one
  // hex digit each (gfx90a = 9.0.10; KFD's gfx_target_version 90010 is the same triple).
  int parts[3] = {-1, -1, -1};
  const char* p = value.data();
  const char* end = value.data() + value.size();
  for (int i = 0; i < 3; ++i) {
    auto [next, ec] = std::from_chars(p, end, parts[i]);
    if (ec != std::errc() || parts[i] < 0) return std::nullopt;
    p = next;
    if (i < 2) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
  }
  if (p != end || parts[0] == 0 || parts[1] > 15 || parts[2] > 15) return std::nullopt;
  return fmt::format("gfx{}{:x}{:x}", parts[0], parts[1], parts[2]);
}

std::vector<core::Finding> LibraryCoverageFindings(const core::Snapshot& snapshot) {
  std::vector<core::Finding> out;
  std::vector<MachineGpu> gpus = core::GpuArchitectures(snapshot);
  if (gpus.empty()) return out;
  std::optional<std::string> hsa_override = snapshot.EnvValue("HSA_OVERRIDE_GFX_VERSION");
  const core::TorchInstall* torch = snapshot.Torch();
  if (torch == nullptr || !torch->lib_dir || torch->lib_dir->empty()) return out;
  const std::string& lib_dir = *torch->lib_dir;
  for (const char* name : {"libtorch_cuda.so", "libtorch_hip.so"}) {
    std::string path = lib_dir + "/" + name;
    if (access(path.c_str(), R_OK) != 0) continue;
    FileFindings findings(path, /*kernels_read=*/false);
    InspectOptions options;
    options.headers_only = true;
    auto inspected = InspectFile(path, options, [&](CodeObject&& co, std::string&&) { findings.Add(co); });
    if (!inspected.ok()) continue;
    std::vector<core::Finding> found = findings.Finish(gpus, hsa_override);
    bool coverage_problem = false;
    for (core::Finding& f : found) {
      // Only the coverage findings: kernel resources need the full `inspect`.
      if (f.id == "inspect.missing_arch" || f.id == "inspect.ptx_only" || f.id == "inspect.target_feature_mismatch" ||
          f.id == "inspect.hsa_override") {
        coverage_problem = true;
        out.push_back(std::move(f));
      }
    }
    std::string archs;
    for (const std::string& a : findings.binary_archs()) archs += (archs.empty() ? "" : ", ") + a;
    for (const std::string& a : findings.ptx_archs()) archs += (archs.empty() ? "" : ", ") + a;
    if (!coverage_problem && !archs.empty()) {
      std::string here;
      for (const MachineGpu& g : gpus) here += (here.empty() ? "" : ", ") + g.target_id;
      out.push_back(MakeFinding("inspect.coverage_ok", core::Severity::kInfo,
                                fmt::format("{} carries code for this machine's GPUs ({})", path, here),
                                "It carries " + archs + ".", "", {}));
    }
  }
  return out;
}

void FileFindings::Add(const CodeObject& co) {
  if (co.error) {
    if (errors_++ == 0) first_error_ = fmt::format("{}: {}", co.origin, *co.error);
    return;
  }
  if (co.format == "ptx") {
    ptx_.insert(co.arch);
  } else if (!co.arch.empty()) {
    binary_.insert(co.arch);
  }
  if (co.vendor == "amd" && !co.target_id.empty()) amd_targets_.insert(co.target_id);
  if (co.vendor == "nvidia" && !co.arch.empty()) {
    ++nvidia_objects_;
    if (!co.kernels.empty() || !kernels_read_) nvidia_with_kernels_.insert(co.arch);
  }
  size_t arch_bit = 64;
  if (!co.arch.empty()) {
    auto it = std::find(arch_index_.begin(), arch_index_.end(), co.arch);
    if (it == arch_index_.end() && arch_index_.size() < 64) it = arch_index_.insert(arch_index_.end(), co.arch);
    if (it != arch_index_.end()) arch_bit = static_cast<size_t>(it - arch_index_.begin());
  }
  for (const Kernel& k : co.kernels) {
    ++kernels_;
    if (arch_bit < 64) {
      uint64_t h = std::hash<std::string>{}(k.symbol);
      kernel_archs_[h] |= uint64_t{1} << arch_bit;
      if (kernel_example_.size() < 4096 && !kernel_example_.count(h))
        kernel_example_[h] = k.name.empty() ? k.symbol : k.name;
    }
    std::string who = fmt::format("{} ({})", k.name.empty() ? k.symbol : k.name, co.arch);
    if (co.vendor == "amd" && k.wavefront_size) amd_wavefront_[co.arch] = *k.wavefront_size;
    if (k.sgpr_spill_count.value_or(0) + k.vgpr_spill_count.value_or(0) > 0) Note(spills_.count, spills_.first, who);
    if (k.local_bytes.value_or(0) > 0)
      Note(stack_.count, stack_.first, fmt::format("{}: {} bytes", who, *k.local_bytes));
    // Limits from kb/tables/gpu-arch-limits.yaml where the architecture is in it; else the
    // values every architecture there shares: 48 KiB of static shared memory per block
    // (more needs dynamic shared memory and an opt-in), 64 KiB of LDS per workgroup (gfx950:
    // 160 KiB), 1024 threads per block or work-items per workgroup. "Near" = within 10 %.
    const ArchLimits* limits = FindArchLimits(co.arch);
    uint32_t shared_limit = limits && limits->shared_memory_per_block_default_bytes
                                ? *limits->shared_memory_per_block_default_bytes
                                : 48 * 1024;
    uint32_t lds_limit = limits && limits->lds_per_workgroup_bytes ? *limits->lds_per_workgroup_bytes : 64 * 1024;
    uint32_t thread_limit = 1024;
    if (limits && limits->max_threads_per_block) thread_limit = *limits->max_threads_per_block;
    if (limits && limits->max_workgroup_size) thread_limit = *limits->max_workgroup_size;
    if (k.shared_bytes.value_or(0) > shared_limit / 10 * 9)
      Note(shared_near_.count, shared_near_.first,
           fmt::format("{}: {} of {} bytes", who, *k.shared_bytes, shared_limit));
    if (k.lds_bytes.value_or(0) > lds_limit / 10 * 9)
      Note(lds_near_.count, lds_near_.first, fmt::format("{}: {} of {} bytes", who, *k.lds_bytes, lds_limit));
    if (k.max_threads.value_or(0) > thread_limit || k.max_workgroup_size.value_or(0) > thread_limit) {
      Note(bounds_over_.count, bounds_over_.first,
           fmt::format("{}: {} (the limit is {})", who,
                       std::max(k.max_threads.value_or(0), k.max_workgroup_size.value_or(0)), thread_limit));
    }
  }
}

std::vector<core::Finding> FileFindings::Finish(const std::vector<MachineGpu>& gpus,
                                                const std::optional<std::string>& hsa_override) const {
  std::vector<core::Finding> out;
  AddUnreadableFinding(&out);
  for (const MachineGpu& gpu : gpus) {
    if (gpu.arch.rfind("sm_", 0) == 0) {
      AddNvidiaCoverage(gpu, &out);
    } else {
      AddAmdCoverage(gpu, hsa_override, &out);
    }
  }
  AddKernelFindings(&out);
  return out;
}

void FileFindings::AddUnreadableFinding(std::vector<core::Finding>* out) const {
  if (errors_ == 0) return;
  out->push_back(MakeFinding(FindingId("unreadable_objects"), core::Severity::kWarning,
                             fmt::format("{}: {} GPU code object(s) could not be read", path_, errors_),
                             "first: " + first_error_,
                             "The file may be damaged or use a format version this gputriage does not know."));
}

void FileFindings::AddNvidiaCoverage(const MachineGpu& gpu, std::vector<core::Finding>* out) const {
  std::string where = gpu.pci_address.empty() ? gpu.arch : fmt::format("{} ({})", gpu.arch, gpu.pci_address);
  bool has_nvidia = false;
  for (const std::string& a : binary_) has_nvidia = has_nvidia || a.rfind("sm_", 0) == 0;
  for (const std::string& a : ptx_) has_nvidia = has_nvidia || a.rfind("compute_", 0) == 0;
  if (!has_nvidia) return;  // not a CUDA binary
  if (nvidia_with_kernels_.empty()) {
    // Only kernel-less objects (libcufft.so.12 of CUDA 13 carries one sm_75 cubin with no kernel):
    // nothing here can fail with "no kernel image", and the architectures say nothing about the
    // library's GPU code, so no coverage verdict either way.
    std::string carried;
    for (const std::string& a : binary_) carried += (carried.empty() ? "" : ", ") + a;
    for (const std::string& a : ptx_) carried += (carried.empty() ? "" : ", ") + a;
    out->push_back(MakeFinding(
        FindingId("no_kernels"), core::Severity::kInfo,
        fmt::format("{}: its {} CUDA code object(s) ({}) hold no kernels: no verdict on the {} GPU", path_,
                    nvidia_objects_, carried, where),
        "A code object without kernels cannot fail with \"no kernel image is available\", and its architecture "
        "list says nothing about what this library can run. If the library launches kernels, they are stored "
        "where inspect does not read them (not in .nv_fatbin or __nv_relfatbin).",
        "Nothing to do unless a launch from this library fails with \"no kernel image\"; then check its release "
        "notes for the supported GPUs.",
        {kCudaCompatibility}));
    return;
  }
  int want = SmNumber(gpu.arch);
  // Only architectures whose objects hold kernels count: a kernel-less cubin runs nothing.
  bool exact = nvidia_with_kernels_.count(gpu.arch) > 0, compatible = false, ptx = false;
  int best_ptx = -1;
  for (const std::string& a : binary_) {
    if (!nvidia_with_kernels_.count(a)) continue;
    int n = SmNumber(a);
    if (a.rfind("sm_", 0) == 0 && n / 10 == want / 10 && n <= want) compatible = true;
  }
  for (const std::string& a : ptx_) {
    if (!nvidia_with_kernels_.count(a)) continue;
    int n = SmNumber(a);
    if (n >= 0 && n <= want) {
      ptx = true;
      best_ptx = std::max(best_ptx, n);
    }
  }
  if (exact || compatible) {
    AddKernelsMissingForGpu(want, where, out);
    return;
  }
  std::string carried;
  for (const std::string& a : binary_) carried += (carried.empty() ? "" : ", ") + a;
  for (const std::string& a : ptx_) carried += (carried.empty() ? "" : ", ") + a;
  if (ptx) {
    out->push_back(MakeFinding(
        FindingId("ptx_only"), core::Severity::kWarning,
        fmt::format("{}: no SASS for the {} GPU, only PTX (compute_{}): JIT-compiled at load", path_, where, best_ptx),
        fmt::format("Carries {}. The driver compiles the PTX when the module loads: slow first run, a JIT "
                    "cache to keep warm, and it fails if the driver is older than the PTX.",
                    carried),
        fmt::format("Rebuild with SASS for {} (e.g. -gencode arch=compute_{},code={}).", gpu.arch, want, gpu.arch),
        {kCudaCompatibility}));
  } else {
    out->push_back(MakeFinding(
        FindingId("missing_arch"), core::Severity::kError, fmt::format("{}: no code for the {} GPU", path_, where),
        fmt::format("Carries {}: no SASS of the same major version at or below {}, and no PTX at or below it. "
                    "Launching its kernels fails with \"no kernel image is available for execution on the "
                    "device\" (cudaErrorNoKernelImageForDevice).",
                    carried, gpu.arch),
        fmt::format("Use a build of this library that includes {} (or PTX for an older architecture).", gpu.arch),
        {kCudaCompatibility}));
  }
}

void FileFindings::AddKernelsMissingForGpu(int want, const std::string& where, std::vector<core::Finding>* out) const {
  // The file covers this GPU, but does every kernel? Some come only for other architectures (a
  // kernel written for sm_90a or sm_100 only).
  uint64_t usable = 0;
  for (size_t i = 0; i < arch_index_.size(); ++i) {
    const std::string& a = arch_index_[i];
    int n = SmNumber(a);
    bool ok =
        (a.rfind("sm_", 0) == 0 && n / 10 == want / 10 && n <= want) || (a.rfind("compute_", 0) == 0 && n <= want);
    if (ok) usable |= uint64_t{1} << i;
  }
  size_t lacking = 0;
  std::string example;
  for (const auto& [h, archs] : kernel_archs_) {
    if ((archs & usable) != 0) continue;
    if (lacking++ == 0 || example.empty()) {
      if (auto e = kernel_example_.find(h); e != kernel_example_.end()) example = e->second;
    }
  }
  if (lacking == 0) return;
  out->push_back(MakeFinding(
      FindingId("kernels_missing_for_gpu"), core::Severity::kInfo,
      fmt::format("{}: {} kernel(s) have code for other architectures but none the {} GPU can run", path_, lacking,
                  where),
      fmt::format("Calling one of them on this GPU fails with \"no kernel image is available\"; usually these are "
                  "paths the library takes only on other GPUs. {}",
                  example.empty() ? "" : "First: " + example + "."),
      "Nothing to do unless the failing kernel is one of these; then use a build with code for this GPU.",
      {kCudaCompatibility}));
}

void FileFindings::AddAmdCoverage(const MachineGpu& gpu, const std::optional<std::string>& hsa_override,
                                  std::vector<core::Finding>* out) const {
  if (amd_targets_.empty()) return;  // not a HIP binary
  std::string where = gpu.pci_address.empty() ? gpu.arch : fmt::format("{} ({})", gpu.arch, gpu.pci_address);
  std::string device = gpu.target_id.empty() ? gpu.arch : gpu.target_id;
  std::string effective = device;
  if (hsa_override) {
    if (auto gfx = GfxFromOverride(*hsa_override)) effective = *gfx;
  }
  bool found = false, processor_only = false;
  for (const std::string& t : amd_targets_) {
    if (TargetCompatible(t, effective)) found = true;
    if (Processor(t) == Processor(effective)) processor_only = true;
  }
  std::string carried;
  for (const std::string& t : amd_targets_) carried += (carried.empty() ? "" : ", ") + t;
  if (effective != device) {
    auto wave = amd_wavefront_.find(Processor(effective));
    std::string detail = fmt::format(
        "HSA_OVERRIDE_GFX_VERSION={} makes the runtime treat the {} GPU as {} and load code built for another "
        "ISA{}. Carries {}.",
        *hsa_override, where, effective, found ? "" : " (and even that is not in the file)", carried);
    if (wave != amd_wavefront_.end() && Processor(device).rfind("gfx9", 0) == 0 && wave->second == 32) {
      detail += " That code is wave32; GCN/CDNA GPUs (gfx9) run wave64 only.";
    }
    out->push_back(MakeFinding(
        FindingId("hsa_override"), core::Severity::kWarning,
        fmt::format("{}: {} code would run on the {} GPU under HSA_OVERRIDE_GFX_VERSION", path_, effective, where),
        detail, fmt::format("Use a build with code for {} and unset HSA_OVERRIDE_GFX_VERSION.", Processor(device)),
        {kAmdTargetIds}));
  }
  if (found) return;
  out->push_back(MakeFinding(
      FindingId(processor_only ? "target_feature_mismatch" : "missing_arch"), core::Severity::kError,
      processor_only ? fmt::format("{}: code for {} exists, but not for this GPU's xnack/sramecc mode ({})", path_,
                                   Processor(effective), effective)
                     : fmt::format("{}: no code object for the {} GPU", path_, where),
      fmt::format("Carries {}. The HIP runtime finds no compatible code object: hipErrorNoBinaryForGpu "
                  "(\"No compatible code objects found\").",
                  carried),
      fmt::format("Use a build of this library for {} (its target id must match the GPU's xnack/sramecc mode).",
                  effective),
      {kAmdTargetIds}));
}

void FileFindings::AddKernelFindings(std::vector<core::Finding>* out) const {
  auto kernel_finding = [&](const KernelIssue& issue, const char* id, core::Severity severity, const std::string& title,
                            const std::string& detail, const std::string& fix) {
    if (issue.count == 0) return;
    out->push_back(MakeFinding(FindingId(id), severity, fmt::format("{}: {} kernel(s) {}", path_, issue.count, title),
                               fmt::format("{} First: {}.", detail, issue.first), fix));
  };
  kernel_finding(spills_, "register_spills", core::Severity::kWarning, "spill registers to scratch memory",
                 "The compiler ran out of registers and keeps values in scratch (private) memory: slower, and more "
                 "scratch per wave.",
                 "Reduce register pressure (smaller tiles, fewer live values) or relax launch bounds.");
  kernel_finding(
      stack_, "stack_frame", core::Severity::kInfo, "use a stack frame (local memory: spills or local arrays)",
      "Local memory lives in device memory (cached): spills and dynamically indexed local arrays end up there.",
      "Check `nvcc -Xptxas -v` for spill stores; index local arrays with constants, or lower register pressure.");
  kernel_finding(shared_near_, "shared_near_limit", core::Severity::kInfo,
                 "use static shared memory near the architecture's per-block limit (48 KiB)",
                 "Static shared memory above 48 KiB per block is not possible; near it, few blocks fit an SM.",
                 "Move to dynamic shared memory with an explicit opt-in if more is needed.");
  kernel_finding(
      lds_near_, "lds_near_limit", core::Severity::kInfo, "use LDS near the architecture's per-workgroup limit",
      "Few workgroups fit a compute unit, which limits occupancy.", "Reduce the LDS tile size if occupancy matters.");
  kernel_finding(
      bounds_over_, "launch_bounds_over_limit", core::Severity::kError,
      "declare more threads per block than the architecture allows",
      "The launch bound exceeds the architecture's maximum block/workgroup size; launches with that size fail.",
      "Lower __launch_bounds__ / amdgpu_flat_work_group_size to at most 1024.");
}

}  // namespace gputriage::inspect
