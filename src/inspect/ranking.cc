#include "inspect/ranking.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

namespace gputriage::inspect {
namespace {

// What a finding of FileFindings looks at: the file's code objects as a whole, its coverage of
// the machine's GPUs, the environment, or its kernels one by one.
enum class Aspect { kFile, kCoverage, kEnvironment, kKernels };

struct FindingKind {
  std::string_view id;
  Aspect aspect;
  std::string_view label;  ///< for a folded library's line: "stack frames"
  std::string_view why;    ///< why it is worth reading, one phrase
};

// One row per finding FileFindings makes (findings.cc).
constexpr FindingKind kKinds[] = {
    {"inspect.unreadable_objects", Aspect::kFile, "unreadable code objects",
     "what could not be read was not checked: the file may be damaged"},
    {"inspect.missing_arch", Aspect::kCoverage, "no code for this GPU",
     "its kernels cannot launch on this GPU (\"no kernel image\", hipErrorNoBinaryForGpu)"},
    {"inspect.ptx_only", Aspect::kCoverage, "PTX only for this GPU",
     "JIT at every cold start, and a load failure when the driver is older than the PTX"},
    {"inspect.target_feature_mismatch", Aspect::kCoverage, "xnack/sramecc mode mismatch",
     "the HIP runtime loads none of its code objects on this GPU"},
    {"inspect.hsa_override", Aspect::kEnvironment, "HSA_OVERRIDE_GFX_VERSION",
     "the runtime runs code built for another GPU: faults, hangs or wrong results"},
    {"inspect.no_kernels", Aspect::kKernels, "code objects without kernels",
     "says why no coverage verdict is given for this file"},
    {"inspect.kernels_missing_for_gpu", Aspect::kKernels, "kernels without code for this GPU",
     "explains a \"no kernel image\" error if the failing kernel is one of them"},
    {"inspect.register_spills", Aspect::kKernels, "register spills",
     "spills slow the kernel down and add scratch memory per wave"},
    {"inspect.stack_frame", Aspect::kKernels, "stack frames",
     "local memory lives in device memory: a likely reason a kernel is slower than expected"},
    {"inspect.shared_near_limit", Aspect::kKernels, "shared memory near the limit",
     "a slightly larger tile no longer compiles, and few blocks fit an SM"},
    {"inspect.lds_near_limit", Aspect::kKernels, "LDS near the limit",
     "few workgroups fit a compute unit, and a larger tile would not launch"},
    {"inspect.launch_bounds_over_limit", Aspect::kKernels, "launch bounds over the limit",
     "launches at the declared block size fail"},
};

const FindingKind* FindKind(std::string_view id) {
  for (const FindingKind& k : kKinds) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

std::string FileName(std::string_view path) { return std::filesystem::path(path).filename().string(); }

Scope ScopeOf(Aspect aspect, bool library) {
  if (aspect == Aspect::kEnvironment) return Scope::kEnvironment;
  if (!library) return Scope::kCode;
  return aspect == Aspect::kKernels ? Scope::kVendorInternal : Scope::kInstall;
}

std::string WhyOf(const FindingKind* kind, Scope scope, const std::optional<std::string>& component) {
  if (scope == Scope::kVendorInternal) {
    return fmt::format(
        "about {}'s own kernels, which only its vendor can change: read it when the failing kernel "
        "is one of them",
        *component);
  }
  if (kind) return std::string(kind->why);
  return "about the file as a whole";
}

int ScopeOrder(Scope scope) {
  switch (scope) {
    case Scope::kCode:
      return 0;
    case Scope::kEnvironment:
      return 1;
    case Scope::kInstall:
      return 2;
    case Scope::kVendorInternal:
      return 3;
  }
  return 3;
}

}  // namespace

std::string_view ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kCode:
      return "code";
    case Scope::kEnvironment:
      return "environment";
    case Scope::kInstall:
      return "install";
    case Scope::kVendorInternal:
      return "vendor-internal";
  }
  return "code";
}

std::optional<VendorLibrary> ClassifyVendorLibrary(const std::vector<catalog::GpuLibraryRule>& rules,
                                                   std::string_view path, const std::optional<std::string>& soname) {
  for (const std::optional<std::string>& name : {std::optional<std::string>(FileName(path)), soname}) {
    if (!name || name->empty()) continue;
    if (auto c = catalog::ClassifyLibrary(rules, *name)) return VendorLibrary{c->component, c->vendor};
  }
  return std::nullopt;
}

std::vector<RankedFinding> RankFindings(const std::vector<FileFindingsOf>& files) {
  struct Keyed {
    RankedFinding ranked;
    size_t file = 0, index = 0;
  };
  std::vector<Keyed> all;
  for (size_t file = 0; file < files.size(); ++file) {
    const FileFindingsOf& of = files[file];
    std::optional<std::string> component;
    if (of.library) component = of.library->component;
    for (size_t index = 0; index < of.findings.size(); ++index) {
      const core::Finding& f = of.findings[index];
      const FindingKind* kind = FindKind(f.id);
      RankedFinding r;
      r.finding = f;
      r.path = of.path;
      r.component = component;
      r.scope = ScopeOf(kind ? kind->aspect : Aspect::kFile, of.library.has_value());
      r.actionable = r.scope != Scope::kVendorInternal;
      r.folded = !r.actionable && f.severity < core::Severity::kError;
      r.why = WhyOf(kind, r.scope, component);
      all.push_back({std::move(r), file, index});
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Keyed& a, const Keyed& b) {
    auto key = [](const Keyed& k) {
      return std::make_tuple(k.ranked.actionable ? 0 : 1, -static_cast<int>(k.ranked.finding.severity),
                             ScopeOrder(k.ranked.scope), k.file, k.index);
    };
    return key(a) < key(b);
  });
  std::vector<RankedFinding> out;
  out.reserve(all.size());
  for (Keyed& k : all) {
    k.ranked.rank = out.size() + 1;
    out.push_back(std::move(k.ranked));
  }
  return out;
}

std::vector<FoldedLibrary> FoldedLibraries(const std::vector<RankedFinding>& ranked) {
  std::vector<FoldedLibrary> out;
  for (const RankedFinding& r : ranked) {
    if (!r.folded) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const FoldedLibrary& l) { return l.path == r.path; });
    if (it == out.end()) it = out.insert(out.end(), FoldedLibrary{r.path, r.component.value_or(""), 0, {}});
    ++it->count;
    const FindingKind* kind = FindKind(r.finding.id);
    std::string label = kind ? std::string(kind->label) : r.finding.id;
    if (std::find(it->kinds.begin(), it->kinds.end(), label) == it->kinds.end()) it->kinds.push_back(label);
  }
  return out;
}

core::Json ToJson(const RankedFinding& r) {
  core::Json j = r.finding;
  j["rank"] = r.rank;
  j["actionable"] = r.actionable;
  j["scope"] = ScopeName(r.scope);
  j["folded"] = r.folded;
  j["why"] = r.why;
  j["file"] = r.path;
  j["component"] = r.component ? core::Json(*r.component) : core::Json(nullptr);
  return j;
}

}  // namespace gputriage::inspect
