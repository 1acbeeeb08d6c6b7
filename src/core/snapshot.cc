#include "core/snapshot.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "core/json_fields.h"

namespace gputriage::core {

std::string Gpu::Label() const {
  std::string best = name ? *name : pci_name ? *pci_name : "GPU";
  return fmt::format("{} ({})", pci_address.value_or("?"), best);
}

std::optional<uint64_t> Gpu::MemoryBytes() const {
  if (amd && amd->vram_total_bytes) return amd->vram_total_bytes;
  if (nvidia && nvidia->memory_total_bytes) return nvidia->memory_total_bytes;
  return std::nullopt;
}

std::optional<std::string> Environment::Get(std::string_view name) const {
  if (!variables) return std::nullopt;
  auto it = variables->find(std::string(name));
  if (it == variables->end()) return std::nullopt;
  return it->second;
}

const std::vector<Gpu>& Snapshot::GpuList() const {
  static const std::vector<Gpu> kNone;
  return gpus ? *gpus : kNone;
}

const TorchInstall* Snapshot::Torch() const {
  if (!software || !software->python || !software->python->torch) return nullptr;
  return &*software->python->torch;
}

std::optional<std::string> Snapshot::EnvValue(std::string_view name) const {
  return env ? env->Get(name) : std::nullopt;
}

std::string ProcessorOfTarget(std::string_view target_id) {
  return std::string(target_id.substr(0, target_id.find(':')));
}

std::vector<GpuArch> GpuArchitectures(const Snapshot& snapshot) {
  std::vector<GpuArch> out;
  for (const Gpu& gpu : snapshot.GpuList()) {
    GpuArch arch;
    arch.pci_address = gpu.pci_address.value_or("");
    if (gpu.gfx_arch && !gpu.gfx_arch->empty()) {
      arch.arch = ProcessorOfTarget(*gpu.gfx_arch);
      arch.target_id = *gpu.gfx_arch;
    }
    if (gpu.nvidia && gpu.nvidia->compute_capability) {
      std::string digits = *gpu.nvidia->compute_capability;
      digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
      arch.arch = "sm_" + digits;
      arch.target_id = arch.arch;
    }
    if (!arch.arch.empty()) out.push_back(std::move(arch));
  }
  return out;
}

Result<void> CheckSnapshotVersion(const Json& json, std::string_view source) {
  if (!json.is_object()) {
    return MakeError("{}: not a gputriage snapshot (a JSON {}, not an object)", source, json.type_name());
  }
  auto it = json.find("schema_version");
  if (it == json.end()) {
    return MakeError("{}: not a gputriage snapshot (no schema_version)", source);
  }
  if (!it->is_number_integer()) {
    return MakeError("{}: not a gputriage snapshot (schema_version is a {}, not an integer)", source, it->type_name());
  }
  // Unsigned first: a huge unsigned value must not wrap to a small signed one.
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT32_MAX}) {
    return MakeError(
        "{}: snapshot schema_version {} is newer than this gputriage (knows {}); "
        "upgrade gputriage",
        source, it->get<uint64_t>(), kSnapshotSchemaVersion);
  }
  int64_t version = it->get<int64_t>();
  if (version > kSnapshotSchemaVersion) {
    return MakeError(
        "{}: snapshot schema_version {} is newer than this gputriage (knows {}); "
        "upgrade gputriage",
        source, version, kSnapshotSchemaVersion);
  }
  if (version < 1) {
    return MakeError("{}: snapshot schema_version {} is not one gputriage writes", source, version);
  }
  return {};
}

Snapshot SnapshotFromJsonUnchecked(const Json& json) {
  Snapshot snapshot;
  std::vector<std::string> problems;
  json_fields::ReadValue(json, snapshot, json_fields::ReadProblems{&problems, ""});
  snapshot.read_problems = std::move(problems);
  return snapshot;
}

Result<Snapshot> SnapshotFromJson(const Json& json, std::string_view source) {
  if (Result<void> checked = CheckSnapshotVersion(json, source); !checked.ok()) {
    return checked.error();
  }
  return SnapshotFromJsonUnchecked(json);
}

Json ToJson(const Snapshot& snapshot) {
  Json out = json_fields::WriteValue(snapshot);
  // The live machine's snapshot says so with an explicit null.
  if (!snapshot.root) out["root"] = nullptr;
  return out;
}

Json ToJson(const PciLink& link) { return json_fields::WriteValue(link); }
Json ToJson(const GpuPeer& peer) { return json_fields::WriteValue(peer); }
Json ToJson(const KernelModule& module) { return json_fields::WriteValue(module); }
Json ToJson(const Package& package) { return json_fields::WriteValue(package); }
Json ToJson(const Installation& installation) { return json_fields::WriteValue(installation); }
Json ToJson(const Compiler& compiler) { return json_fields::WriteValue(compiler); }
Json ToJson(const GpuLibrary& library) { return json_fields::WriteValue(library); }

}  // namespace gputriage::core
