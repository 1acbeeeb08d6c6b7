#include "cli/render.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <set>

#include "cli/common.h"
#include "core/redact.h"
#include "core/signals.h"
#include "core/snapshot.h"
#include "core/terminal.h"
#include "core/text.h"

namespace gputriage::cli {

namespace {

// Every string the job or the machine controls (thread and file names, command lines, host
// names, log lines, signatures) reaches the terminal through these (core/terminal.h): escape
// sequences, C1 and bidi controls become U+FFFD, and T() also keeps a field on its line. Each
// rendering function passes its whole text through Terminal() as well, so a field added later
// without T() still cannot move the cursor or retitle the window. Only Colored() adds escapes,
// after that.
std::string T(std::string_view text) { return core::SanitizeForTerminal(text); }
std::string Terminal(std::string_view text) { return core::SanitizeForTerminal(text, /*keep_newlines=*/true); }

std::string LinkText(const core::Gpu& gpu) {
  if (!gpu.link) return "";
  const core::PciLink& link = *gpu.link;
  auto part = [](const std::optional<double>& speed, const std::optional<uint64_t>& width) {
    std::string s;
    if (speed) s += fmt::format("{:g} GT/s", *speed);
    if (width) s += fmt::format(" x{}", *width);
    return s;
  };
  std::string current = part(link.current_speed_gts, link.current_width);
  std::string max = part(link.max_speed_gts, link.max_width);
  if (current.empty()) return "";
  return "PCIe " + current + (max.empty() ? "" : " (max " + max + ")");
}

void RenderHost(const core::Host& host, std::string& out) {
  std::string os = host.os ? host.os->pretty_name.value_or("") : "";
  std::string kernel = host.kernel ? host.kernel->release.value_or("") : "";
  std::string line = "host      " + T(host.hostname.value_or("?"));
  if (!os.empty() || !kernel.empty()) line += " (" + T(os) + (kernel.empty() ? "" : ", kernel " + T(kernel)) + ")";
  if (host.cpu && host.cpu->logical_cpus) line += fmt::format(", {} CPUs", *host.cpu->logical_cpus);
  if (host.memory && host.memory->total_bytes)
    line += ", " + FormatBytes(static_cast<double>(*host.memory->total_bytes));
  if (host.virtualization) {
    if (host.virtualization->container) line += ", container: " + T(*host.virtualization->container);
    if (host.virtualization->is_vm.value_or(false)) line += ", VM";
  }
  out += line + "\n";
}

void RenderGpus(const std::vector<core::Gpu>& gpus, std::string& out) {
  if (gpus.empty()) {
    out += "gpus      none found\n";
    return;
  }
  for (const core::Gpu& gpu : gpus) {
    std::string name = gpu.name ? *gpu.name : gpu.pci_name.value_or("unknown GPU");
    std::string line = fmt::format("gpu       {}  {}", T(gpu.pci_address.value_or("?")), T(name));
    if (gpu.gfx_arch) line += " (" + T(*gpu.gfx_arch) + ")";
    line += "  driver " + T(gpu.driver.value_or("none"));
    std::string link = LinkText(gpu);
    if (!link.empty()) line += "  " + link;
    if (gpu.numa_node) line += fmt::format("  NUMA {}", *gpu.numa_node);
    out += line + "\n";
  }
}

// One line for the links between GPUs: how many pairs take each path ("NV18 x28"), and the
// pairs whose peer-to-peer access NVML refuses.
void RenderTopology(const core::Snapshot& snapshot, std::string& out) {
  if (!snapshot.topology || !snapshot.topology->peers || snapshot.topology->peers->empty()) return;
  std::map<std::string, size_t> paths;
  size_t answered = 0, refused = 0;
  for (const core::GpuPeer& peer : *snapshot.topology->peers) {
    ++paths[peer.path.value_or("unknown")];
    if (!peer.p2p || (!peer.p2p->read && !peer.p2p->write)) continue;
    ++answered;
    if (peer.p2p->Refused()) ++refused;
  }
  std::string line = fmt::format("links     {} GPU pair{}:", snapshot.topology->peers->size(),
                                 snapshot.topology->peers->size() == 1 ? "" : "s");
  for (const auto& [path, count] : paths) line += fmt::format(" {} x{}", T(path), count);
  if (answered > 0) {
    line += refused == 0 ? fmt::format("; peer access ok for all {}", answered)
                         : fmt::format("; peer access refused for {} of {}", refused, answered);
  }
  out += line + "\n";
}

void AddInstallations(const std::optional<core::Installations>& installs, const char* label,
                      std::vector<std::string>& parts) {
  if (!installs || !installs->installations) return;
  for (const core::Installation& install : *installs->installations) {
    if (install.version && !install.link_target) parts.push_back(label + *install.version);
  }
}

void RenderSoftware(const core::Software& software, std::string& out) {
  std::vector<std::string> parts;
  if (software.nvidia && software.nvidia->driver_version) {
    parts.push_back("NVIDIA driver " + *software.nvidia->driver_version);
  }
  if (software.nvidia && software.nvidia->cuda_driver_version) {
    parts.push_back("CUDA driver API " + *software.nvidia->cuda_driver_version);
  }
  AddInstallations(software.cuda, "CUDA toolkit ", parts);
  if (software.amd) AddInstallations(software.amd->rocm, "ROCm ", parts);
  if (software.python && software.python->torch) {
    const core::TorchInstall& torch = *software.python->torch;
    std::string t = "torch " + torch.version.value_or("?");
    if (torch.cuda) t += " (CUDA " + *torch.cuda + ")";
    if (torch.hip) t += " (HIP " + *torch.hip + ")";
    parts.push_back(t);
  }
  if (software.libraries) parts.push_back(fmt::format("{} GPU libraries", software.libraries->size()));
  if (software.packages) parts.push_back(fmt::format("{} GPU packages", software.packages->size()));
  std::string line = "software  ";
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : "") + T(parts[i]);
  out += line + "\n";
}

// "gcc-12", "g++" -> "gcc"; "clang++-15" -> "clang": one name per compiler family.
std::string CompilerFamily(std::string_view name) {
  size_t dash = name.rfind('-');
  if (dash != std::string_view::npos && dash + 1 < name.size() &&
      std::isdigit(static_cast<unsigned char>(name[dash + 1]))) {
    name = name.substr(0, dash);
  }
  if (name == "g++") return "gcc";
  if (name.ends_with("clang++")) name.remove_suffix(2);
  return std::string(name);
}

// One line: glibc, libstdc++, then each compiler family and tool once per version
// ("gcc 12.2.0" for /usr/bin/gcc, g++ and gcc-12; clang 14 and clang-15 are two entries).
void RenderToolchain(const core::Software& software, std::string& out) {
  std::vector<std::string> parts;
  if (software.glibc && software.glibc->version) parts.push_back("glibc " + *software.glibc->version);
  if (software.libstdcxx && software.libstdcxx->glibcxx) parts.push_back("libstdc++ " + *software.libstdcxx->glibcxx);
  std::set<std::string> shown;
  for (const auto* list : {&software.compilers, &software.tools}) {
    if (!*list) continue;
    for (const core::Compiler& c : **list) {
      if (!c.name) continue;
      std::string part = CompilerFamily(*c.name) + (c.version ? " " + *c.version : "");
      if (shown.insert(part).second) parts.push_back(part);
    }
  }
  if (parts.empty()) return;
  std::string line = "toolchain ";
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : "") + T(parts[i]);
  out += line + "\n";
}

void RenderKernelLog(const std::optional<core::KernelLog>& log, std::string& out) {
  if (!log || !log->source) {
    out += "kernel    log not collected\n";
    return;
  }
  std::string line = fmt::format("kernel    {} log records, {} GPU-related", log->records_total.value_or(0),
                                 log->gpu_records_total.value_or(0));
  if (log->counts && !log->counts->empty()) {
    std::string counts;
    for (const auto& [cls, n] : *log->counts) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", T(cls), n);
    line += " (" + counts + ")";
  }
  out += line + "\n";
}

// `text` padded with spaces to `width` bytes, as printf's "%-Ns" does (fmt pads by display width).
std::string PadBytes(const std::string& text, size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

}  // namespace

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

std::string SlowestCollectorText(const core::Snapshot& snapshot) {
  if (!snapshot.collector_ms) return "";
  const std::map<std::string, double>& ms = *snapshot.collector_ms;
  auto is_container = [&](const std::string& name) {
    auto next = ms.upper_bound(name);
    return next != ms.end() && next->first.starts_with(name + ".");
  };
  const std::pair<const std::string, double>* max = nullptr;
  for (const auto& entry : ms) {
    if (!is_container(entry.first) && (max == nullptr || entry.second > max->second)) max = &entry;
  }
  return max == nullptr ? "" : fmt::format(" (slowest: {} {:.0f} ms)", max->first, max->second);
}

std::string DoctorStepsText(const std::map<std::string, double>& step_ms) {
  double total = 0;
  const std::pair<const std::string, double>* slowest = nullptr;
  for (const auto& step : step_ms) {
    total += step.second;
    if (slowest == nullptr || step.second > slowest->second) slowest = &step;
  }
  if (slowest == nullptr) return "";
  return fmt::format("; then {:.0f} ms (slowest step: {} {:.0f} ms)", total, slowest->first, slowest->second);
}

std::string RenderSnapshotSummary(const core::Snapshot& snapshot) {
  std::string out;
  RenderHost(snapshot.host.value_or(core::Host{}), out);
  RenderGpus(snapshot.GpuList(), out);
  RenderTopology(snapshot, out);
  RenderSoftware(snapshot.software.value_or(core::Software{}), out);
  RenderToolchain(snapshot.software.value_or(core::Software{}), out);
  RenderKernelLog(snapshot.kernel_log, out);
  if (snapshot.env && snapshot.env->variables) {
    out += fmt::format("env       {} GPU-stack variables ({} redacted)\n", snapshot.env->variables->size(),
                       snapshot.env->redacted ? snapshot.env->redacted->size() : 0);
  }
  for (const core::NotCollected& note : snapshot.not_collected) {
    out += fmt::format("not collected: {}: {}\n", T(note.item), T(note.reason));
  }
  if (!snapshot.read_problems.empty()) {
    out += fmt::format("ignored: {} member{} of an unexpected type (a damaged or hand-edited snapshot):\n",
                       snapshot.read_problems.size(), snapshot.read_problems.size() == 1 ? "" : "s");
    for (const std::string& problem : snapshot.read_problems) out += "  " + T(problem) + "\n";
  }
  return Terminal(out);
}

namespace {

std::string FrameLine(size_t index, const core::Frame& f) {
  std::string name = f.function.empty() ? "??" : T(f.function);
  std::string where;
  if (f.file) where = fmt::format(" at {}{}", T(*f.file), f.line ? fmt::format(":{}", *f.line) : "");
  std::string module = f.module.empty() ? "" : T(f.module.substr(f.module.rfind('/') + 1));
  std::string offset = f.offset ? "+" + core::Hex(*f.offset) : "";
  return fmt::format("  #{:<2} {} {}{} ({}{})\n", index, core::Hex(f.pc), name, where, module.empty() ? "?" : module,
                     offset);
}

}  // namespace

std::string RenderProcessReport(const std::string& source, const core::ProcessReport& r) {
  // The command line is redacted here too: a report may come from anywhere (a core's NT_PRPSINFO).
  std::string out = fmt::format("{}: pid {}{}\n", T(source), r.pid ? std::to_string(*r.pid) : "unknown",
                                r.command.empty() ? "" : fmt::format(" \"{}\"", T(core::RedactText(r.command))));
  if (r.signal) {
    std::string code = r.si_code ? fmt::format(" ({}: {})", core::SiCodeName(*r.signal, *r.si_code),
                                               core::SiCodeMeaning(*r.signal, *r.si_code))
                                 : "";
    out += fmt::format("signal: {}{}{}\n", core::SignalName(*r.signal), code,
                       r.fault_address ? " at " + core::Hex(*r.fault_address) : "");
  }
  if (r.classification) {
    out += fmt::format("what: {} ({})\n", T(r.classification->summary), T(r.classification->kind));
    if (!r.classification->detail.empty()) out += fmt::format("  {}\n", T(r.classification->detail));
  }
  if (!r.threads.empty()) {
    const core::ThreadState& t = r.threads.front();
    // Only a signal makes the first thread the crashed one; a hang dump or a capture lists the
    // main thread first.
    std::string_view role = r.signal ? "crashed" : (r.pid && t.tid == *r.pid ? "main thread" : "first thread");
    out += fmt::format("thread {}{} ({}):\n", t.tid, t.name.empty() ? "" : " \"" + T(t.name) + "\"", role);
    size_t shown = std::min<size_t>(t.frames.size(), 24);
    for (size_t i = 0; i < shown; ++i) out += FrameLine(i, t.frames[i]);
    if (t.frames.size() > shown) out += fmt::format("  ... {} more frames (--json)\n", t.frames.size() - shown);
    if (t.unwind_error) out += fmt::format("  (unwinding stopped: {})\n", T(*t.unwind_error));
  }
  if (r.disassembly) {
    out += "disassembly:\n";
    for (const core::Instruction& i : r.disassembly->instructions) {
      out += fmt::format("  {} {}: {}\n", i.faulting ? "=>" : "  ", core::Hex(i.address), T(i.text));
    }
    if (r.disassembly->note) out += fmt::format("  ({})\n", T(*r.disassembly->note));
  }
  if (r.threads.size() > 1) out += fmt::format("{} other threads (see --json)\n", r.threads.size() - 1);
  for (const core::NotCollected& n : r.not_collected) {
    out += fmt::format("not collected: {}: {}\n", T(n.item), T(n.reason));
  }
  return Terminal(out);
}

std::string RenderAnalysis(const kb::Analysis& a) {
  std::string out = fmt::format("category: {} (confidence {:.2f})\nverdict: {}\n", core::CategoryName(a.category),
                                a.confidence, core::VerdictName(a.verdict));
  for (const std::string& r : a.verdict_reasons) out += fmt::format("  {}\n", T(r));
  if (a.matches.empty()) {
    out += "known issues: none matched\n";
  } else {
    out += "known issues:\n";
    size_t shown = 0;
    for (const kb::IssueMatch& m : a.matches) {
      if (shown++ == 3) {
        out += fmt::format("  ... {} more (--json)\n", a.matches.size() - 3);
        break;
      }
      const kb::KnownIssue& i = *m.issue;
      out += fmt::format("  {}. {} [{}] ({}, {})\n", shown, i.title, i.id, core::CategoryName(i.category),
                         core::VerdictName(i.verdict));
      for (const kb::Hit& h : m.hits) {
        out += fmt::format("     evidence {}:{}: {}\n", T(h.input), h.line_number, T(h.line));
      }
      for (const std::string& c : m.condition_notes) out += fmt::format("     condition {}\n", T(c));
      out += fmt::format("     why: {}\n", core::Trim(i.explanation));
      for (const kb::Fix& f : i.fixes) out += fmt::format("     fix ({}): {} — cost: {}\n", f.kind, f.action, f.cost);
      for (const kb::Reference& r : i.references) out += fmt::format("     see {}\n", r.url);
    }
  }
  if (a.matches.empty() && !a.evidence.empty()) {
    out += "evidence:\n";
    for (size_t i = 0; i < a.evidence.size() && i < 5; ++i) {
      out += fmt::format("  {}: {}\n", T(a.evidence[i].source), T(a.evidence[i].text));
    }
  }
  if (a.gpu) {
    std::string gpu;
    if (a.gpu->kernel) {
      gpu += fmt::format("  faulting kernel: {}{}\n", T(*a.gpu->kernel),
                         a.gpu->location ? " at " + T(*a.gpu->location) : "");
    }
    if (!a.gpu->escalation_summary.empty()) gpu += fmt::format("  escalation: {}\n", T(a.gpu->escalation_summary));
    for (size_t i = 0; i < a.gpu->candidates.size() && i < 5; ++i) {
      const core::GpuCall& c = a.gpu->candidates[i];
      gpu += fmt::format("  {} {}: {} ({}, stream {})\n", i == 0 ? "in flight, newest:" : "                  ", i + 1,
                         T(c.kernel.value_or("?")), c.api, T(c.stream.value_or("?")));
    }
    if (a.gpu->candidates.size() > 5)
      gpu += fmt::format("  ... {} more launches in flight (--json)\n", a.gpu->candidates.size() - 5);
    for (const core::GpuCall& c : a.gpu->in_progress) {
      gpu += fmt::format("  waiting in: {} (pid {}, thread {})\n", c.api, c.pid, c.tid);
    }
    for (const core::GpuAddressAttribution& t : a.gpu->attributions) {
      gpu += fmt::format("  fault address {}: {}\n", t.address, T(t.summary));
    }
    for (size_t i = 0; i < a.gpu->errors.size() && i < 5; ++i) {
      const core::GpuErrorCount& e = a.gpu->errors[i];
      gpu += fmt::format("  failed: {} -> {} ({}) x{}\n", e.api, T(e.result_name.value_or("?")), e.result, e.count);
    }
    if (!gpu.empty()) out += "gpu calls (flight recorder):\n" + gpu;
  }
  if (!a.collective_findings.empty()) {
    out += "collectives (PyTorch's flight recorder):\n";
    for (const core::Finding& f : a.collective_findings)
      out += fmt::format("  [{}] {}\n", core::SeverityName(f.severity), T(f.title));
  }
  if (!a.signature.empty()) out += fmt::format("signature: {}\n", T(a.signature));
  out += "next steps:\n";
  for (const std::string& s : a.next_steps) out += fmt::format("  - {}\n", T(s));
  for (const std::string& l : a.search_links) out += fmt::format("  search: {}\n", T(l));
  return Terminal(out);
}

std::string RenderFindings(const std::vector<core::Finding>& findings, size_t max_evidence) {
  std::string out;
  for (const core::Finding& f : findings) {
    std::string tag = fmt::format("[{}]", core::SeverityName(f.severity));
    // Sanitised piece by piece: the colour's own escapes come after.
    out += Colored(f.severity, tag) + " " + T(f.title) + "\n";
    if (!f.detail.empty()) out += "    " + Terminal(f.detail) + "\n";
    // The newest evidence is last; show the last few.
    size_t first = f.evidence.size() > max_evidence ? f.evidence.size() - max_evidence : 0;
    if (first > 0) {
      out += fmt::format("    ... {} earlier evidence lines (--json shows all kept)\n", first);
    }
    for (size_t i = first; i < f.evidence.size(); ++i) {
      out += "    evidence (" + T(f.evidence[i].source) + "): " + T(f.evidence[i].text) + "\n";
    }
    if (!f.fix.empty()) out += "    fix: " + Terminal(f.fix) + "\n";
    for (const std::string& ref : f.references) out += "    see: " + T(ref) + "\n";
  }
  return out;
}

std::string RenderInspectFindings(const std::vector<inspect::RankedFinding>& ranked, bool verbose) {
  std::string out;
  for (const inspect::RankedFinding& r : ranked) {
    if (r.folded && !verbose) continue;
    std::string one = RenderFindings({r.finding});
    // The phrase goes under the title and detail, before the fix.
    size_t fix = one.find("\n    fix: ");
    size_t at = fix == std::string::npos ? one.size() : fix + 1;
    one.insert(at, "    why read: " + Terminal(r.why) + "\n");
    out += one;
  }
  if (verbose) return out;
  for (const inspect::FoldedLibrary& l : inspect::FoldedLibraries(ranked)) {
    std::string kinds;
    for (const std::string& k : l.kinds) kinds += (kinds.empty() ? "" : ", ") + k;
    std::string tag = fmt::format("[{}]", core::SeverityName(core::Severity::kInfo));
    out += Colored(core::Severity::kInfo, tag) + " " +
           T(fmt::format("{} ({}, a known GPU library): {} fact(s) about its own kernels folded: {} (--verbose "
                         "shows them)",
                         l.path, l.component, l.count, kinds)) +
           "\n";
  }
  return out;
}

std::string RenderTakenSnapshot(const core::Snapshot& snapshot, std::optional<int64_t> saved_id) {
  std::string text = RenderSnapshotSummary(snapshot);
  text += RenderFindings(snapshot.findings);
  text += fmt::format("collected in {:.0f} ms", snapshot.collection_ms.value_or(0.0));
  if (saved_id) text += fmt::format("; saved as snapshot {}", *saved_id);
  text += " (--json for everything)\n";
  return text;
}

std::string RenderSnapshotList(const std::vector<store::SnapshotRow>& rows) {
  if (rows.empty()) return "no saved snapshots (take one with `gputriage snapshot --save`)\n";
  std::string text;
  for (const store::SnapshotRow& row : rows) {
    text += fmt::format("{:>5}  {}  {} {}\n", row.id, T(row.created_at), PadBytes(T(row.hostname.value_or("?")), 20),
                        T(row.summary));
  }
  return text;
}

std::string RenderChanges(const std::vector<store::Change>& changes) {
  if (changes.empty()) return "no changes\n";
  std::string text;
  for (const store::Change& change : changes) text += PadBytes(T(change.kind), 26) + " " + T(change.summary) + "\n";
  return text;
}

std::string RenderAnalysisOutcome(const kb::AnalysisOutcome& outcome) {
  std::string text;
  for (const kb::AnalyzedInput& input : outcome.inputs) {
    if (input.process) text += RenderProcessReport(input.path, *input.process);
  }
  if (!text.empty()) text += "\n";
  return text + RenderAnalysis(outcome.analysis);
}

}  // namespace gputriage::cli
