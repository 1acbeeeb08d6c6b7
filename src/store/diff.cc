#include "store/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "core/text.h"

namespace gputriage::store {
namespace {

using core::Json;
namespace kind = change_kind;

// ---- Reading untrusted JSON without exceptions: every accessor checks the type first. ----

/// `j[key]` when `j` is an object holding a non-null `key`, else null.
const Json* Get(const Json* j, std::string_view key) {
  if (j == nullptr || !j->is_object()) return nullptr;
  auto it = j->find(std::string(key));
  if (it == j->end() || it->is_null()) return nullptr;
  return &*it;
}

/// Follows a dotted path of object keys ("nvidia.ecc.mode_current").
const Json* GetPath(const Json* j, std::string_view dotted) {
  for (std::string_view key : core::Split(dotted, '.')) {
    j = Get(j, key);
    if (j == nullptr) return nullptr;
  }
  return j;
}

const Json* GetObject(const Json* j, std::string_view dotted) {
  const Json* value = GetPath(j, dotted);
  return value != nullptr && value->is_object() ? value : nullptr;
}

const Json* GetArray(const Json* j, std::string_view dotted) {
  const Json* value = GetPath(j, dotted);
  return value != nullptr && value->is_array() ? value : nullptr;
}

std::optional<std::string> Str(const Json* j) {
  if (j == nullptr || !j->is_string()) return std::nullopt;
  return j->get<std::string>();
}

/// A number (a bool counts as 0/1, for flags such as retired_pages.pending).
std::optional<double> Num(const Json* j) {
  if (j == nullptr) return std::nullopt;
  if (j->is_boolean()) return j->get<bool>() ? 1.0 : 0.0;
  if (!j->is_number()) return std::nullopt;
  return j->get<double>();
}

/// A scalar that identifies something (a version, an id): a string or a number, as text.
std::optional<std::string> Scalar(const Json* j) {
  if (j == nullptr) return std::nullopt;
  if (j->is_string()) return j->get<std::string>();
  if (j->is_number_integer()) return j->dump();
  if (j->is_number_float()) return fmt::format("{}", j->get<double>());
  if (j->is_boolean()) return std::string(j->get<bool>() ? "true" : "false");
  return std::nullopt;
}

/// A value for a summary line: strings bare, numbers shortest, "(none)" for null.
std::string Text(const Json& j) {
  if (j.is_null()) return "(none)";
  if (auto scalar = Scalar(&j)) return *scalar;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string Text(const Json* j) { return j == nullptr ? "(none)" : Text(*j); }

Json ValueOrNull(const Json* j) { return j == nullptr ? Json() : *j; }

// ---- Paths: "gpus[0000:00:06.0].driver", "env.variables.HIP_VISIBLE_DEVICES". ----

/// ".key", or "[key]" when the key would be ambiguous after a dot ("nvidia.xid").
std::string Key(std::string_view key) {
  bool plain = !key.empty() && key.find_first_of(".[]") == std::string_view::npos;
  return plain ? fmt::format(".{}", key) : fmt::format("[{}]", key);
}

std::string Item(std::string_view key) { return fmt::format("[{}]", key); }

// ---- Keyed arrays: match entries of before and after by a name, not by position. ----

using Entries = std::map<std::string, std::vector<const Json*>>;

/// Entries of `array` that are objects with a string `key_field`, grouped by `normalize(key)`.
template <typename Normalize>
Entries IndexBy(const Json* array, std::string_view key_field, Normalize normalize) {
  Entries out;
  if (array == nullptr || !array->is_array()) return out;
  for (const Json& entry : *array) {
    auto key = Str(Get(&entry, key_field));
    if (!key || key->empty()) continue;
    out[normalize(*key)].push_back(&entry);
  }
  return out;
}

std::string Identity(const std::string& s) { return s; }

/// The distinct versions of `entries`, sorted and joined ("2.4.1" or "12.1, 12.4"); nullopt
/// when none has a version.
std::optional<std::string> Versions(const std::vector<const Json*>& entries) {
  std::set<std::string> versions;
  for (const Json* entry : entries) {
    if (auto version = Scalar(Get(entry, "version")); version && !version->empty()) {
      versions.insert(*version);
    }
  }
  if (versions.empty()) return std::nullopt;
  std::string joined;
  for (const std::string& version : versions) {
    if (!joined.empty()) joined += ", ";
    joined += version;
  }
  return joined;
}

/// What a change records for a component: its version when known, else its entry.
Json ComponentValue(const std::vector<const Json*>& entries) {
  if (auto versions = Versions(entries)) return *versions;
  return *entries.front();
}

/// "ROCm", "CUDA", "NVIDIA", "AMD" or "package", from a package name.
std::string StackLabel(std::string_view name) {
  std::string lower = core::ToLower(name);
  auto has = [&](std::string_view part) { return lower.find(part) != std::string::npos; };
  auto starts = [&](std::string_view prefix) { return core::StartsWith(lower, prefix); };
  if (has("amdgpu")) return "AMD";
  if (has("rocm") || has("hip") || has("miopen") || has("rccl") || has("hsa") || has("comgr") ||
      starts("roc") || starts("librocm") || starts("libamd") || has("amd-smi") || has("amdsmi")) {
    return "ROCm";
  }
  if (has("nvidia")) return "NVIDIA";
  if (has("cuda") || has("nccl") || has("cudnn") || has("cublas") || has("tensorrt") ||
      has("nsight") || starts("libnv")) {
    return "CUDA";
  }
  return "package";
}

/// PEP 503 normalization: pip treats "Foo_Bar", "foo-bar" and "foo.bar" as one package.
std::string PythonName(const std::string& name) {
  std::string out = core::ToLower(name);
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '_' || c == '.'; }, '-');
  return out;
}

/// "12.4" for CUDA's 12040 encoding; other values as they are.
std::string CudaVersionText(const Json* j) {
  if (j != nullptr && j->is_number_integer()) {
    int64_t v = j->get<int64_t>();
    if (v >= 1000 && v < 1000000) return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
  }
  return Text(j);
}

std::string GiB(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024)); }

/// A counter that only matters when it grows (an error count): what it is called in a
/// summary and which kind its growth is.
struct Counter {
  const char* path;  // under the GPU object
  std::string_view kind;
  const char* label;
};

const Counter kGpuCounters[] = {
    {"nvidia.ecc.volatile_corrected", kind::kEccErrorsIncreased, "ECC volatile corrected errors"},
    {"nvidia.ecc.volatile_uncorrected", kind::kEccErrorsIncreased,
     "ECC volatile uncorrected errors"},
    {"nvidia.ecc.aggregate_corrected", kind::kEccErrorsIncreased, "ECC aggregate corrected errors"},
    {"nvidia.ecc.aggregate_uncorrected", kind::kEccErrorsIncreased,
     "ECC aggregate uncorrected errors"},
    {"nvidia.retired_pages.single_bit_ecc", kind::kRetiredPagesIncreased,
     "retired pages (single-bit ECC)"},
    {"nvidia.retired_pages.double_bit_ecc", kind::kRetiredPagesIncreased,
     "retired pages (double-bit ECC)"},
    {"nvidia.retired_pages.pending", kind::kRetiredPagesIncreased, "page retirement pending"},
    {"nvidia.remapped_rows.correctable", kind::kRetiredPagesIncreased,
     "remapped rows (correctable)"},
    {"nvidia.remapped_rows.uncorrectable", kind::kRetiredPagesIncreased,
     "remapped rows (uncorrectable)"},
    {"nvidia.remapped_rows.pending", kind::kRetiredPagesIncreased, "row remapping pending"},
    {"nvidia.remapped_rows.failure", kind::kRetiredPagesIncreased, "row remapping failure"},
    {"aer.correctable_total", kind::kPcieErrorsIncreased, "AER correctable errors"},
    {"aer.nonfatal_total", kind::kPcieErrorsIncreased, "AER non-fatal errors"},
    {"aer.fatal_total", kind::kPcieErrorsIncreased, "AER fatal errors"},
    {"nvidia.pcie_replay_counter", kind::kPcieErrorsIncreased, "PCIe replays"},
};

/// Fields that say which board sits at an address, or how it is configured; a change means
/// another board, new firmware, or a reconfiguration (MIG, ECC mode).
const char* const kGpuIdentityFields[] = {
    "vendor",
    "vendor_id",
    "device_id",
    "subsystem_vendor_id",
    "subsystem_device_id",
    "revision",
    "gfx_arch",
    "nvidia.uuid",
    "nvidia.serial",
    "nvidia.vbios_version",
    "nvidia.mig_mode.current",
    "nvidia.ecc.mode_current",
    "nvidia.persistence_mode",
    "nvidia.compute_mode",
    "amd.unique_id",
    "amd.serial_number",
    "amd.vbios_version",
    "amd.product_name",
};

class Differ {
 public:
  Differ(const Json& before, const Json& after) : before_(&before), after_(&after) {}

  std::vector<Change> Run() {
    DiffGpus();
    DiffHost();
    DiffSoftware();
    DiffKernelLog();
    DiffEnv();
    std::stable_sort(changes_.begin(), changes_.end(), [](const Change& a, const Change& b) {
      int class_a = ChangeSeverityClass(a.kind);
      int class_b = ChangeSeverityClass(b.kind);
      if (class_a != class_b) return class_a < class_b;
      if (a.path != b.path) return a.path < b.path;
      return a.kind < b.kind;
    });
    return std::move(changes_);
  }

 private:
  void Add(std::string_view change_kind, std::string path, Json before, Json after,
           std::string summary) {
    changes_.push_back({std::string(change_kind), std::move(path), std::move(before),
                        std::move(after), std::move(summary)});
  }

  // ---- gpus ----

  static std::map<std::string, const Json*> GpusByAddress(const Json* gpus) {
    std::map<std::string, const Json*> out;
    if (gpus == nullptr || !gpus->is_array()) return out;
    for (size_t i = 0; i < gpus->size(); ++i) {
      const Json& gpu = (*gpus)[i];
      if (!gpu.is_object()) continue;
      auto address = Str(Get(&gpu, "pci_address"));
      std::string key =
          address && !address->empty() ? core::ToLower(*address) : fmt::format("#{}", i);
      // A repeated address (a broken collector) keeps its first entry; the rest get a suffix.
      std::string unique = key;
      for (int n = 2; out.count(unique) != 0; ++n) unique = fmt::format("{}#{}", key, n);
      out.emplace(std::move(unique), &gpu);
    }
    return out;
  }

  static Json GpuBrief(const std::string& address, const Json& gpu) {
    Json brief = Json::object();
    brief["pci_address"] = address;
    for (const char* field : {"vendor", "name", "device_id"}) {
      if (const Json* value = Get(&gpu, field)) brief[field] = *value;
    }
    if (const Json* uuid = GetPath(&gpu, "nvidia.uuid")) brief["uuid"] = *uuid;
    if (const Json* serial = GetPath(&gpu, "nvidia.serial")) brief["serial"] = *serial;
    if (const Json* serial = GetPath(&gpu, "amd.serial_number")) brief["serial"] = *serial;
    return brief;
  }

  static std::string GpuLabel(const std::string& address, const Json& gpu) {
    auto name = Str(Get(&gpu, "name"));
    if (!name) name = Str(Get(&gpu, "pci_name"));
    return name ? fmt::format("GPU {} ({})", address, *name) : fmt::format("GPU {}", address);
  }

  void DiffGpus() {
    const Json* before_gpus = GetArray(before_, "gpus");
    const Json* after_gpus = GetArray(after_, "gpus");
    if (before_gpus == nullptr || after_gpus == nullptr) return;  // not collected on one side
    auto before = GpusByAddress(before_gpus);
    auto after = GpusByAddress(after_gpus);
    for (const auto& [address, gpu] : before) {
      std::string path = "gpus" + Item(address);
      auto match = after.find(address);
      if (match == after.end()) {
        Add(kind::kGpuRemoved, path, GpuBrief(address, *gpu), Json(),
            GpuLabel(address, *gpu) + " is gone");
        continue;
      }
      DiffGpu(address, path, *gpu, *match->second);
    }
    for (const auto& [address, gpu] : after) {
      if (before.count(address) != 0) continue;
      Add(kind::kGpuAdded, "gpus" + Item(address), Json(), GpuBrief(address, *gpu),
          GpuLabel(address, *gpu) + " appeared");
    }
  }

  void DiffGpu(const std::string& address, const std::string& path, const Json& before,
               const Json& after) {
    DiffGpuIdentity(address, path, before, after);
    DiffGpuDriver(address, path, before, after);
    DiffLink(address, path, before, after);
    for (const Counter& counter : kGpuCounters) {
      DiffCounter(address, path, counter.path, counter.kind, counter.label, before, after);
    }
    DiffAmdRas(address, path, before, after);
    DiffGpuNvidiaDriver(address, path, before, after);
  }

  void DiffGpuIdentity(const std::string& address, const std::string& path, const Json& before,
                       const Json& after) {
    Json old_values = Json::object();
    Json new_values = Json::object();
    std::string details;
    auto note = [&](const std::string& field, const Json& old_value, const Json& new_value) {
      old_values[field] = old_value;
      new_values[field] = new_value;
      if (!details.empty()) details += ", ";
      details += fmt::format("{} {} -> {}", field, Text(old_value), Text(new_value));
    };
    // The name comes from the driver (NVML, KFD) when it answered, else from pci.ids; a
    // snapshot taken without the driver must not look like another board.
    auto old_name = Str(Get(&before, "name"));
    auto new_name = Str(Get(&after, "name"));
    if (old_name && new_name && *old_name != *new_name) {
      bool old_from_ids = Str(Get(&before, "pci_name")) == old_name;
      bool new_from_ids = Str(Get(&after, "pci_name")) == new_name;
      if (old_from_ids == new_from_ids) note("name", *old_name, *new_name);
    }
    for (const char* field : kGpuIdentityFields) {
      const Json* old_value = GetPath(&before, field);
      const Json* new_value = GetPath(&after, field);
      if (old_value == nullptr || new_value == nullptr || *old_value == *new_value) continue;
      note(field, *old_value, *new_value);
    }
    if (details.empty()) return;
    Add(kind::kGpuChanged, path, std::move(old_values), std::move(new_values),
        fmt::format("GPU {}: {}", address, details));
  }

  void DiffGpuDriver(const std::string& address, const std::string& path, const Json& before,
                     const Json& after) {
    // An absent driver means no driver is bound (docs/snapshot-schema.md), so it compares.
    auto old_driver = Str(Get(&before, "driver"));
    auto new_driver = Str(Get(&after, "driver"));
    if (old_driver == new_driver) return;
    Add(kind::kDriverChanged, path + ".driver", old_driver ? Json(*old_driver) : Json(),
        new_driver ? Json(*new_driver) : Json(),
        fmt::format("GPU {} driver {} -> {}", address, old_driver.value_or("(none)"),
                    new_driver.value_or("(none)")));
  }

  static std::string LinkText(std::optional<double> width, std::optional<double> speed,
                              bool show_width, bool show_speed) {
    std::string out;
    if (show_width && width) out = fmt::format("x{}", *width);
    if (show_speed && speed) {
      if (!out.empty()) out += ' ';
      out += fmt::format("{} GT/s", *speed);
    }
    return out;
  }

  void DiffLink(const std::string& address, const std::string& path, const Json& before,
                const Json& after) {
    const Json* old_link = GetObject(&before, "link");
    const Json* new_link = GetObject(&after, "link");
    if (old_link == nullptr || new_link == nullptr) return;
    auto old_width = Num(Get(old_link, "current_width"));
    auto new_width = Num(Get(new_link, "current_width"));
    auto old_speed = Num(Get(old_link, "current_speed_gts"));
    auto new_speed = Num(Get(new_link, "current_speed_gts"));
    bool widths = old_width && new_width;
    bool speeds = old_speed && new_speed;
    bool width_fell = widths && *new_width < *old_width;
    bool width_rose = widths && *new_width > *old_width;
    bool speed_fell = speeds && *new_speed < *old_speed;
    bool speed_rose = speeds && *new_speed > *old_speed;
    if (!width_fell && !width_rose && !speed_fell && !speed_rose) return;
    bool show_width = width_fell || width_rose;
    bool show_speed = speed_fell || speed_rose;
    std::string summary = fmt::format("GPU {} link {} -> {}", address,
                                      LinkText(old_width, old_speed, show_width, show_speed),
                                      LinkText(new_width, new_speed, show_width, show_speed));
    bool downtrained = width_fell || speed_fell;
    if (downtrained && !width_fell) {
      // GPUs drop the link speed on their own when idle (NVIDIA to 2.5 GT/s); width is stable.
      summary += " (the speed also drops when the GPU idles: compare under load)";
    }
    auto new_max_width = Num(Get(new_link, "max_width"));
    auto new_max_speed = Num(Get(new_link, "max_speed_gts"));
    if (downtrained && ((new_max_width && new_width && *new_max_width > *new_width) ||
                        (new_max_speed && new_speed && *new_max_speed > *new_speed))) {
      summary +=
          fmt::format(", below its maximum {}", LinkText(new_max_width, new_max_speed, true, true));
    }
    Add(downtrained ? kind::kLinkDowntrained : kind::kLinkRestored, path + ".link", *old_link,
        *new_link, std::move(summary));
  }

  void DiffCounter(const std::string& address, const std::string& gpu_path, std::string_view field,
                   std::string_view change_kind, const char* label, const Json& before,
                   const Json& after) {
    const Json* old_value = GetPath(&before, field);
    const Json* new_value = GetPath(&after, field);
    auto old_count = Num(old_value);
    auto new_count = Num(new_value);
    // A counter that went down was reset (driver reload, reboot): not a change.
    if (!old_count || !new_count || !(*new_count > *old_count)) return;
    Add(change_kind, gpu_path + "." + std::string(field), *old_value, *new_value,
        fmt::format("GPU {} {} {} -> {}", address, label, Text(old_value), Text(new_value)));
  }

  void DiffAmdRas(const std::string& address, const std::string& path, const Json& before,
                  const Json& after) {
    const Json* old_ras = GetObject(&before, "amd.ras");
    const Json* new_ras = GetObject(&after, "amd.ras");
    if (old_ras == nullptr || new_ras == nullptr) return;
    for (const auto& [block, counts] : new_ras->items()) {
      if (!counts.is_object() || Get(old_ras, block) == nullptr) continue;
      std::string field = "amd.ras" + Key(block);
      for (const char* which : {"ue", "ce"}) {
        const Json* old_value = Get(Get(old_ras, block), which);
        const Json* new_value = Get(&counts, which);
        auto old_count = Num(old_value);
        auto new_count = Num(new_value);
        if (!old_count || !new_count || !(*new_count > *old_count)) continue;
        Add(kind::kEccErrorsIncreased, path + "." + field + "." + which, *old_value, *new_value,
            fmt::format("GPU {} RAS {} {} errors {} -> {}", address, block,
                        std::string_view(which) == "ue" ? "uncorrectable" : "correctable",
                        Text(old_value), Text(new_value)));
      }
    }
  }

  // Per-GPU copies of the NVIDIA driver version, used only when the snapshot has no
  // software.nvidia section; reported once per distinct change.
  void DiffGpuNvidiaDriver(const std::string& address, const std::string& path, const Json& before,
                           const Json& after) {
    if (GetObject(before_, "software.nvidia") != nullptr &&
        GetObject(after_, "software.nvidia") != nullptr) {
      return;
    }
    for (const char* field : {"driver_version", "cuda_driver_version"}) {
      const Json* old_value = GetPath(&before, std::string("nvidia.") + field);
      const Json* new_value = GetPath(&after, std::string("nvidia.") + field);
      if (old_value == nullptr || new_value == nullptr || *old_value == *new_value) continue;
      std::string key = fmt::format("{}:{}:{}", field, Text(old_value), Text(new_value));
      if (!reported_gpu_driver_changes_.insert(key).second) continue;
      bool cuda = std::string_view(field) == "cuda_driver_version";
      Add(kind::kDriverChanged, fmt::format("{}.nvidia.{}", path, field), *old_value, *new_value,
          cuda ? fmt::format("CUDA driver API {} -> {} (GPU {})", CudaVersionText(old_value),
                             CudaVersionText(new_value), address)
               : fmt::format("NVIDIA driver {} -> {} (GPU {})", Text(old_value), Text(new_value),
                             address));
    }
  }

  // ---- host ----

  void DiffHostValue(std::string_view field, std::string_view label) {
    const Json* old_value = GetPath(before_, field);
    const Json* new_value = GetPath(after_, field);
    if (old_value == nullptr || new_value == nullptr || *old_value == *new_value) return;
    Add(kind::kHostChanged, std::string(field), *old_value, *new_value,
        fmt::format("{} {} -> {}", label, Text(old_value), Text(new_value)));
  }

  static std::string FlagText(const std::string& name, const Json& value) {
    if (value.is_null() || value == true ||
        (value.is_string() && value.get<std::string>().empty())) {
      return name;
    }
    return fmt::format("{}={}", name, Text(value));
  }

  void DiffHost() {
    const Json* kernel_before = GetPath(before_, "host.kernel.release");
    const Json* kernel_after = GetPath(after_, "host.kernel.release");
    if (kernel_before != nullptr && kernel_after != nullptr && *kernel_before != *kernel_after) {
      Add(kind::kKernelChanged, "host.kernel.release", *kernel_before, *kernel_after,
          fmt::format("kernel {} -> {}", Text(kernel_before), Text(kernel_after)));
    }
    DiffHostValue("host.hostname", "hostname");
    if (GetPath(before_, "host.os.pretty_name") != nullptr &&
        GetPath(after_, "host.os.pretty_name") != nullptr) {
      DiffHostValue("host.os.pretty_name", "OS");
    } else {
      DiffHostValue("host.os.version_id", "OS version");
    }
    DiffHostValue("host.cpu.model", "CPU");
    DiffHostValue("host.cpu.logical_cpus", "logical CPUs");
    DiffHostValue("host.iommu.enabled", "IOMMU enabled");
    DiffHostValue("host.iommu.groups", "IOMMU groups");
    DiffHostValue("host.virtualization.hypervisor", "hypervisor");
    DiffHostValue("host.virtualization.container", "container");
    DiffMemoryTotal();
    DiffCmdline();
  }

  void DiffMemoryTotal() {
    const Json* old_value = GetPath(before_, "host.memory.total_bytes");
    const Json* new_value = GetPath(after_, "host.memory.total_bytes");
    auto old_bytes = Num(old_value);
    auto new_bytes = Num(new_value);
    if (!old_bytes || !new_bytes) return;
    // MemTotal moves by a few MiB between kernels (reserved memory); a lost DIMM or a changed
    // memory limit moves it by far more than 1%.
    if (std::fabs(*new_bytes - *old_bytes) <= 0.01 * std::max(*old_bytes, *new_bytes)) return;
    Add(kind::kHostChanged, "host.memory.total_bytes", *old_value, *new_value,
        fmt::format("memory total {} -> {}", GiB(*old_bytes), GiB(*new_bytes)));
  }

  void DiffCmdline() {
    const Json* old_flags = GetObject(before_, "host.cmdline.flags");
    const Json* new_flags = GetObject(after_, "host.cmdline.flags");
    if (old_flags == nullptr || new_flags == nullptr) return;
    for (const auto& [name, value] : old_flags->items()) {
      std::string path = "host.cmdline.flags" + Key(name);
      auto match = new_flags->find(name);
      if (match == new_flags->end()) {
        Add(kind::kHostChanged, path, value, Json(),
            fmt::format("kernel command line -{}", FlagText(name, value)));
      } else if (*match != value) {
        Add(kind::kHostChanged, path, value, *match,
            fmt::format("kernel command line {} -> {}", FlagText(name, value),
                        FlagText(name, *match)));
      }
    }
    for (const auto& [name, value] : new_flags->items()) {
      if (old_flags->contains(name)) continue;
      Add(kind::kHostChanged, "host.cmdline.flags" + Key(name), Json(), value,
          fmt::format("kernel command line +{}", FlagText(name, value)));
    }
  }

  // ---- software ----

  void DiffSoftware() {
    DiffKernelModules();
    DiffNvidiaDriver();
    DiffComponents(GetArray(before_, "software.packages"), GetArray(after_, "software.packages"),
                   "name", "software.packages", Identity,
                   [](const std::string& name) { return StackLabel(name) + " " + name; });
    DiffComponents(GetArray(before_, "software.libraries"), GetArray(after_, "software.libraries"),
                   "name", "software.libraries", Identity,
                   [](const std::string& name) { return "library " + name; });
    // The AMD probe's data lands in software.amd (collect/snapshot.cc MergeVendorSection);
    // docs/snapshot-schema.md also names software.rocm. Compare whichever both snapshots have.
    for (const char* rocm : {"software.rocm.installations", "software.amd.rocm.installations"}) {
      const Json* old_rocm = GetArray(before_, rocm);
      const Json* new_rocm = GetArray(after_, rocm);
      if (old_rocm == nullptr || new_rocm == nullptr) continue;
      DiffComponents(old_rocm, new_rocm, "path", rocm, Identity,
                     [](const std::string& path) { return "ROCm installation " + path; });
      break;
    }
    DiffComponents(GetArray(before_, "software.cuda.installations"),
                   GetArray(after_, "software.cuda.installations"), "path",
                   "software.cuda.installations", Identity,
                   [](const std::string& path) { return "CUDA installation " + path; });
    DiffPython();
  }

  void DiffKernelModules() {
    const Json* old_modules = GetObject(before_, "software.kernel_modules");
    const Json* new_modules = GetObject(after_, "software.kernel_modules");
    if (old_modules == nullptr || new_modules == nullptr) return;
    for (const auto& [name, old_module] : old_modules->items()) {
      std::string path = "software.kernel_modules" + Key(name);
      const Json* new_module = Get(new_modules, name);
      if (new_module == nullptr) {
        Add(kind::kDriverChanged, path, old_module, Json(),
            fmt::format("kernel module {} {} is gone", name, Text(Get(&old_module, "version"))));
        continue;
      }
      const Json* old_version = Get(&old_module, "version");
      const Json* new_version = Get(new_module, "version");
      if (old_version != nullptr && new_version != nullptr && *old_version != *new_version) {
        Add(kind::kDriverChanged, path + ".version", *old_version, *new_version,
            fmt::format("kernel module {} {} -> {}", name, Text(old_version), Text(new_version)));
        continue;
      }
      // Same version string, different source hash: a rebuilt or patched module.
      const Json* old_src = Get(&old_module, "srcversion");
      const Json* new_src = Get(new_module, "srcversion");
      if (old_src != nullptr && new_src != nullptr && *old_src != *new_src) {
        Add(kind::kDriverChanged, path + ".srcversion", *old_src, *new_src,
            fmt::format("kernel module {} rebuilt from other sources (srcversion {} -> {})", name,
                        Text(old_src), Text(new_src)));
      }
    }
    for (const auto& [name, new_module] : new_modules->items()) {
      if (Get(old_modules, name) != nullptr || new_module.is_null()) continue;
      Add(kind::kDriverChanged, "software.kernel_modules" + Key(name), Json(), new_module,
          fmt::format("kernel module {} {} appeared", name, Text(Get(&new_module, "version"))));
    }
  }

  void DiffNvidiaDriver() {
    const Json* old_nvidia = GetObject(before_, "software.nvidia");
    const Json* new_nvidia = GetObject(after_, "software.nvidia");
    if (old_nvidia == nullptr || new_nvidia == nullptr) return;
    const Json* old_driver = Get(old_nvidia, "driver_version");
    const Json* new_driver = Get(new_nvidia, "driver_version");
    if (old_driver != nullptr && new_driver != nullptr && *old_driver != *new_driver) {
      Add(kind::kDriverChanged, "software.nvidia.driver_version", *old_driver, *new_driver,
          fmt::format("NVIDIA driver {} -> {}", Text(old_driver), Text(new_driver)));
    }
    const Json* old_cuda = Get(old_nvidia, "cuda_driver_version");
    const Json* new_cuda = Get(new_nvidia, "cuda_driver_version");
    if (old_cuda != nullptr && new_cuda != nullptr && *old_cuda != *new_cuda) {
      Add(kind::kDriverChanged, "software.nvidia.cuda_driver_version", *old_cuda, *new_cuda,
          fmt::format("CUDA driver API {} -> {}", CudaVersionText(old_cuda),
                      CudaVersionText(new_cuda)));
    }
  }

  /// Added, removed and re-versioned entries of a keyed array, when both snapshots have it.
  template <typename Normalize, typename Label>
  void DiffComponents(const Json* old_array, const Json* new_array, std::string_view key_field,
                      const std::string& base_path, Normalize normalize, Label label,
                      const std::set<std::string>& skip = {}) {
    if (old_array == nullptr || new_array == nullptr) return;
    Entries old_entries = IndexBy(old_array, key_field, normalize);
    Entries new_entries = IndexBy(new_array, key_field, normalize);
    auto display = [&](const std::string& key, const std::vector<const Json*>& entries) {
      return label(Str(Get(entries.front(), key_field)).value_or(key));
    };
    for (const auto& [key, old_list] : old_entries) {
      if (skip.count(key) != 0) continue;
      std::string path = base_path + Item(key);
      auto match = new_entries.find(key);
      if (match == new_entries.end()) {
        auto version = Versions(old_list);
        Add(kind::kComponentRemoved, path, ComponentValue(old_list), Json(),
            version ? fmt::format("{} {} removed", display(key, old_list), *version)
                    : fmt::format("{} removed", display(key, old_list)));
        continue;
      }
      auto old_version = Versions(old_list);
      auto new_version = Versions(match->second);
      if (!old_version || !new_version || *old_version == *new_version) continue;
      Add(kind::kComponentVersionChanged, path, *old_version, *new_version,
          fmt::format("{} {} -> {}", display(key, old_list), *old_version, *new_version));
    }
    for (const auto& [key, new_list] : new_entries) {
      if (skip.count(key) != 0 || old_entries.count(key) != 0) continue;
      auto version = Versions(new_list);
      Add(kind::kComponentAdded, base_path + Item(key), Json(), ComponentValue(new_list),
          version ? fmt::format("{} {} added", display(key, new_list), *version)
                  : fmt::format("{} added", display(key, new_list)));
    }
  }

  void DiffPython() {
    const Json* old_python = GetObject(before_, "software.python");
    const Json* new_python = GetObject(after_, "software.python");
    if (old_python == nullptr || new_python == nullptr) return;
    const Json* old_torch = GetObject(old_python, "torch");
    const Json* new_torch = GetObject(new_python, "torch");
    // torch has its own section with more detail; do not report it twice.
    std::set<std::string> skip;
    if (old_torch != nullptr || new_torch != nullptr) skip.insert("torch");
    DiffComponents(
        GetArray(old_python, "packages"), GetArray(new_python, "packages"), "name",
        "software.python.packages", PythonName,
        [](const std::string& name) { return "Python package " + name; }, skip);
    if (old_torch == nullptr && new_torch == nullptr) return;
    if (old_torch == nullptr || new_torch == nullptr) {
      const Json* present = old_torch != nullptr ? old_torch : new_torch;
      std::string version = Text(Get(present, "version"));
      if (old_torch != nullptr) {
        Add(kind::kComponentRemoved, "software.python.torch", ValueOrNull(Get(present, "version")),
            Json(), fmt::format("PyTorch {} removed", version));
      } else {
        Add(kind::kComponentAdded, "software.python.torch", Json(),
            ValueOrNull(Get(present, "version")), fmt::format("PyTorch {} added", version));
      }
      return;
    }
    const std::pair<const char*, const char*> fields[] = {
        {"version", "PyTorch"}, {"cuda", "PyTorch CUDA"}, {"hip", "PyTorch HIP"}};
    for (const auto& [field, label] : fields) {
      const Json* old_value = Get(old_torch, field);
      const Json* new_value = Get(new_torch, field);
      if (old_value == nullptr || new_value == nullptr || *old_value == *new_value) continue;
      Add(kind::kComponentVersionChanged, std::string("software.python.torch.") + field, *old_value,
          *new_value, fmt::format("{} {} -> {}", label, Text(old_value), Text(new_value)));
    }
  }

  // ---- kernel log ----

  /// Xid code -> (records, GPU addresses), from kernel_log.records[].xid.
  static std::map<int64_t, std::pair<int64_t, std::set<std::string>>> XidCodes(
      const Json* records) {
    std::map<int64_t, std::pair<int64_t, std::set<std::string>>> out;
    for (const Json& record : *records) {
      const Json* code = GetPath(&record, "xid.code");
      if (code == nullptr || !code->is_number_integer()) continue;
      auto& [count, gpus] = out[code->get<int64_t>()];
      ++count;
      if (auto pci = Str(GetPath(&record, "xid.pci")); pci && !pci->empty()) gpus.insert(*pci);
    }
    return out;
  }

  void DiffKernelLog() {
    const Json* old_counts = GetObject(before_, "kernel_log.counts");
    const Json* new_counts = GetObject(after_, "kernel_log.counts");
    if (old_counts != nullptr && new_counts != nullptr) {
      for (const auto& [log_class, count] : new_counts->items()) {
        auto new_count = Num(&count);
        if (!new_count || *new_count <= 0) continue;
        auto old_count = Num(Get(old_counts, log_class));
        if (old_count && *old_count > 0) continue;
        Add(kind::kKernelLogNewClass, "kernel_log.counts" + Item(log_class),
            ValueOrNull(Get(old_counts, log_class)), count,
            fmt::format("kernel log: new {} records ({})", log_class, Text(count)));
      }
    }
    const Json* old_records = GetArray(before_, "kernel_log.records");
    const Json* new_records = GetArray(after_, "kernel_log.records");
    if (old_records == nullptr || new_records == nullptr) return;
    auto old_codes = XidCodes(old_records);
    for (const auto& [code, seen] : XidCodes(new_records)) {
      if (old_codes.count(code) != 0) continue;
      const auto& [count, gpus] = seen;
      std::string where;
      for (const std::string& gpu : gpus) where += (where.empty() ? "; GPU " : ", ") + gpu;
      Add(kind::kKernelLogNewClass, fmt::format("kernel_log.xid[{}]", code), Json(), count,
          fmt::format("kernel log: new Xid {} ({} record{}{})", code, count, count == 1 ? "" : "s",
                      where));
    }
  }

  // ---- env ----

  void DiffEnv() {
    const Json* old_vars = GetObject(before_, "env.variables");
    const Json* new_vars = GetObject(after_, "env.variables");
    if (old_vars == nullptr || new_vars == nullptr) return;
    for (const auto& [name, value] : old_vars->items()) {
      std::string path = "env.variables" + Key(name);
      auto match = new_vars->find(name);
      if (match == new_vars->end()) {
        Add(kind::kEnvRemoved, path, value, Json(),
            fmt::format("env {} removed (was {})", name, Text(value)));
      } else if (*match != value) {
        Add(kind::kEnvChanged, path, value, *match,
            fmt::format("env {} {} -> {}", name, Text(value), Text(*match)));
      }
    }
    for (const auto& [name, value] : new_vars->items()) {
      if (old_vars->contains(name)) continue;
      Add(kind::kEnvAdded, "env.variables" + Key(name), Json(), value,
          fmt::format("env {}={} added", name, Text(value)));
    }
  }

  const Json* before_;
  const Json* after_;
  std::vector<Change> changes_;
  std::set<std::string> reported_gpu_driver_changes_;
};

}  // namespace

int ChangeSeverityClass(std::string_view change) {
  static const std::map<std::string_view, int> kClasses = {
      {kind::kGpuRemoved, 0},
      {kind::kGpuChanged, 0},
      {kind::kLinkDowntrained, 0},
      {kind::kEccErrorsIncreased, 0},
      {kind::kRetiredPagesIncreased, 0},
      {kind::kKernelLogNewClass, 0},
      {kind::kPcieErrorsIncreased, 1},
      {kind::kGpuAdded, 1},
      {kind::kDriverChanged, 1},
      {kind::kKernelChanged, 1},
      {kind::kHostChanged, 1},
      {kind::kComponentVersionChanged, 2},
      {kind::kComponentRemoved, 2},
      {kind::kComponentAdded, 2},
      {kind::kLinkRestored, 2},
      {kind::kEnvChanged, 3},
      {kind::kEnvAdded, 3},
      {kind::kEnvRemoved, 3},
  };
  auto it = kClasses.find(change);
  return it == kClasses.end() ? 4 : it->second;
}

std::vector<Change> DiffSnapshots(const Json& before, const Json& after) {
  return Differ(before, after).Run();
}

void to_json(Json& j, const Change& change) {
  j = Json{{"kind", change.kind},
           {"path", change.path},
           {"before", change.before},
           {"after", change.after},
           {"summary", change.summary}};
}

Json DiffToJson(const std::vector<Change>& changes) {
  Json list = Json::array();
  for (const Change& change : changes) list.push_back(change);
  return Json{{"changes", std::move(list)}};
}

}  // namespace gputriage::store
