#include "inspect/run.h"

#include <malloc.h>

#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "catalog/catalog.h"
#include "core/file.h"
#include "core/maps.h"
#include "core/text.h"
#include "core/version.h"
#include "inspect/inspect.h"
#include "inspect/occupancy.h"

namespace gputriage::inspect {
namespace {

using core::Json;

// /proc/PID/maps of a large process (PyTorch with CUDA: ~10k mappings, about 1.5 MB) stays far
// below this.
constexpr size_t kMaxMapsBytes = 64u << 20;
// The kernels listed per file in text mode stop after this much text (--json has them all).
constexpr size_t kMaxKernelText = 4u << 20;

std::string Dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string Opt(const std::optional<uint32_t>& v) { return v ? std::to_string(*v) : "-"; }

// One kernel's resources (and occupancy, when the architecture's limits are known) for text.
std::string KernelLine(const CodeObject& co, const Kernel& k) {
  std::string name = k.name.empty() ? k.symbol : k.name;
  if (name.size() > 100) name = name.substr(0, 97) + "...";
  std::string occupancy;
  if (const ArchLimits* limits = co.format == "ptx" ? nullptr : FindArchLimits(co.arch)) {
    occupancy = "\n      occupancy: " + EstimateOccupancy(k, *limits).explanation;
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

// Runs on a decoding thread: the object as the kernel filter shows it, as JSON, or as text (its
// error, and with a filter the matching kernels).
std::string Prepare(const InspectRequest& request, const CodeObject& co) {
  CodeObject shown;
  const CodeObject* view = &co;
  if (!request.kernel.empty()) {
    shown = co;
    shown.kernels.clear();
    for (const Kernel& k : co.kernels) {
      if (KernelMatches(k, request.kernel)) shown.kernels.push_back(k);
    }
    view = &shown;
  }
  if (request.json) return Dump(ToJson(*view));
  std::string text;
  if (co.error) {
    text += fmt::format("  {} {} at {}: error: {}\n", co.arch.empty() ? "?" : co.arch, co.format, co.origin, *co.error);
  }
  if (!request.kernel.empty()) {
    for (const Kernel& k : view->kernels) {
      text += fmt::format("  {} {}{}:\n", co.arch, co.format, co.compressed ? " (compressed)" : "") + KernelLine(co, k);
    }
  }
  return text;
}

// One file's code objects as the sink has received them.
struct FileState {
  explicit FileState(const std::string& path) : findings(path) {}
  FileFindings findings;                                      // fed every kernel, whatever the filter
  std::map<std::string, std::pair<size_t, size_t>> per_arch;  // "arch format" -> objects, matching kernels
  size_t objects = 0, damaged_objects = 0;                    // code objects received, those with an error
  bool first_object = true;
  std::string text;  // text mode: what Prepare made of the objects, up to about kMaxKernelText
};

// The sink, in file order: JSON is written at once, text is kept for after the file's header.
void AddObject(const InspectRequest& request, std::FILE* out, FileState& file, CodeObject&& co,
               std::string&& rendered) {
  file.findings.Add(co);
  ++file.objects;
  if (co.error) ++file.damaged_objects;
  auto& counts = file.per_arch[co.arch + " " + co.format];
  counts.first += 1;
  for (const Kernel& k : co.kernels) counts.second += KernelMatches(k, request.kernel) ? 1 : 0;
  if (request.json) {
    if (!file.first_object) std::fputc(',', out);
    std::fputs(rendered.c_str(), out);
  } else if (file.text.size() < kMaxKernelText) {
    file.text += rendered;
  }
  file.first_object = false;
}

// Closes the file's code_objects array and writes the rest of its JSON object.
void WriteJsonFileEnd(const core::Result<FileSummary>& summary, const FileState& file, std::FILE* out) {
  Json rest = {{"kind", summary.ok() ? summary->kind : ""},
               {"error", summary.ok() ? Json(nullptr) : Json(summary.error().message)},
               {"problems", summary.ok() ? Json(summary->problems) : Json::array()},
               {"binary_archs", file.findings.binary_archs()},
               {"ptx_archs", file.findings.ptx_archs()}};
  std::fputs(("], " + Dump(rest).substr(1)).c_str(), out);
}

void WriteFileText(const InspectRequest& request, const std::string& path, const FileSummary& summary,
                   const FileState& file, std::FILE* out) {
  std::fputs(fmt::format("{}: {}, {} GPU code object(s)\n", path, summary.kind, summary.code_objects).c_str(), out);
  for (const auto& [key, counts] : file.per_arch) {
    if (!request.kernel.empty() && counts.second == 0) continue;  // no matching kernel there
    std::fputs(fmt::format("  {:<24} {:>6} object(s) {:>8} kernel(s){}\n", key, counts.first, counts.second,
                           request.kernel.empty() ? "" : " matching")
                   .c_str(),
               out);
  }
  for (const std::string& p : summary.problems) std::fputs(fmt::format("  problem: {}\n", p).c_str(), out);
  std::fputs(file.text.c_str(), out);
  if (file.text.size() >= kMaxKernelText) std::fputs("  ... (output cut at 4 MiB; use --json)\n", out);
}

// "PATH: 1 of 3 GPU code object(s) damaged, 2 problem(s): ..." when the file was read with
// damage; "" when it was read whole.
std::string DamageMessage(const std::string& path, const FileSummary& summary, const FileState& file) {
  std::vector<std::string> parts;
  if (file.damaged_objects > 0) {
    parts.push_back(fmt::format("{} of {} GPU code object(s) damaged", file.damaged_objects, file.objects));
  }
  if (!summary.problems.empty()) parts.push_back(fmt::format("{} problem(s)", summary.problems.size()));
  if (parts.empty()) return "";
  std::string what = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) what += ", " + parts[i];
  return fmt::format("{}: {}: the file could not be read fully (see the errors and problems listed for it)", path,
                     what);
}

// The known GPU library the file is (kb/tables/gpu-libraries.yaml), by its name and soname.
std::optional<VendorLibrary> LibraryOf(const std::string& path, const core::Result<FileSummary>& summary) {
  auto tables = catalog::BuiltinLibraryTables();
  if (!tables.ok()) return std::nullopt;  // a broken build; every file then counts as the user's
  std::optional<std::string> soname = summary.ok() ? summary->soname : std::nullopt;
  return ClassifyVendorLibrary((*tables)->gpu_libraries, path, soname);
}

void InspectOneFile(const InspectRequest& request, size_t index, std::FILE* out, InspectOutcome& outcome,
                    std::vector<FileFindingsOf>& ranked_input) {
  const std::string& path = request.paths[index];
  bool first_file = index == 0;
  FileState file(path);
  InspectOptions options;
  options.threads = request.threads;
  options.prepare = [&request](CodeObject& co) { return Prepare(request, co); };
  auto report = [&](uint64_t done, uint64_t total) {
    if (request.progress) request.progress({index, request.paths.size(), path, done, total, file.objects});
  };
  options.progress = report;
  report(0, 0);
  if (request.json) {
    std::fputs(fmt::format("{}{{\"path\": {}, \"code_objects\": [", first_file ? "" : ",", Dump(Json(path))).c_str(),
               out);
  }
  auto summary = InspectFile(path, options, [&](CodeObject&& co, std::string&& rendered) {
    AddObject(request, out, file, std::move(co), std::move(rendered));
  });
  std::vector<core::Finding> findings = file.findings.Finish(request.gpus, request.hsa_override);
  if (!summary.ok()) {
    outcome.file_failed = true;
    bool damaged = summary.error().code == core::ErrorCode::kDataLoss;
    outcome.file_damaged = outcome.file_damaged || damaged;
    // A process maps many files that are not GPU code; say nothing about them, unless damaged.
    if ((!request.from_process || damaged) && request.error) request.error(summary.error().message);
  } else if (std::string damage = DamageMessage(path, *summary, file); !damage.empty()) {
    outcome.file_damaged = true;
    if (request.error) request.error(damage);
  }
  if (request.json) {
    WriteJsonFileEnd(summary, file, out);
  } else if (summary.ok() && (summary->code_objects > 0 || !request.from_process)) {
    WriteFileText(request, path, *summary, file, out);
  }
  outcome.findings.insert(outcome.findings.end(), findings.begin(), findings.end());
  if (!findings.empty()) ranked_input.push_back({path, LibraryOf(path, summary), std::move(findings)});
}

// After the files: the findings, GPUs and versions (JSON), or the GPUs checked against (text).
void WriteEnd(const InspectRequest& request, const std::vector<RankedFinding>& ranked, std::FILE* out) {
  if (request.json) {
    Json findings = Json::array();
    for (const RankedFinding& r : ranked) findings.push_back(ToJson(r));
    Json rest = {
        {"findings", findings}, {"snapshot_used", request.snapshot_used}, {"tool_version", core::kToolVersion}};
    Json gpus = Json::array();
    for (const MachineGpu& g : request.gpus) {
      gpus.push_back({{"arch", g.arch}, {"target_id", g.target_id}, {"pci_address", g.pci_address}});
    }
    rest["gpus"] = gpus;
    std::fputs(("], " + Dump(rest).substr(1) + "\n").c_str(), out);
  } else if (!request.gpus.empty()) {
    std::string list;
    for (const MachineGpu& g : request.gpus) list += (list.empty() ? "" : ", ") + g.target_id;
    std::fputs(fmt::format("this machine's GPUs: {}\n", list).c_str(), out);
  } else if (request.check_coverage) {
    std::fputs("this machine's GPUs: none found (architecture coverage not checked)\n", out);
  }
}

}  // namespace

core::Result<std::vector<std::string>> MappedFiles(int pid) {
  std::string path = fmt::format("/proc/{}/maps", pid);
  core::Result<std::string> text = core::ReadFile(path, kMaxMapsBytes);
  if (!text.ok()) {
    core::ErrorCode code = text.error().code;
    if (code != core::ErrorCode::kNotFound && code != core::ErrorCode::kPermissionDenied) return text.error();
    return core::MakeErrorCode(code, "{}: cannot read (no such process, or no permission)", path);
  }
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (core::Mapping& m : core::ParseMaps(*text)) {
    if (m.path.empty() || m.path.front() != '/' || core::EndsWith(m.path, " (deleted)")) continue;
    if (seen.insert(m.path).second) files.push_back(std::move(m.path));
  }
  return files;
}

bool KernelMatches(const Kernel& kernel, std::string_view filter) {
  return filter.empty() || kernel.symbol.find(filter) != std::string::npos ||
         kernel.name.find(filter) != std::string::npos;
}

void ReturnFreedBuffersToTheSystem() {
  // Entry buffers are megabytes each and come and go by the thousand. A fixed mmap threshold
  // hands them back to the system when freed; glibc's adaptive one moves them onto the threads'
  // heaps, which keep the pages. Costs page faults: slower, most on small machines.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

InspectOutcome InspectFiles(const InspectRequest& request, std::FILE* out) {
  InspectOutcome outcome;
  if (request.json) std::fputs("{\"schema_version\": 1, \"files\": [", out);
  std::vector<FileFindingsOf> ranked_input;
  for (size_t i = 0; i < request.paths.size(); ++i) InspectOneFile(request, i, out, outcome, ranked_input);
  outcome.ranked = RankFindings(ranked_input);
  WriteEnd(request, outcome.ranked, out);
  std::fflush(out);
  return outcome;
}

}  // namespace gputriage::inspect
