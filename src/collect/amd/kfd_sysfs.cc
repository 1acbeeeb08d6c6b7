#include "collect/amd/kfd_sysfs.h"

#include <fmt/format.h>

#include <algorithm>

#include "collect/amd/problem_list.h"
#include "core/text.h"

namespace gputriage::amd {

namespace {

// A topology page is one 4 KiB sysfs page; more than this is not a properties file.
constexpr size_t kMaxPropertiesBytes = 64u << 10;

std::optional<uint64_t> DirIndex(const std::string& name) {
  if (name.empty() || name.size() > 6) return std::nullopt;
  return core::ParseU64(name, 10);
}

std::vector<std::pair<uint64_t, std::string>> NumericEntries(const std::vector<std::string>& names) {
  std::vector<std::pair<uint64_t, std::string>> out;
  for (const std::string& name : names) {
    if (std::optional<uint64_t> index = DirIndex(name)) out.emplace_back(*index, name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Reads and parses one properties file; nullopt (noted) when unreadable or without any line.
// With `keep_problems`, the problems of a usable file are left for the caller to note.
std::optional<KfdProperties> ReadProperties(AttributeReader& reader, const std::string& path, const std::string& item,
                                            bool keep_problems) {
  core::Result<std::string> text = reader.os().TryReadFile(path, kMaxPropertiesBytes);
  if (!text.ok()) {
    std::string why = reader.Reason(path, text.error());
    // amdkfd answers EPERM for GPUs outside the reader's device cgroup
    // (kfd_devcgroup_check_permission): a container without that GPU's /dev/dri node.
    if (why.find("Operation not permitted") != std::string::npos) {
      why += " (amdkfd hides GPUs outside this process's device cgroup)";
    }
    reader.Note(item, path, fmt::format("cannot read {}: {}", path, why));
    return std::nullopt;
  }
  KfdProperties props = ParseKfdProperties(*text);
  bool usable = !props.values.empty();
  if (!props.problems.empty() && !(usable && keep_problems)) {
    reader.Note(item, path, path + ": " + JoinProblems(props.problems));
  }
  if (!usable) return std::nullopt;
  return props;
}

void ReadIoLinks(AttributeReader& reader, uint64_t node, const std::string& node_dir, const std::string& node_item,
                 KfdTopology& out) {
  std::string dir = node_dir + "/io_links";
  std::optional<std::vector<std::string>> names = reader.ListDir(dir, node_item + ".io_links", Presence::kOptional);
  if (!names) return;
  for (const auto& [index, name] : NumericEntries(*names)) {
    std::string item = fmt::format("{}.io_links[{}]", node_item, index);
    std::optional<KfdProperties> props = ReadProperties(reader, dir + "/" + name + "/properties", item, false);
    if (!props) continue;
    out.io_links.push_back({node, index, SummarizeKfdIoLink(*props)});
  }
}

}  // namespace

void SetHex(core::Json& obj, const char* key, std::optional<uint64_t> value, int width) {
  if (value) obj[key] = fmt::format("0x{:0{}x}", *value, width);
}

KfdTopology ReadKfdTopology(AttributeReader& reader) {
  KfdTopology topology;
  const std::string nodes_dir(kKfdNodesDir);
  if (!reader.os().Exists("/sys/class/kfd")) return topology;
  std::optional<std::vector<std::string>> names = reader.ListDir(nodes_dir, "amd.kfd", Presence::kExpected);
  if (!names) return topology;
  topology.present = true;
  for (const auto& [node, name] : NumericEntries(*names)) {
    std::string dir = nodes_dir + "/" + name;
    std::string item = fmt::format("amd.kfd.nodes[{}]", node);
    std::string path = dir + "/properties";
    std::optional<KfdProperties> props = ReadProperties(reader, path, item, true);
    if (!props) continue;
    KfdNodeRecord record;
    record.node = node;
    record.properties = std::move(*props);
    record.properties_path = path;
    record.gpu_id = reader.ReadU64(dir + "/gpu_id", item + ".gpu_id", Presence::kExpected, 0xffffffffu);
    record.name = reader.ReadString(dir + "/name", item + ".name", Presence::kExpected);
    topology.nodes.push_back(std::move(record));
    ReadIoLinks(reader, node, dir, item, topology);
  }
  return topology;
}

core::Json KfdTopologyToJson(const KfdTopology& topology) {
  core::Json nodes = core::Json::array();
  for (const KfdNodeRecord& record : topology.nodes) {
    core::Json node = {{"node", record.node}};
    bool gpu = IsKfdGpuNode(record.properties);
    node["kind"] = gpu ? "gpu" : "cpu";
    core::SetIf(node, "gpu_id", record.gpu_id);
    core::SetIf(node, "name", record.name);
    if (gpu) {
      KfdGpuSummary summary = SummarizeKfdGpu(record.properties);
      core::SetIf(node, "gfx_arch", summary.gfx_arch);
      core::SetIf(node, "pci_address", summary.pci_address);
    }
    core::Json props = core::Json::object();
    for (const auto& [key, value] : record.properties.values) {
      // The two 64-bit identifiers exceed INT64_MAX half the time, which JSON readers and
      // SQLite mangle; as hex they also match amdgpu's sysfs unique_id.
      if (key == "hive_id" || key == "unique_id") {
        props[key] = fmt::format("0x{:016x}", value);
      } else {
        props[key] = value;
      }
    }
    node["properties"] = std::move(props);
    nodes.push_back(std::move(node));
  }
  core::Json links = core::Json::array();
  for (const KfdIoLinkRecord& record : topology.io_links) {
    const KfdIoLink& link = record.link;
    core::Json out = core::Json::object();
    out["from_node"] = link.node_from.value_or(record.node);
    core::SetIf(out, "to_node", link.node_to);
    if (link.type) {
      out["type"] = IoLinkTypeName(*link.type);
      out["type_id"] = *link.type;
    }
    core::SetIf(out, "weight", link.weight);
    core::SetIf(out, "min_latency_ns", link.min_latency_ns);
    core::SetIf(out, "max_latency_ns", link.max_latency_ns);
    core::SetIf(out, "min_bandwidth_mbs", link.min_bandwidth_mbs);
    core::SetIf(out, "max_bandwidth_mbs", link.max_bandwidth_mbs);
    SetHex(out, "flags", link.flags, 8);
    links.push_back(std::move(out));
  }
  return {{"nodes", std::move(nodes)}, {"io_links", std::move(links)}};
}

}  // namespace gputriage::amd
