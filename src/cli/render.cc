#include "cli/render.h"

#include <fmt/format.h>

#include "cli/common.h"
#include "core/json_read.h"

namespace gputriage::cli {

void RenderSnapshotParts(const core::Json& snapshot, std::string& out);

namespace {

using core::Json;

std::string Str(const Json& obj, const char* key, const std::string& fallback = "") {
  if (!obj.is_object() || !obj.contains(key)) return fallback;
  const Json& v = obj[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return fallback;
}

std::string LinkText(const Json& gpu) {
  if (!gpu.is_object() || !gpu.contains("link")) return "";
  const Json& link = gpu["link"];
  auto part = [&](const char* speed, const char* width) {
    std::string s;
    if (auto v = core::NumberAt(link, speed)) s += fmt::format("{:g} GT/s", *v);
    if (auto v = core::NumberAt(link, width)) s += fmt::format(" x{:g}", *v);
    return s;
  };
  std::string current = part("current_speed_gts", "current_width");
  std::string max = part("max_speed_gts", "max_width");
  if (current.empty()) return "";
  return "PCIe " + current + (max.empty() ? "" : " (max " + max + ")");
}

void RenderHost(const Json& host, std::string& out) {
  std::string os = host.contains("os") ? Str(host["os"], "pretty_name") : "";
  std::string kernel = host.contains("kernel") ? Str(host["kernel"], "release") : "";
  std::string line = "host      " + Str(host, "hostname", "?");
  if (!os.empty() || !kernel.empty()) line += " (" + os + (kernel.empty() ? "" : ", kernel " + kernel) + ")";
  if (auto cpus = core::NumberAt(host.value("cpu", Json::object()), "logical_cpus")) {
    line += fmt::format(", {:g} CPUs", *cpus);
  }
  if (auto bytes = core::NumberAt(host.value("memory", Json::object()), "total_bytes")) {
    line += ", " + FormatBytes(*bytes);
  }
  if (host.contains("virtualization")) {
    const Json& v = host["virtualization"];
    if (v.contains("container")) line += ", container: " + Str(v, "container");
    if (v.value("is_vm", false)) line += ", VM";
  }
  out += line + "\n";
}

void RenderGpus(const Json& gpus, std::string& out) {
  if (!gpus.is_array() || gpus.empty()) {
    out += "gpus      none found\n";
    return;
  }
  for (const Json& gpu : gpus) {
    std::string line = fmt::format("gpu       {}  {}", Str(gpu, "pci_address", "?"),
                                   Str(gpu, "name", Str(gpu, "pci_name", "unknown GPU")));
    if (gpu.contains("gfx_arch")) line += " (" + Str(gpu, "gfx_arch") + ")";
    line += "  driver " + Str(gpu, "driver", "none");
    std::string link = LinkText(gpu);
    if (!link.empty()) line += "  " + link;
    out += line + "\n";
  }
}

void RenderSoftware(const Json& software, std::string& out) {
  std::vector<std::string> parts;
  if (software.contains("nvidia") && software["nvidia"].contains("driver_version")) {
    parts.push_back("NVIDIA driver " + Str(software["nvidia"], "driver_version"));
  }
  if (software.contains("nvidia") && software["nvidia"].contains("cuda_driver_version")) {
    parts.push_back("CUDA driver API " + Str(software["nvidia"], "cuda_driver_version"));
  }
  if (software.contains("cuda")) {
    for (const Json& install : software["cuda"].value("installations", Json::array())) {
      if (install.contains("version") && !install.contains("link_target")) {
        parts.push_back("CUDA toolkit " + Str(install, "version"));
      }
    }
  }
  if (software.contains("amd") && software["amd"].contains("rocm")) {
    for (const Json& install : software["amd"]["rocm"].value("installations", Json::array())) {
      if (install.contains("version") && !install.contains("link_target")) {
        parts.push_back("ROCm " + Str(install, "version"));
      }
    }
  }
  if (software.contains("python") && software["python"].contains("torch")) {
    const Json& torch = software["python"]["torch"];
    std::string t = "torch " + Str(torch, "version", "?");
    if (torch.contains("cuda")) t += " (CUDA " + Str(torch, "cuda") + ")";
    if (torch.contains("hip")) t += " (HIP " + Str(torch, "hip") + ")";
    parts.push_back(t);
  }
  if (software.contains("libraries")) {
    parts.push_back(fmt::format("{} GPU libraries", software["libraries"].size()));
  }
  if (software.contains("packages")) {
    parts.push_back(fmt::format("{} GPU packages", software["packages"].size()));
  }
  std::string line = "software  ";
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : "") + parts[i];
  out += line + "\n";
}

void RenderKernelLog(const Json& log, std::string& out) {
  if (!log.is_object() || log.empty()) {
    out += "kernel    log not collected\n";
    return;
  }
  std::string line = fmt::format("kernel    {} log records, {} GPU-related",
                                 log.value("records_total", 0), log.value("gpu_records_total", 0));
  if (log.contains("counts") && !log["counts"].empty()) {
    std::string counts;
    for (const auto& [cls, n] : log["counts"].items()) {
      counts += (counts.empty() ? "" : ", ") + cls + " " + n.dump();
    }
    line += " (" + counts + ")";
  }
  out += line + "\n";
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

std::string RenderSnapshotSummary(const Json& snapshot) {
  std::string out;
  if (!snapshot.is_object()) return "not a snapshot object\n";
  // A snapshot read from a file may be damaged; render what has the expected shape.
  try {
    RenderSnapshotParts(snapshot, out);
  } catch (const Json::exception& e) {
    out += fmt::format("(summary incomplete: a field has an unexpected type: {})\n", e.what());
  }
  return out;
}

void RenderSnapshotParts(const Json& snapshot, std::string& out) {
  RenderHost(snapshot.value("host", Json::object()), out);
  RenderGpus(snapshot.value("gpus", Json::array()), out);
  RenderSoftware(snapshot.value("software", Json::object()), out);
  RenderKernelLog(snapshot.value("kernel_log", Json::object()), out);
  const Json env = snapshot.value("env", Json::object());
  if (env.contains("variables")) {
    out += fmt::format("env       {} GPU-stack variables ({} redacted)\n", env["variables"].size(),
                       env.value("redacted", Json::array()).size());
  }
  for (const Json& note : snapshot.value("not_collected", Json::array())) {
    out += fmt::format("not collected: {}: {}\n", Str(note, "item"), Str(note, "reason"));
  }
}

std::string RenderFindings(const std::vector<core::Finding>& findings, size_t max_evidence) {
  std::string out;
  for (const core::Finding& f : findings) {
    std::string tag = fmt::format("[{}]", core::SeverityName(f.severity));
    out += Colored(f.severity, tag) + " " + f.title + "\n";
    if (!f.detail.empty()) out += "    " + f.detail + "\n";
    // The newest evidence is last; show the last few.
    size_t first = f.evidence.size() > max_evidence ? f.evidence.size() - max_evidence : 0;
    if (first > 0) {
      out += fmt::format("    ... {} earlier evidence lines (--json shows all kept)\n", first);
    }
    for (size_t i = first; i < f.evidence.size(); ++i) {
      out += "    evidence (" + f.evidence[i].source + "): " + f.evidence[i].text + "\n";
    }
    if (!f.fix.empty()) out += "    fix: " + f.fix + "\n";
    for (const std::string& ref : f.references) out += "    see: " + ref + "\n";
  }
  return out;
}

}  // namespace gputriage::cli
