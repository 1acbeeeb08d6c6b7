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

template <typename T>
std::optional<Json> JsonOf(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  return Json(*value);
}

/// A value for a summary line: strings bare, numbers shortest, "(none)" for null.
std::string Text(const Json& j) {
  if (j.is_null()) return "(none)";
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_float()) return fmt::format("{}", j.get<double>());
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string Text(const std::optional<std::string>& s) { return s ? *s : "(none)"; }

/// A number for comparing counters (a flag counts as 0/1: retired_pages.pending).
template <typename T>
std::optional<double> Num(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  return static_cast<double>(*value);
}

// ---- Paths: "gpus[0000:00:06.0].driver", "env.variables.HIP_VISIBLE_DEVICES". ----

/// ".key", or "[key]" when the key would be ambiguous after a dot ("nvidia.xid").
std::string Key(std::string_view key) {
  bool plain = !key.empty() && key.find_first_of(".[]") == std::string_view::npos;
  return plain ? fmt::format(".{}", key) : fmt::format("[{}]", key);
}

std::string Item(std::string_view key) { return fmt::format("[{}]", key); }

// ---- Keyed lists: match entries of before and after by a name, not by position. ----

/// One entry of a keyed list: its key, version and JSON form.
struct Component {
  std::string display_key;  // the key as written (before normalisation)
  std::optional<std::string> version;
  Json value;
};

using Entries = std::map<std::string, std::vector<Component>>;

std::string Identity(const std::string& s) { return s; }

/// The entries of `list` that have a non-empty key, grouped by `normalize(key)`.
template <typename T, typename KeyOf, typename Normalize>
Entries IndexBy(const std::vector<T>& list, KeyOf key_of, Normalize normalize) {
  Entries out;
  for (const T& entry : list) {
    const std::optional<std::string>& key = key_of(entry);
    if (!key || key->empty()) continue;
    out[normalize(*key)].push_back({*key, entry.version, core::ToJson(entry)});
  }
  return out;
}

/// The distinct versions of `entries`, sorted and joined ("2.4.1" or "12.1, 12.4"); nullopt
/// when none has a version.
std::optional<std::string> Versions(const std::vector<Component>& entries) {
  std::set<std::string> versions;
  for (const Component& entry : entries) {
    if (entry.version && !entry.version->empty()) versions.insert(*entry.version);
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
Json ComponentValue(const std::vector<Component>& entries) {
  if (auto versions = Versions(entries)) return *versions;
  return entries.front().value;
}

/// "ROCm", "CUDA", "NVIDIA", "AMD" or "package", from a package name.
std::string StackLabel(std::string_view name) {
  std::string lower = core::ToLower(name);
  auto has = [&](std::string_view part) { return lower.find(part) != std::string::npos; };
  auto starts = [&](std::string_view prefix) { return core::StartsWith(lower, prefix); };
  if (has("amdgpu")) return "AMD";
  if (has("rocm") || has("hip") || has("miopen") || has("rccl") || has("hsa") || has("comgr") || starts("roc") ||
      starts("librocm") || starts("libamd") || has("amd-smi") || has("amdsmi")) {
    return "ROCm";
  }
  if (has("nvidia")) return "NVIDIA";
  if (has("cuda") || has("nccl") || has("cudnn") || has("cublas") || has("tensorrt") || has("nsight") ||
      starts("libnv")) {
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

std::string GiB(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024)); }

/// A GPU value by name: what `field` says of a GPU, nullopt when unknown.
struct GpuField {
  const char* path;  // under the GPU object, as it appears in paths and summaries
  std::optional<Json> (*get)(const core::Gpu& gpu);
};

const core::NvidiaGpu* Nv(const core::Gpu& gpu) { return gpu.nvidia ? &*gpu.nvidia : nullptr; }
const core::AmdGpu* Amd(const core::Gpu& gpu) { return gpu.amd ? &*gpu.amd : nullptr; }

/// A counter that only matters when it grows (an error count): what it is called in a
/// summary and which kind its growth is.
struct Counter {
  GpuField field;
  std::string_view kind;
  const char* label;
};

#define GT_NV(member) [](const core::Gpu& g) { return Nv(g) ? JsonOf(Nv(g)->member) : std::nullopt; }
#define GT_NV2(part, member) \
  [](const core::Gpu& g) { return Nv(g) && Nv(g)->part ? JsonOf(Nv(g)->part->member) : std::nullopt; }
#define GT_AMD(member) [](const core::Gpu& g) { return Amd(g) ? JsonOf(Amd(g)->member) : std::nullopt; }
#define GT_GPU(member) [](const core::Gpu& g) { return JsonOf(g.member); }
#define GT_AER(member) [](const core::Gpu& g) { return g.aer ? JsonOf(g.aer->member) : std::nullopt; }

const Counter kGpuCounters[] = {
    {{"nvidia.ecc.volatile_corrected", GT_NV2(ecc, volatile_corrected)},
     kind::kEccErrorsIncreased,
     "ECC volatile corrected errors"},
    {{"nvidia.ecc.volatile_uncorrected", GT_NV2(ecc, volatile_uncorrected)},
     kind::kEccErrorsIncreased,
     "ECC volatile uncorrected errors"},
    {{"nvidia.ecc.aggregate_corrected", GT_NV2(ecc, aggregate_corrected)},
     kind::kEccErrorsIncreased,
     "ECC aggregate corrected errors"},
    {{"nvidia.ecc.aggregate_uncorrected", GT_NV2(ecc, aggregate_uncorrected)},
     kind::kEccErrorsIncreased,
     "ECC aggregate uncorrected errors"},
    {{"nvidia.retired_pages.single_bit_ecc", GT_NV2(retired_pages, single_bit_ecc)},
     kind::kRetiredPagesIncreased,
     "retired pages (single-bit ECC)"},
    {{"nvidia.retired_pages.double_bit_ecc", GT_NV2(retired_pages, double_bit_ecc)},
     kind::kRetiredPagesIncreased,
     "retired pages (double-bit ECC)"},
    {{"nvidia.retired_pages.pending", GT_NV2(retired_pages, pending)},
     kind::kRetiredPagesIncreased,
     "page retirement pending"},
    {{"nvidia.remapped_rows.correctable", GT_NV2(remapped_rows, correctable)},
     kind::kRetiredPagesIncreased,
     "remapped rows (correctable)"},
    {{"nvidia.remapped_rows.uncorrectable", GT_NV2(remapped_rows, uncorrectable)},
     kind::kRetiredPagesIncreased,
     "remapped rows (uncorrectable)"},
    {{"nvidia.remapped_rows.pending", GT_NV2(remapped_rows, pending)},
     kind::kRetiredPagesIncreased,
     "row remapping pending"},
    {{"nvidia.remapped_rows.failure", GT_NV2(remapped_rows, failure)},
     kind::kRetiredPagesIncreased,
     "row remapping failure"},
    {{"aer.correctable_total", GT_AER(correctable_total)}, kind::kPcieErrorsIncreased, "AER correctable errors"},
    {{"aer.nonfatal_total", GT_AER(nonfatal_total)}, kind::kPcieErrorsIncreased, "AER non-fatal errors"},
    {{"aer.fatal_total", GT_AER(fatal_total)}, kind::kPcieErrorsIncreased, "AER fatal errors"},
    {{"nvidia.pcie_replay_counter", GT_NV(pcie_replay_counter)}, kind::kPcieErrorsIncreased, "PCIe replays"},
};

/// Fields that say which board sits at an address, or how it is configured; a change means
/// another board, new firmware, or a reconfiguration (MIG, ECC mode).
const GpuField kGpuIdentityFields[] = {
    {"vendor", GT_GPU(vendor)},
    {"vendor_id", GT_GPU(vendor_id)},
    {"device_id", GT_GPU(device_id)},
    {"subsystem_vendor_id", GT_GPU(subsystem_vendor_id)},
    {"subsystem_device_id", GT_GPU(subsystem_device_id)},
    {"revision", GT_GPU(revision)},
    {"gfx_arch", GT_GPU(gfx_arch)},
    {"nvidia.uuid", GT_NV(uuid)},
    {"nvidia.serial", GT_NV(serial)},
    {"nvidia.vbios_version", GT_NV(vbios_version)},
    {"nvidia.mig_mode.current", GT_NV2(mig_mode, current)},
    {"nvidia.ecc.mode_current", GT_NV2(ecc, mode_current)},
    {"nvidia.persistence_mode", GT_NV(persistence_mode)},
    {"nvidia.compute_mode", GT_NV(compute_mode)},
    {"amd.unique_id", GT_AMD(unique_id)},
    {"amd.serial_number", GT_AMD(serial_number)},
    {"amd.vbios_version", GT_AMD(vbios_version)},
    {"amd.product_name", GT_AMD(product_name)},
};

#undef GT_NV
#undef GT_NV2
#undef GT_AMD
#undef GT_GPU
#undef GT_AER

class Differ {
 public:
  Differ(const core::Snapshot& before, const core::Snapshot& after) : before_(before), after_(after) {}

  std::vector<Change> Run() {
    DiffGpus();
    DiffTopology();
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
  void Add(std::string_view change_kind, std::string path, Json before, Json after, std::string summary) {
    changes_.push_back(
        {std::string(change_kind), std::move(path), std::move(before), std::move(after), std::move(summary)});
  }

  // ---- topology ----

  static std::map<std::string, const core::GpuPeer*> PeersByPair(const core::Snapshot& snapshot) {
    std::map<std::string, const core::GpuPeer*> out;
    if (!snapshot.topology || !snapshot.topology->peers) return out;
    for (const core::GpuPeer& peer : *snapshot.topology->peers) {
      if (!peer.a || !peer.b) continue;
      std::string a = core::ToLower(*peer.a), b = core::ToLower(*peer.b);
      out.emplace(a < b ? a + "," + b : b + "," + a, &peer);
    }
    return out;
  }

  // How good a pair's connection is: NVLinks count first, then peer access, then PCIe nearness.
  struct PeerRank {
    uint64_t nvlinks = 0;
    bool p2p_refused = false;
  };
  static PeerRank RankOf(const core::GpuPeer& peer) {
    PeerRank rank;
    rank.nvlinks = peer.nvlinks.value_or(0);
    if (peer.p2p) {
      rank.p2p_refused = peer.p2p->Refused().has_value();
    }
    return rank;
  }

  static std::string PeerText(const core::GpuPeer& peer) {
    std::string text = peer.path.value_or("?");
    if (peer.p2p && peer.p2p->read) text += ", p2p read " + *peer.p2p->read;
    return text;
  }

  // A pair of GPUs that lost NVLinks or peer access (or got them back). Pairs only one snapshot
  // has are the GPUs' own changes (gpu_added, gpu_removed).
  void DiffTopology() {
    auto before = PeersByPair(before_);
    auto after = PeersByPair(after_);
    for (const auto& [pair, old_peer] : before) {
      auto match = after.find(pair);
      if (match == after.end()) continue;
      const core::GpuPeer& new_peer = *match->second;
      PeerRank was = RankOf(*old_peer), now = RankOf(new_peer);
      // Unknown on either side is no change (NVML not asked, a call that failed).
      bool links_known = old_peer->path && new_peer.path;
      bool worse = (links_known && now.nvlinks < was.nvlinks) || (!was.p2p_refused && now.p2p_refused);
      bool better = (links_known && now.nvlinks > was.nvlinks) || (was.p2p_refused && !now.p2p_refused);
      if (!worse && !better) continue;
      Add(worse ? kind::kLinkDowntrained : kind::kLinkRestored, "topology.peers" + Item(pair), core::ToJson(*old_peer),
          core::ToJson(new_peer),
          fmt::format("GPUs {} and {}: {} -> {}", new_peer.a.value_or("?"), new_peer.b.value_or("?"),
                      PeerText(*old_peer), PeerText(new_peer)));
    }
  }

  // ---- gpus ----

  static std::map<std::string, const core::Gpu*> GpusByAddress(const std::vector<core::Gpu>& gpus) {
    std::map<std::string, const core::Gpu*> out;
    for (size_t i = 0; i < gpus.size(); ++i) {
      const core::Gpu& gpu = gpus[i];
      const std::optional<std::string>& address = gpu.pci_address;
      std::string key = address && !address->empty() ? core::ToLower(*address) : fmt::format("#{}", i);
      // A repeated address (a broken collector) keeps its first entry; the rest get a suffix.
      std::string unique = key;
      for (int n = 2; out.count(unique) != 0; ++n) unique = fmt::format("{}#{}", key, n);
      out.emplace(std::move(unique), &gpu);
    }
    return out;
  }

  static Json GpuBrief(const std::string& address, const core::Gpu& gpu) {
    Json brief = Json::object();
    brief["pci_address"] = address;
    if (gpu.vendor) brief["vendor"] = *gpu.vendor;
    if (gpu.name) brief["name"] = *gpu.name;
    if (gpu.device_id) brief["device_id"] = *gpu.device_id;
    if (const core::NvidiaGpu* nv = Nv(gpu)) {
      if (nv->uuid) brief["uuid"] = *nv->uuid;
      if (nv->serial) brief["serial"] = *nv->serial;
    }
    if (const core::AmdGpu* amd = Amd(gpu); amd && amd->serial_number) brief["serial"] = *amd->serial_number;
    return brief;
  }

  static std::string GpuLabel(const std::string& address, const core::Gpu& gpu) {
    std::optional<std::string> name = gpu.name ? gpu.name : gpu.pci_name;
    return name ? fmt::format("GPU {} ({})", address, *name) : fmt::format("GPU {}", address);
  }

  void DiffGpus() {
    if (!before_.gpus || !after_.gpus) return;  // not collected on one side
    auto before = GpusByAddress(*before_.gpus);
    auto after = GpusByAddress(*after_.gpus);
    for (const auto& [address, gpu] : before) {
      std::string path = "gpus" + Item(address);
      auto match = after.find(address);
      if (match == after.end()) {
        Add(kind::kGpuRemoved, path, GpuBrief(address, *gpu), Json(), GpuLabel(address, *gpu) + " is gone");
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

  void DiffGpu(const std::string& address, const std::string& path, const core::Gpu& before, const core::Gpu& after) {
    DiffGpuIdentity(address, path, before, after);
    DiffGpuDriver(address, path, before, after);
    DiffLink(address, path, before, after);
    for (const Counter& counter : kGpuCounters) {
      DiffCounter(address, path, counter, before, after);
    }
    DiffAmdRas(address, path, before, after);
    DiffGpuNvidiaDriver(address, path, before, after);
  }

  void DiffGpuIdentity(const std::string& address, const std::string& path, const core::Gpu& before,
                       const core::Gpu& after) {
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
    if (before.name && after.name && *before.name != *after.name) {
      bool old_from_ids = before.pci_name == before.name;
      bool new_from_ids = after.pci_name == after.name;
      if (old_from_ids == new_from_ids) note("name", *before.name, *after.name);
    }
    for (const GpuField& field : kGpuIdentityFields) {
      std::optional<Json> old_value = field.get(before);
      std::optional<Json> new_value = field.get(after);
      if (!old_value || !new_value || *old_value == *new_value) continue;
      note(field.path, *old_value, *new_value);
    }
    if (details.empty()) return;
    Add(kind::kGpuChanged, path, std::move(old_values), std::move(new_values),
        fmt::format("GPU {}: {}", address, details));
  }

  void DiffGpuDriver(const std::string& address, const std::string& path, const core::Gpu& before,
                     const core::Gpu& after) {
    // An absent driver means no driver is bound (docs/snapshot-schema.md), so it compares.
    if (before.driver == after.driver) return;
    Add(kind::kDriverChanged, path + ".driver", before.driver ? Json(*before.driver) : Json(),
        after.driver ? Json(*after.driver) : Json(),
        fmt::format("GPU {} driver {} -> {}", address, before.driver.value_or("(none)"),
                    after.driver.value_or("(none)")));
  }

  static std::string LinkText(std::optional<double> width, std::optional<double> speed, bool show_width,
                              bool show_speed) {
    std::string out;
    if (show_width && width) out = fmt::format("x{}", *width);
    if (show_speed && speed) {
      if (!out.empty()) out += ' ';
      out += fmt::format("{} GT/s", *speed);
    }
    return out;
  }

  void DiffLink(const std::string& address, const std::string& path, const core::Gpu& before, const core::Gpu& after) {
    if (!before.link || !after.link) return;
    const core::PciLink& old_link = *before.link;
    const core::PciLink& new_link = *after.link;
    auto old_width = Num(old_link.current_width);
    auto new_width = Num(new_link.current_width);
    auto old_speed = Num(old_link.current_speed_gts);
    auto new_speed = Num(new_link.current_speed_gts);
    bool widths = old_width && new_width;
    bool speeds = old_speed && new_speed;
    bool width_fell = widths && *new_width < *old_width;
    bool width_rose = widths && *new_width > *old_width;
    bool speed_fell = speeds && *new_speed < *old_speed;
    bool speed_rose = speeds && *new_speed > *old_speed;
    if (!width_fell && !width_rose && !speed_fell && !speed_rose) return;
    bool show_width = width_fell || width_rose;
    bool show_speed = speed_fell || speed_rose;
    std::string summary =
        fmt::format("GPU {} link {} -> {}", address, LinkText(old_width, old_speed, show_width, show_speed),
                    LinkText(new_width, new_speed, show_width, show_speed));
    bool downtrained = width_fell || speed_fell;
    if (downtrained && !width_fell) {
      // GPUs drop the link speed on their own when idle (NVIDIA to 2.5 GT/s); width is stable.
      summary += " (the speed also drops when the GPU idles: compare under load)";
    }
    auto new_max_width = Num(new_link.max_width);
    auto new_max_speed = Num(new_link.max_speed_gts);
    if (downtrained && ((new_max_width && new_width && *new_max_width > *new_width) ||
                        (new_max_speed && new_speed && *new_max_speed > *new_speed))) {
      summary += fmt::format(", below its maximum {}", LinkText(new_max_width, new_max_speed, true, true));
    }
    Add(downtrained ? kind::kLinkDowntrained : kind::kLinkRestored, path + ".link", core::ToJson(old_link),
        core::ToJson(new_link), std::move(summary));
  }

  static std::optional<double> CounterValue(const Json& j) {
    if (j.is_boolean()) return j.get<bool>() ? 1.0 : 0.0;
    if (j.is_number()) return j.get<double>();
    return std::nullopt;
  }

  void DiffCounter(const std::string& address, const std::string& gpu_path, const Counter& counter,
                   const core::Gpu& before, const core::Gpu& after) {
    std::optional<Json> old_value = counter.field.get(before);
    std::optional<Json> new_value = counter.field.get(after);
    if (!old_value || !new_value) return;
    auto old_count = CounterValue(*old_value);
    auto new_count = CounterValue(*new_value);
    // A counter that went down was reset (driver reload, reboot): not a change.
    if (!old_count || !new_count || !(*new_count > *old_count)) return;
    Add(counter.kind, gpu_path + "." + counter.field.path, *old_value, *new_value,
        fmt::format("GPU {} {} {} -> {}", address, counter.label, Text(*old_value), Text(*new_value)));
  }

  void DiffAmdRas(const std::string& address, const std::string& path, const core::Gpu& before,
                  const core::Gpu& after) {
    const core::AmdGpu* old_amd = Amd(before);
    const core::AmdGpu* new_amd = Amd(after);
    if (!old_amd || !new_amd || !old_amd->ras || !new_amd->ras) return;
    for (const auto& [block, counts] : *new_amd->ras) {
      auto old_block = old_amd->ras->find(block);
      if (old_block == old_amd->ras->end()) continue;
      std::string field = "amd.ras" + Key(block);
      for (const char* which : {"ue", "ce"}) {
        bool ue = std::string_view(which) == "ue";
        const std::optional<uint64_t>& old_count = ue ? old_block->second.ue : old_block->second.ce;
        const std::optional<uint64_t>& new_count = ue ? counts.ue : counts.ce;
        if (!old_count || !new_count || !(*new_count > *old_count)) continue;
        Add(kind::kEccErrorsIncreased, path + "." + field + "." + which, *old_count, *new_count,
            fmt::format("GPU {} RAS {} {} errors {} -> {}", address, block, ue ? "uncorrectable" : "correctable",
                        *old_count, *new_count));
      }
    }
  }

  // Per-GPU copies of the NVIDIA driver version, used only when the snapshot has no
  // software.nvidia section; reported once per distinct change.
  void DiffGpuNvidiaDriver(const std::string& address, const std::string& path, const core::Gpu& before,
                           const core::Gpu& after) {
    if (SoftwareNvidia(before_) && SoftwareNvidia(after_)) return;
    const core::NvidiaGpu* old_nv = Nv(before);
    const core::NvidiaGpu* new_nv = Nv(after);
    if (!old_nv || !new_nv) return;
    struct Field {
      const char* name;
      const std::optional<std::string> core::NvidiaGpu::*member;
      const char* label;
    };
    for (const Field& field :
         {Field{"driver_version", &core::NvidiaGpu::driver_version, "NVIDIA driver"},
          Field{"cuda_driver_version", &core::NvidiaGpu::cuda_driver_version, "CUDA driver API"}}) {
      const std::optional<std::string>& old_value = old_nv->*field.member;
      const std::optional<std::string>& new_value = new_nv->*field.member;
      if (!old_value || !new_value || *old_value == *new_value) continue;
      std::string key = fmt::format("{}:{}:{}", field.name, *old_value, *new_value);
      if (!reported_gpu_driver_changes_.insert(key).second) continue;
      Add(kind::kDriverChanged, fmt::format("{}.nvidia.{}", path, field.name), *old_value, *new_value,
          fmt::format("{} {} -> {} (GPU {})", field.label, *old_value, *new_value, address));
    }
  }

  // ---- host ----

  static const core::Host* HostOf(const core::Snapshot& s) { return s.host ? &*s.host : nullptr; }

  void DiffHostValue(std::string_view path, std::string_view label, std::optional<Json> (*get)(const core::Host&)) {
    const core::Host* old_host = HostOf(before_);
    const core::Host* new_host = HostOf(after_);
    if (!old_host || !new_host) return;
    std::optional<Json> old_value = get(*old_host);
    std::optional<Json> new_value = get(*new_host);
    if (!old_value || !new_value || *old_value == *new_value) return;
    Add(kind::kHostChanged, std::string(path), *old_value, *new_value,
        fmt::format("{} {} -> {}", label, Text(*old_value), Text(*new_value)));
  }

  static std::string FlagText(const std::string& name, const std::optional<std::string>& value) {
    if (!value || value->empty()) return name;
    return fmt::format("{}={}", name, *value);
  }

  static Json FlagJson(const std::optional<std::string>& value) { return value ? Json(*value) : Json(true); }

  void DiffHost() {
    const core::Host* old_host = HostOf(before_);
    const core::Host* new_host = HostOf(after_);
    if (!old_host || !new_host) return;
    if (old_host->kernel && new_host->kernel && old_host->kernel->release && new_host->kernel->release &&
        *old_host->kernel->release != *new_host->kernel->release) {
      Add(kind::kKernelChanged, "host.kernel.release", *old_host->kernel->release, *new_host->kernel->release,
          fmt::format("kernel {} -> {}", *old_host->kernel->release, *new_host->kernel->release));
    }
    DiffHostValue("host.hostname", "hostname", [](const core::Host& h) { return JsonOf(h.hostname); });
    bool pretty = old_host->os && old_host->os->pretty_name && new_host->os && new_host->os->pretty_name;
    if (pretty) {
      DiffHostValue("host.os.pretty_name", "OS",
                    [](const core::Host& h) { return h.os ? JsonOf(h.os->pretty_name) : std::nullopt; });
    } else {
      DiffHostValue("host.os.version_id", "OS version",
                    [](const core::Host& h) { return h.os ? JsonOf(h.os->version_id) : std::nullopt; });
    }
    DiffHostValue("host.cpu.model", "CPU",
                  [](const core::Host& h) { return h.cpu ? JsonOf(h.cpu->model) : std::nullopt; });
    DiffHostValue("host.cpu.logical_cpus", "logical CPUs",
                  [](const core::Host& h) { return h.cpu ? JsonOf(h.cpu->logical_cpus) : std::nullopt; });
    DiffHostValue("host.iommu.enabled", "IOMMU enabled",
                  [](const core::Host& h) { return h.iommu ? JsonOf(h.iommu->enabled) : std::nullopt; });
    DiffHostValue("host.iommu.groups", "IOMMU groups",
                  [](const core::Host& h) { return h.iommu ? JsonOf(h.iommu->groups) : std::nullopt; });
    DiffHostValue("host.virtualization.hypervisor", "hypervisor", [](const core::Host& h) {
      return h.virtualization ? JsonOf(h.virtualization->hypervisor) : std::nullopt;
    });
    DiffHostValue("host.virtualization.container", "container", [](const core::Host& h) {
      return h.virtualization ? JsonOf(h.virtualization->container) : std::nullopt;
    });
    DiffMemoryTotal(*old_host, *new_host);
    DiffCmdline(*old_host, *new_host);
  }

  void DiffMemoryTotal(const core::Host& before, const core::Host& after) {
    if (!before.memory || !after.memory) return;
    auto old_bytes = before.memory->total_bytes;
    auto new_bytes = after.memory->total_bytes;
    if (!old_bytes || !new_bytes) return;
    // MemTotal moves by a few MiB between kernels (reserved memory); a lost DIMM or a changed
    // memory limit moves it by far more than 1%.
    double old_total = static_cast<double>(*old_bytes), new_total = static_cast<double>(*new_bytes);
    if (std::fabs(new_total - old_total) <= 0.01 * std::max(old_total, new_total)) return;
    Add(kind::kHostChanged, "host.memory.total_bytes", *old_bytes, *new_bytes,
        fmt::format("memory total {} -> {}", GiB(old_total), GiB(new_total)));
  }

  void DiffCmdline(const core::Host& before, const core::Host& after) {
    if (!before.cmdline || !after.cmdline || !before.cmdline->flags || !after.cmdline->flags) return;
    const auto& old_flags = *before.cmdline->flags;
    const auto& new_flags = *after.cmdline->flags;
    for (const auto& [name, value] : old_flags) {
      std::string path = "host.cmdline.flags" + Key(name);
      auto match = new_flags.find(name);
      if (match == new_flags.end()) {
        Add(kind::kHostChanged, path, FlagJson(value), Json(),
            fmt::format("kernel command line -{}", FlagText(name, value)));
      } else if (match->second != value) {
        Add(kind::kHostChanged, path, FlagJson(value), FlagJson(match->second),
            fmt::format("kernel command line {} -> {}", FlagText(name, value), FlagText(name, match->second)));
      }
    }
    for (const auto& [name, value] : new_flags) {
      if (old_flags.count(name) != 0) continue;
      Add(kind::kHostChanged, "host.cmdline.flags" + Key(name), Json(), FlagJson(value),
          fmt::format("kernel command line +{}", FlagText(name, value)));
    }
  }

  // ---- software ----

  static const core::Software* SoftwareOf(const core::Snapshot& s) { return s.software ? &*s.software : nullptr; }
  static const core::NvidiaSoftware* SoftwareNvidia(const core::Snapshot& s) {
    return s.software && s.software->nvidia ? &*s.software->nvidia : nullptr;
  }

  void DiffSoftware() {
    const core::Software* old_sw = SoftwareOf(before_);
    const core::Software* new_sw = SoftwareOf(after_);
    if (!old_sw || !new_sw) return;
    DiffKernelModules(*old_sw, *new_sw);
    DiffNvidiaDriver();
    if (old_sw->packages && new_sw->packages) {
      DiffComponents(IndexBy(
                         *old_sw->packages, [](const core::Package& p) { return p.name; }, Identity),
                     IndexBy(
                         *new_sw->packages, [](const core::Package& p) { return p.name; }, Identity),
                     "software.packages", [](const std::string& name) { return StackLabel(name) + " " + name; });
    }
    if (old_sw->libraries && new_sw->libraries) {
      auto name = [](const core::GpuLibrary& l) { return l.name; };
      DiffComponents(IndexBy(*old_sw->libraries, name, Identity), IndexBy(*new_sw->libraries, name, Identity),
                     "software.libraries", [](const std::string& n) { return "library " + n; });
    }
    // The AMD probe's ROCm installations (collect/snapshot.cc MergeVendorSection).
    const core::Installations* old_rocm = old_sw->amd && old_sw->amd->rocm ? &*old_sw->amd->rocm : nullptr;
    const core::Installations* new_rocm = new_sw->amd && new_sw->amd->rocm ? &*new_sw->amd->rocm : nullptr;
    DiffInstallations(old_rocm, new_rocm, "software.amd.rocm.installations", "ROCm installation ");
    DiffInstallations(old_sw->cuda ? &*old_sw->cuda : nullptr, new_sw->cuda ? &*new_sw->cuda : nullptr,
                      "software.cuda.installations", "CUDA installation ");
    DiffPython(*old_sw, *new_sw);
    DiffToolchain(*old_sw, *new_sw);
  }

  // Compilers and tools by path (the same nvcc in two CUDA toolkits is two entries); the C and
  // C++ runtimes by their versions.
  void DiffToolchain(const core::Software& before, const core::Software& after) {
    auto path = [](const core::Compiler& c) { return c.path; };
    if (before.compilers && after.compilers) {
      DiffComponents(IndexBy(*before.compilers, path, Identity), IndexBy(*after.compilers, path, Identity),
                     "software.compilers", [](const std::string& p) { return "compiler " + p; });
    }
    if (before.tools && after.tools) {
      DiffComponents(IndexBy(*before.tools, path, Identity), IndexBy(*after.tools, path, Identity), "software.tools",
                     [](const std::string& p) { return "tool " + p; });
    }
    if (before.glibc && after.glibc) {
      DiffVersion(before.glibc->version, after.glibc->version, "software.glibc.version", "glibc");
    }
    if (before.libstdcxx && after.libstdcxx) {
      DiffVersion(before.libstdcxx->glibcxx, after.libstdcxx->glibcxx, "software.libstdcxx.glibcxx", "libstdc++");
    }
  }

  void DiffVersion(const std::optional<std::string>& before, const std::optional<std::string>& after, std::string path,
                   std::string_view label) {
    if (!before || !after || *before == *after) return;
    Add(kind::kComponentVersionChanged, std::move(path), *before, *after,
        fmt::format("{} {} -> {}", label, *before, *after));
  }

  void DiffInstallations(const core::Installations* before, const core::Installations* after, const std::string& path,
                         const std::string& label) {
    if (!before || !after || !before->installations || !after->installations) return;
    auto key = [](const core::Installation& i) { return i.path; };
    DiffComponents(IndexBy(*before->installations, key, Identity), IndexBy(*after->installations, key, Identity), path,
                   [label](const std::string& p) { return label + p; });
  }

  void DiffKernelModules(const core::Software& before, const core::Software& after) {
    if (!before.kernel_modules || !after.kernel_modules) return;
    const auto& old_modules = *before.kernel_modules;
    const auto& new_modules = *after.kernel_modules;
    for (const auto& [name, old_module] : old_modules) {
      std::string path = "software.kernel_modules" + Key(name);
      auto match = new_modules.find(name);
      if (match == new_modules.end()) {
        Add(kind::kDriverChanged, path, core::ToJson(old_module), Json(),
            fmt::format("kernel module {} {} is gone", name, Text(old_module.version)));
        continue;
      }
      const core::KernelModule& new_module = match->second;
      if (old_module.version && new_module.version && *old_module.version != *new_module.version) {
        Add(kind::kDriverChanged, path + ".version", *old_module.version, *new_module.version,
            fmt::format("kernel module {} {} -> {}", name, *old_module.version, *new_module.version));
        continue;
      }
      // Same version string, different source hash: a rebuilt or patched module.
      if (old_module.srcversion && new_module.srcversion && *old_module.srcversion != *new_module.srcversion) {
        Add(kind::kDriverChanged, path + ".srcversion", *old_module.srcversion, *new_module.srcversion,
            fmt::format("kernel module {} rebuilt from other sources (srcversion {} -> {})", name,
                        *old_module.srcversion, *new_module.srcversion));
      }
    }
    for (const auto& [name, new_module] : new_modules) {
      if (old_modules.count(name) != 0) continue;
      Add(kind::kDriverChanged, "software.kernel_modules" + Key(name), Json(), core::ToJson(new_module),
          fmt::format("kernel module {} {} appeared", name, Text(new_module.version)));
    }
  }

  void DiffNvidiaDriver() {
    const core::NvidiaSoftware* old_nvidia = SoftwareNvidia(before_);
    const core::NvidiaSoftware* new_nvidia = SoftwareNvidia(after_);
    if (!old_nvidia || !new_nvidia) return;
    if (old_nvidia->driver_version && new_nvidia->driver_version &&
        *old_nvidia->driver_version != *new_nvidia->driver_version) {
      Add(kind::kDriverChanged, "software.nvidia.driver_version", *old_nvidia->driver_version,
          *new_nvidia->driver_version,
          fmt::format("NVIDIA driver {} -> {}", *old_nvidia->driver_version, *new_nvidia->driver_version));
    }
    if (old_nvidia->cuda_driver_version && new_nvidia->cuda_driver_version &&
        *old_nvidia->cuda_driver_version != *new_nvidia->cuda_driver_version) {
      Add(kind::kDriverChanged, "software.nvidia.cuda_driver_version", *old_nvidia->cuda_driver_version,
          *new_nvidia->cuda_driver_version,
          fmt::format("CUDA driver API {} -> {}", *old_nvidia->cuda_driver_version, *new_nvidia->cuda_driver_version));
    }
  }

  /// Added, removed and re-versioned entries of a keyed list.
  template <typename Label>
  void DiffComponents(const Entries& old_entries, const Entries& new_entries, const std::string& base_path, Label label,
                      const std::set<std::string>& skip = {}) {
    auto display = [&](const std::vector<Component>& entries) { return label(entries.front().display_key); };
    for (const auto& [key, old_list] : old_entries) {
      if (skip.count(key) != 0) continue;
      std::string path = base_path + Item(key);
      auto match = new_entries.find(key);
      if (match == new_entries.end()) {
        auto version = Versions(old_list);
        Add(kind::kComponentRemoved, path, ComponentValue(old_list), Json(),
            version ? fmt::format("{} {} removed", display(old_list), *version)
                    : fmt::format("{} removed", display(old_list)));
        continue;
      }
      auto old_version = Versions(old_list);
      auto new_version = Versions(match->second);
      if (!old_version || !new_version || *old_version == *new_version) continue;
      Add(kind::kComponentVersionChanged, path, *old_version, *new_version,
          fmt::format("{} {} -> {}", display(old_list), *old_version, *new_version));
    }
    for (const auto& [key, new_list] : new_entries) {
      if (skip.count(key) != 0 || old_entries.count(key) != 0) continue;
      auto version = Versions(new_list);
      Add(kind::kComponentAdded, base_path + Item(key), Json(), ComponentValue(new_list),
          version ? fmt::format("{} {} added", display(new_list), *version)
                  : fmt::format("{} added", display(new_list)));
    }
  }

  void DiffPython(const core::Software& before, const core::Software& after) {
    if (!before.python || !after.python) return;
    const core::PythonSoftware& old_python = *before.python;
    const core::PythonSoftware& new_python = *after.python;
    const std::optional<core::TorchInstall>& old_torch = old_python.torch;
    const std::optional<core::TorchInstall>& new_torch = new_python.torch;
    // torch has its own section with more detail; do not report it twice.
    std::set<std::string> skip;
    if (old_torch || new_torch) skip.insert("torch");
    if (old_python.packages && new_python.packages) {
      auto name = [](const core::Package& p) { return p.name; };
      DiffComponents(
          IndexBy(*old_python.packages, name, PythonName), IndexBy(*new_python.packages, name, PythonName),
          "software.python.packages", [](const std::string& n) { return "Python package " + n; }, skip);
    }
    if (!old_torch && !new_torch) return;
    if (!old_torch || !new_torch) {
      const core::TorchInstall& present = old_torch ? *old_torch : *new_torch;
      Json version = present.version ? Json(*present.version) : Json();
      if (old_torch) {
        Add(kind::kComponentRemoved, "software.python.torch", version, Json(),
            fmt::format("PyTorch {} removed", Text(version)));
      } else {
        Add(kind::kComponentAdded, "software.python.torch", Json(), version,
            fmt::format("PyTorch {} added", Text(version)));
      }
      return;
    }
    struct Field {
      const char* name;
      std::optional<std::string> core::TorchInstall::*member;
      const char* label;
    };
    for (const Field& field : {Field{"version", &core::TorchInstall::version, "PyTorch"},
                               Field{"cuda", &core::TorchInstall::cuda, "PyTorch CUDA"},
                               Field{"hip", &core::TorchInstall::hip, "PyTorch HIP"}}) {
      const std::optional<std::string>& old_value = (*old_torch).*field.member;
      const std::optional<std::string>& new_value = (*new_torch).*field.member;
      if (!old_value || !new_value || *old_value == *new_value) continue;
      Add(kind::kComponentVersionChanged, std::string("software.python.torch.") + field.name, *old_value, *new_value,
          fmt::format("{} {} -> {}", field.label, *old_value, *new_value));
    }
  }

  // ---- kernel log ----

  /// Xid code -> (records, GPU addresses), from kernel_log.records[].xid.
  static std::map<uint64_t, std::pair<int64_t, std::set<std::string>>> XidCodes(
      const std::vector<core::KernelLogRecord>& records) {
    std::map<uint64_t, std::pair<int64_t, std::set<std::string>>> out;
    for (const core::KernelLogRecord& record : records) {
      if (!record.xid || !record.xid->code) continue;
      auto& [count, gpus] = out[*record.xid->code];
      ++count;
      if (record.xid->pci && !record.xid->pci->empty()) gpus.insert(*record.xid->pci);
    }
    return out;
  }

  void DiffKernelLog() {
    if (!before_.kernel_log || !after_.kernel_log) return;
    const core::KernelLog& old_log = *before_.kernel_log;
    const core::KernelLog& new_log = *after_.kernel_log;
    if (old_log.counts && new_log.counts) {
      for (const auto& [log_class, count] : *new_log.counts) {
        if (count == 0) continue;
        auto old_count = old_log.counts->find(log_class);
        if (old_count != old_log.counts->end() && old_count->second > 0) continue;
        Add(kind::kKernelLogNewClass, "kernel_log.counts" + Item(log_class),
            old_count != old_log.counts->end() ? Json(old_count->second) : Json(), count,
            fmt::format("kernel log: new {} records ({})", log_class, count));
      }
    }
    if (!old_log.records || !new_log.records) return;
    auto old_codes = XidCodes(*old_log.records);
    for (const auto& [code, seen] : XidCodes(*new_log.records)) {
      if (old_codes.count(code) != 0) continue;
      const auto& [count, gpus] = seen;
      std::string where;
      for (const std::string& gpu : gpus) where += (where.empty() ? "; GPU " : ", ") + gpu;
      Add(kind::kKernelLogNewClass, fmt::format("kernel_log.xid[{}]", code), Json(), count,
          fmt::format("kernel log: new Xid {} ({} record{}{})", code, count, count == 1 ? "" : "s", where));
    }
  }

  // ---- env ----

  void DiffEnv() {
    if (!before_.env || !after_.env || !before_.env->variables || !after_.env->variables) return;
    const auto& old_vars = *before_.env->variables;
    const auto& new_vars = *after_.env->variables;
    for (const auto& [name, value] : old_vars) {
      std::string path = "env.variables" + Key(name);
      auto match = new_vars.find(name);
      if (match == new_vars.end()) {
        Add(kind::kEnvRemoved, path, value, Json(), fmt::format("env {} removed (was {})", name, value));
      } else if (match->second != value) {
        Add(kind::kEnvChanged, path, value, match->second, fmt::format("env {} {} -> {}", name, value, match->second));
      }
    }
    for (const auto& [name, value] : new_vars) {
      if (old_vars.count(name) != 0) continue;
      Add(kind::kEnvAdded, "env.variables" + Key(name), Json(), value, fmt::format("env {}={} added", name, value));
    }
  }

  const core::Snapshot& before_;
  const core::Snapshot& after_;
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

std::vector<Change> DiffSnapshots(const core::Snapshot& before, const core::Snapshot& after) {
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
