// Reads the KFD topology (/sys/class/kfd/kfd/topology/nodes/N/{properties,name,gpu_id} and
// io_links/M/properties) through an AttributeReader; parsing is kfd_topology.h's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collect/amd/attribute_reader.h"
#include "collect/amd/kfd_topology.h"
#include "core/model.h"

namespace gputriage::amd {

inline constexpr std::string_view kKfdNodesDir = "/sys/class/kfd/kfd/topology/nodes";

/// One node whose properties file could be read.
struct KfdNodeRecord {
  uint64_t node = 0;
  /// gpu_id (0 for CPU nodes), nullopt when unreadable.
  std::optional<uint64_t> gpu_id;
  /// The node's `name`: the ASIC name for GPUs ("aldebaran", "ip discovery"), often empty
  /// for CPUs. Not a marketing name.
  std::optional<std::string> name;
  KfdProperties properties;
  /// The properties file's path as on the machine ("/sys/class/kfd/..."), for notes.
  std::string properties_path;
};

struct KfdIoLinkRecord {
  uint64_t node = 0;   ///< the directory it was read from (nodes/N/io_links/M)
  uint64_t index = 0;  ///< M
  KfdIoLink link;
};

struct KfdTopology {
  /// True when the nodes directory could be listed (amdkfd is loaded).
  bool present = false;
  /// Nodes in numeric order; nodes whose properties could not be read are left out (noted).
  std::vector<KfdNodeRecord> nodes;
  std::vector<KfdIoLinkRecord> io_links;
};

/// Reads the topology. A missing /sys/class/kfd is `present == false` without a note (no
/// amdkfd); every other failure is one note naming the path, except the `problems` of a node
/// properties file that still had usable lines: those stay in `properties.problems` for the
/// caller to report together with what it finds wrong with the values. Never fails.
KfdTopology ReadKfdTopology(AttributeReader& reader);

/// obj[key] = "0x" and `value` in hexadecimal, `width` digits at least; nothing when unset.
void SetHex(core::Json& obj, const char* key, std::optional<uint64_t> value, int width);

/// {"nodes": [...], "io_links": [...]} as in docs/snapshot-schema.md ("amd" probe).
core::Json KfdTopologyToJson(const KfdTopology& topology);

}  // namespace gputriage::amd
