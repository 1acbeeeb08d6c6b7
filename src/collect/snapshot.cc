#include "collect/snapshot.h"

#include <chrono>
#include <cmath>
#include <future>

#include "collect/env/env.h"
#include "collect/host.h"
#include "collect/kernel_log/kernel_log.h"
#include "collect/pci.h"
#include "collect/python_probe.h"
#include "collect/software.h"
#include "collect/vendors/vendors.h"
#include "core/clock.h"
#include "core/deadline.h"
#include "core/json_parse.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "core/version.h"

namespace gputriage::collect {

namespace {

using core::Json;
using core::Section;

Section ProbeHungSection(const VendorProbe& probe, const core::ProcessOutcome& outcome,
                         const core::RunOptions& run_options) {
  Section section;
  std::string what = std::string(probe.what);
  std::string description = core::DescribeOutcome(outcome, run_options);
  section.NoteMissing(std::string(probe.name), fmt::format("{} {}", what, description));
  double seconds = std::chrono::duration<double>(run_options.timeout).count();
  section.findings.push_back(core::Finding{
      .id = fmt::format("collect.{}_probe_hung", probe.name),
      .layer = 1,
      .severity = core::Severity::kError,
      .title = fmt::format("{} did not answer within {:g} s: the driver may be wedged", what, seconds),
      .detail = fmt::format("The {} probe runs in a helper process (pid {}) so that a call stuck in the driver "
                            "cannot hang gputriage; it {}. Diagnostic tools hang like this when the GPU or its "
                            "driver is sick; the rest of the snapshot was collected without it.",
                            probe.name, outcome.pid, description),
      .evidence = {{"watchdog", fmt::format("helper pid {} {}", outcome.pid, description)}},
      .fix = "Look at the kernel log for GPU errors (Xid, amdgpu faults, resets); check whether "
             "vendor tools (nvidia-smi, amd-smi) hang too; if so, drain the node and reset the "
             "GPU or reboot.",
      .references = {}});
  return section;
}

// Every in-process collector runs under SnapshotOptions::collector_timeout: one that is still
// blocked then (a hung network mount under /opt, a wedged sysfs attribute) is abandoned and
// named in not_collected, and the snapshot completes without it. `collect` owns copies of what
// it reads (an abandoned call outlives this frame).
template <typename Fn>
Section Bounded(std::string_view name, std::chrono::milliseconds limit, Fn collect) {
  auto start = std::chrono::steady_clock::now();
  auto section = core::CallWithDeadline(limit, std::move(collect));
  Section out;
  if (section.ok()) {
    out = std::move(*section);
  } else {
    out.NoteMissing(std::string(name), fmt::format("the {} collector {}", name, section.error().message));
  }
  out.timings_ms[std::string(name)] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

Section RunProbeInHelper(const core::OsView& os, const VendorProbe& probe, const SnapshotOptions& options) {
  std::vector<std::string> argv = options.helper_command;
  argv.emplace_back(probe.name);
  if (!os.live()) {
    argv.emplace_back("--root");
    argv.push_back(os.root());
  }
  core::RunOptions run_options;
  run_options.timeout = options.probe_timeout;
  auto outcome = core::RunWithTimeout(argv, run_options);
  Section section;
  if (!outcome.ok()) {
    section.NoteMissing(std::string(probe.name), outcome.error().message);
    return section;
  }
  if (outcome->timed_out) return ProbeHungSection(probe, *outcome, run_options);
  if (outcome->exit_code != 0) {
    std::string tail = core::SanitizeUtf8(core::Trim(outcome->stderr_tail));
    section.NoteMissing(std::string(probe.name),
                        fmt::format("{} probe {}{}{}", probe.name, core::DescribeOutcome(*outcome, run_options),
                                    tail.empty() ? "" : ": ", tail));
    return section;
  }
  core::Result<Json> parse = core::ParseJson(outcome->stdout_data, fmt::format("the {} probe's output", probe.name));
  Json parsed = parse.ok() ? std::move(*parse) : Json();
  if (!parsed.is_object()) {
    section.NoteMissing(std::string(probe.name),
                        fmt::format("{} probe printed no valid JSON object ({} bytes){}", probe.name,
                                    outcome->stdout_data.size(), parse.ok() ? "" : ": " + parse.error().message));
    return section;
  }
  try {
    section = parsed.get<Section>();
  } catch (const Json::exception& e) {
    section.NoteMissing(std::string(probe.name),
                        fmt::format("{} probe output has an unexpected shape: {}", probe.name, e.what()));
  }
  return section;
}

Json* FindGpu(Json& gpus, const std::string& address) {
  for (Json& gpu : gpus) {
    if (gpu.value("pci_address", "") == address) return &gpu;
  }
  return nullptr;
}

void Absorb(Section& total, Section&& part) {
  for (auto& note : part.not_collected) total.not_collected.push_back(std::move(note));
  for (auto& finding : part.findings) total.findings.push_back(std::move(finding));
  for (auto& [name, ms] : part.timings_ms) total.timings_ms[name] = ms;
}

// Directories a live Python environment may keep packages in, found without running Python:
// $VIRTUAL_ENV, $CONDA_PREFIX and the venv of each python3 on PATH.
std::vector<std::string> LiveSiteDirectories(const core::OsView& os, const std::vector<std::string>& environment) {
  std::vector<std::string> prefixes;
  for (const std::string& entry : environment) {
    std::string_view e = entry;
    for (std::string_view var : {"VIRTUAL_ENV=", "CONDA_PREFIX="}) {
      if (e.starts_with(var)) prefixes.emplace_back(e.substr(var.size()));
    }
    if (e.starts_with("PATH=")) {
      for (std::string_view dir : core::Split(e.substr(5), ':')) {
        if (dir.ends_with("/bin") && os.Exists(std::string(dir) + "/python3")) {
          prefixes.emplace_back(dir.substr(0, dir.size() - 4));
        }
      }
    }
  }
  std::vector<std::string> sites;
  for (const std::string& prefix : prefixes) {
    if (prefix.empty() || prefix == "/usr" || prefix == "/usr/local") continue;
    auto entries = os.TryListDir(prefix + "/lib");
    if (!entries.ok()) continue;
    for (const std::string& e : *entries) {
      if (e.starts_with("python3")) sites.push_back(prefix + "/lib/" + e + "/site-packages");
    }
  }
  return sites;
}

// The directories of the list variable `name` ("LD_LIBRARY_PATH", "PATH") in `environment`.
std::vector<std::string> DirsOf(const std::vector<std::string>& environment, std::string_view name) {
  std::vector<std::string> dirs;
  std::string prefix = std::string(name) + "=";
  for (const std::string& entry : environment) {
    if (!entry.starts_with(prefix)) continue;
    for (std::string_view dir : core::Split(std::string_view(entry).substr(prefix.size()), ':')) {
      if (!dir.empty()) dirs.emplace_back(dir);
    }
  }
  return dirs;
}

// The interpreter's torch (--python) is the one the user's job imports: where the file scan
// found none, or found it without its library directory, take the probe's answer.
void AdoptProbedTorch(const Json& probe, Json& software) {
  auto torch = probe.find("torch");
  if (torch == probe.end() || !torch->is_object()) return;
  auto lib_dir = torch->find("lib_dir");
  if (lib_dir == torch->end() || !lib_dir->is_string()) return;
  Json& python = software["python"];
  if (!python.is_object()) python = Json::object();
  if (!python.contains("torch") || !python["torch"].is_object()) {
    Json adopted = Json::object();
    for (const char* key : {"version", "cuda", "hip"}) {
      if (auto v = torch->find(key); v != torch->end() && v->is_string()) adopted[key] = *v;
    }
    std::string dir = lib_dir->get<std::string>();
    adopted["path"] = dir.substr(0, dir.rfind('/'));
    python["torch"] = std::move(adopted);
  }
  if (!python["torch"].contains("lib_dir")) python["torch"]["lib_dir"] = *lib_dir;
}

}  // namespace

void MergeVendorSection(const std::string& probe, const Section& section, Json& gpus, Json& software, Json& peers) {
  Json data = section.data;
  if (auto found = data.find("peers"); found != data.end()) {
    if (found->is_array()) {
      for (const Json& peer : *found) peers.push_back(peer);
    }
    data.erase(found);
  }
  if (data.contains("gpus") && data["gpus"].is_array()) {
    for (Json vendor_gpu : data["gpus"]) {
      if (!vendor_gpu.is_object()) continue;
      const Json& raw_address = vendor_gpu.contains("pci_address") ? vendor_gpu["pci_address"] : Json();
      if (!raw_address.is_string() || raw_address.get<std::string>().empty()) {
        // Without a PCI address the GPU cannot be matched to the bus scan; keep its data
        // where it is visible rather than invent an address.
        software[probe + "_unmatched_gpus"].push_back(vendor_gpu);
        continue;
      }
      std::string address = NormalizePciAddress(raw_address.get<std::string>());
      Json* gpu = FindGpu(gpus, address);
      if (gpu == nullptr) {
        // Known to the driver but not on the PCI scan (a tree without sysfs, or a GPU the
        // kernel lists only through the driver).
        gpus.push_back(Json{{"vendor", probe}, {"pci_address", address}, {"source", "driver"}});
        gpu = &gpus.back();
      }
      vendor_gpu.erase("pci_address");
      for (const char* name_key : {"name", "marketing_name"}) {
        if (vendor_gpu.contains(name_key) && vendor_gpu[name_key].is_string() &&
            !vendor_gpu[name_key].get<std::string>().empty()) {
          (*gpu)["name"] = vendor_gpu[name_key];
          break;
        }
      }
      if (vendor_gpu.contains("gfx_arch")) (*gpu)["gfx_arch"] = vendor_gpu["gfx_arch"];
      (*gpu)[probe] = vendor_gpu;
    }
    data.erase("gpus");
  }
  software[probe] = data;
}

core::Result<Json> RunProbeInProcess(const core::OsView& os, const std::string& name) {
  const VendorProbe* probe = FindVendorProbe(name);
  if (probe == nullptr) return core::MakeError("unknown probe '{}'", name);
  return Json(probe->collect(os));
}

core::Snapshot CollectSnapshot(const core::OsView& os, const SnapshotOptions& options) {
  return core::SnapshotFromJsonUnchecked(CollectSnapshotJson(os, options));
}

Json CollectSnapshotJson(const core::OsView& os, const SnapshotOptions& options) {
  auto start = std::chrono::steady_clock::now();
  double started_at = core::NowEpochSeconds();
  Section total;

  // The PCI scan is quick and tells which vendor probes to start; start those first, since
  // they (NVML initialisation above all) take longest.
  const std::chrono::milliseconds limit = options.collector_timeout;
  Section pci = Bounded("pci", limit, [os]() { return CollectPciGpus(os); });
  Json pci_gpus = pci.data.value("gpus", Json::array());
  std::vector<std::pair<std::string, std::future<Section>>> probes;
  for (const VendorProbe& probe : VendorProbes()) {
    if (!probe.present(os, pci_gpus)) continue;
    probes.emplace_back(
        std::string(probe.name), std::async(std::launch::async, [os, options, &probe, limit]() {
          // The helper process has its own watchdog (probe_timeout).
          if (!options.helper_command.empty()) {
            auto start = std::chrono::steady_clock::now();
            Section section = RunProbeInHelper(os, probe, options);
            section.timings_ms[std::string(probe.name)] =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            return section;
          }
          return Bounded(probe.name, limit, [os, &probe]() { return probe.collect(os); });
        }));
  }
  std::optional<std::future<Section>> python;
  if (options.python && os.live()) {
    python = std::async(std::launch::async, [&options]() {
      auto start = std::chrono::steady_clock::now();
      Section section = RunPythonProbe(*options.python, options.python_timeout);
      section.timings_ms["python_probe"] =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      return section;
    });
  }
  auto names = std::async(std::launch::async, [os, pci_gpus, limit]() {
    return Bounded("pci_names", limit, [os, gpus = pci_gpus]() mutable {
      Section notes;
      AddPciNames(os, gpus, notes);
      notes.data["gpus"] = std::move(gpus);
      return notes;
    });
  });
  auto host = std::async(std::launch::async,
                         [os, limit]() { return Bounded("host", limit, [os]() { return CollectHost(os); }); });
  auto kernel_log = std::async(std::launch::async, [os, limit]() {
    return Bounded("kernel_log", limit, [os]() { return kernel_log::Collect(os, kernel_log::Options{}); });
  });
  SoftwareOptions software_options;
  if (os.live()) {
    software_options.library_dirs = DirsOf(options.environment, "LD_LIBRARY_PATH");
    software_options.toolchain.extra_dirs = DirsOf(options.environment, "PATH");
    if (options.cache_dir) software_options.toolchain.version_cache = *options.cache_dir + "/tool-versions.json";
    software_options.site_dirs = LiveSiteDirectories(os, options.environment);
  }
  Section software =
      Bounded("software", limit, [os, software_options]() { return CollectSoftware(os, software_options); });
  Section env;
  if (os.live()) {
    env = env::Collect(options.environment);
  } else {
    env.NoteMissing("env",
                    "not collected under --root: this process's environment is not the "
                    "captured machine's");
  }

  Section named = names.get();
  Json gpus = named.data.contains("gpus") ? std::move(named.data["gpus"]) : pci_gpus;
  Absorb(total, std::move(named));
  Absorb(total, std::move(pci));
  Json peers = Json::array();
  for (auto& [name, future] : probes) {
    Section vendor = future.get();
    MergeVendorSection(name, vendor, gpus, software.data, peers);
    Absorb(total, std::move(vendor));
  }
  if (python) {
    Section py = python->get();
    if (!py.data.empty()) {
      software.data["python_probe"] = py.data;
      AdoptProbedTorch(py.data, software.data);
    }
    Absorb(total, std::move(py));
  }
  Section host_section = host.get();
  Section log_section = kernel_log.get();

  Json snapshot = Json::object();
  snapshot["schema_version"] = core::kSnapshotSchemaVersion;
  snapshot["tool_version"] = core::kToolVersion;
  snapshot["collected_at"] = core::FormatUtcIso(started_at);
  snapshot["root"] = os.live() ? Json(nullptr) : Json(os.root());
  snapshot["host"] = host_section.data;
  snapshot["gpus"] = gpus;
  if (!peers.empty()) snapshot["topology"] = Json{{"peers", std::move(peers)}};
  snapshot["software"] = software.data;
  snapshot["kernel_log"] = log_section.data;
  snapshot["env"] = env.data;
  Absorb(total, std::move(host_section));
  Absorb(total, std::move(log_section));
  Absorb(total, std::move(software));
  Absorb(total, std::move(env));
  snapshot["not_collected"] = total.not_collected;
  snapshot["findings"] = total.findings;
  snapshot["collection_ms"] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // Each collector's own time (they run in parallel: the slowest sets collection_ms).
  Json collectors = Json::object();
  for (const auto& [name, ms] : total.timings_ms) collectors[name] = std::round(ms * 10) / 10;
  snapshot["collector_ms"] = std::move(collectors);
  return snapshot;
}

}  // namespace gputriage::collect
