#include "collect/amd/kfd_topology.h"

#include <fmt/format.h>

#include <array>
#include <charconv>

#include "collect/amd/problem_list.h"
#include "core/text.h"

namespace gputriage::amd {

namespace {

// At most this many offending lines are quoted; the rest are counted, so a binary file
// cannot flood the notes.
// Kernel property names are short C identifiers; anything longer is not one.
constexpr size_t kMaxNameBytes = 64;

bool IsPropertyName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// The kernel prints %u / %llu: plain decimal digits, no sign, no 0x.
std::optional<uint64_t> ParseDecimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 10);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

// Why a non-empty line is not "name value", or nullopt when it is.
std::optional<std::string_view> LineProblem(const std::vector<std::string_view>& fields) {
  if (fields.size() != 2) return "expected \"name value\"";
  if (!IsPropertyName(fields[0])) return "not a property name";
  if (!ParseDecimal(fields[1])) return "value is not an unsigned 64-bit decimal";
  return std::nullopt;
}

bool Has(const std::vector<std::pair<std::string, uint64_t>>& values, std::string_view name) {
  for (const auto& [key, value] : values) {
    if (key == name) return true;
  }
  return false;
}

// `value` when it lies in [min, max]; otherwise nullopt and a problem naming the property.
std::optional<uint64_t> InRange(const KfdProperties& props, std::string_view name, uint64_t min, uint64_t max,
                                std::vector<std::string>& problems) {
  std::optional<uint64_t> value = props.Get(name);
  if (!value) return std::nullopt;
  if (*value < min || *value > max) {
    problems.push_back(fmt::format("{} {} is implausible (expected {}..{})", name, *value, min, max));
    return std::nullopt;
  }
  return value;
}

std::optional<uint64_t> NonZero(std::optional<uint64_t> value) {
  if (value && *value == 0) return std::nullopt;
  return value;
}

}  // namespace

std::optional<uint64_t> KfdProperties::Get(std::string_view name) const {
  for (const auto& [key, value] : values) {
    if (key == name) return value;
  }
  return std::nullopt;
}

KfdProperties ParseKfdProperties(std::string_view text) {
  KfdProperties props;
  ProblemList problems(props.problems);
  size_t line_number = 0;
  size_t duplicates = 0;
  for (std::string_view line : core::SplitLines(text)) {
    ++line_number;
    std::vector<std::string_view> fields = core::SplitWhitespace(line);
    if (fields.empty()) continue;
    if (auto why = LineProblem(fields)) {
      problems.Add(line_number, *why, line);
      continue;
    }
    if (Has(props.values, fields[0])) {
      ++duplicates;
      continue;
    }
    props.values.emplace_back(std::string(fields[0]), *ParseDecimal(fields[1]));
  }
  problems.Finish();
  if (duplicates > 0) {
    props.problems.push_back(
        fmt::format("{} repeated property name{} (first value kept)", duplicates, duplicates == 1 ? "" : "s"));
  }
  if (props.values.empty()) {
    props.problems.push_back(fmt::format("no \"name value\" line in {} bytes", text.size()));
  }
  return props;
}

std::optional<std::string> GfxArchName(uint64_t gfx_target_version) {
  uint64_t major = gfx_target_version / 10000;
  uint64_t minor = gfx_target_version / 100 % 100;
  uint64_t stepping = gfx_target_version % 100;
  if (major == 0 || major > 99 || minor > 15 || stepping > 15) return std::nullopt;
  return fmt::format("gfx{}{:x}{:x}", major, minor, stepping);
}

std::optional<std::string> KfdPciAddress(uint64_t domain, uint64_t location_id) {
  if (location_id > 0xffff || domain > 0xffffffff) return std::nullopt;
  if (location_id == 0 && domain == 0) return std::nullopt;
  uint64_t bus = location_id >> 8;
  uint64_t device = (location_id >> 3) & 0x1f;
  uint64_t function = location_id & 0x7;
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

std::string_view IoLinkTypeName(uint64_t type) {
  // CRAT_IOLINK_TYPE_* from drivers/gpu/drm/amd/amdkfd/kfd_crat.h, indexed by value.
  static constexpr std::array<std::string_view, 17> kNames = {
      "undefined",  "hypertransport", "pcie", "amba", "mipi", "qpi",           "reserved",   "reserved", "rapidio",
      "infiniband", "reserved",       "xgmi", "xgop", "gz",   "ethernet_rdma", "rdma_other", "other"};
  if (type < kNames.size()) return kNames[type];
  return "unknown";
}

bool IsKfdGpuNode(const KfdProperties& props) {
  std::optional<uint64_t> simd = props.Get("simd_count");
  return simd && *simd > 0;
}

KfdGpuSummary SummarizeKfdGpu(const KfdProperties& props) {
  KfdGpuSummary out;
  std::vector<std::string>& problems = out.problems;

  out.gfx_target_version = props.Get("gfx_target_version");
  if (!out.gfx_target_version) {
    problems.push_back("no gfx_target_version line (older kernels do not print it)");
  } else if (*out.gfx_target_version == 0) {
    problems.push_back("gfx_target_version is 0 on a node with SIMDs");
    out.gfx_target_version.reset();
  } else {
    out.gfx_arch = GfxArchName(*out.gfx_target_version);
    if (!out.gfx_arch) {
      problems.push_back(fmt::format("gfx_target_version {} names no gfx target", *out.gfx_target_version));
      out.gfx_target_version.reset();
    }
  }

  // Bounds are generous multiples of the largest parts shipped (MI300X: 1216 SIMDs, 4 per CU,
  // 8 XCCs, 64 KiB LDS; MI355X: 160 KiB LDS); beyond them the file is damaged.
  out.simd_count = InRange(props, "simd_count", 1, 1u << 20, problems);
  out.simd_per_cu = InRange(props, "simd_per_cu", 1, 16, problems);
  if (out.simd_count && out.simd_per_cu) {
    if (*out.simd_count % *out.simd_per_cu == 0) {
      out.compute_units = *out.simd_count / *out.simd_per_cu;
    } else {
      problems.push_back(
          fmt::format("simd_count {} is not a multiple of simd_per_cu {}", *out.simd_count, *out.simd_per_cu));
    }
  }
  if (std::optional<uint64_t> wave = props.Get("wave_front_size")) {
    if (*wave == 32 || *wave == 64) {
      out.wavefront_size = wave;
    } else {
      problems.push_back(fmt::format("wave_front_size {} is neither 32 nor 64", *wave));
    }
  }
  out.max_waves_per_simd = InRange(props, "max_waves_per_simd", 1, 64, problems);
  out.lds_size_kb = InRange(props, "lds_size_in_kb", 1, 4096, problems);
  out.num_xcc = InRange(props, "num_xcc", 1, 64, problems);
  out.max_engine_clk_mhz = InRange(props, "max_engine_clk_fcompute", 1, 20000, problems);
  out.vendor_id = InRange(props, "vendor_id", 1, 0xffff, problems);
  out.device_id = InRange(props, "device_id", 1, 0xffff, problems);
  // Render minors start at 128; 0 is what kernels print when the node has no render node.
  if (NonZero(props.Get("drm_render_minor"))) {
    out.drm_render_minor = InRange(props, "drm_render_minor", 1, 1u << 20, problems);
  }
  out.hive_id = NonZero(props.Get("hive_id"));
  out.unique_id = NonZero(props.Get("unique_id"));

  std::optional<uint64_t> location = props.Get("location_id");
  std::optional<uint64_t> domain = props.Get("domain");
  if (!location) {
    problems.push_back("no location_id line: PCI address unknown");
  } else {
    // Older kernels print no `domain` line; their GPUs are taken to sit in PCI domain 0.
    out.pci_address = KfdPciAddress(domain.value_or(0), *location);
    if (!out.pci_address) {
      problems.push_back(fmt::format("domain {} location_id {} is no PCI address", domain.value_or(0), *location));
    }
  }
  return out;
}

KfdIoLink SummarizeKfdIoLink(const KfdProperties& props) {
  KfdIoLink link;
  link.type = props.Get("type");
  link.node_from = props.Get("node_from");
  link.node_to = props.Get("node_to");
  link.weight = props.Get("weight");
  link.min_latency_ns = NonZero(props.Get("min_latency"));
  link.max_latency_ns = NonZero(props.Get("max_latency"));
  link.min_bandwidth_mbs = NonZero(props.Get("min_bandwidth"));
  link.max_bandwidth_mbs = NonZero(props.Get("max_bandwidth"));
  link.flags = props.Get("flags");
  return link;
}

}  // namespace gputriage::amd
