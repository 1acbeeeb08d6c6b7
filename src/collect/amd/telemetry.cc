#include "collect/amd/telemetry.h"

#include "collect/amd/attribute_reader.h"

namespace gputriage::amd {

namespace {

std::optional<double> Number(const core::Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

AmdgpuSampler::AmdgpuSampler(const core::OsView& os) : os_(os) {
  core::Section scratch;
  AttributeReader reader(os_, scratch);
  devices_ = FindAmdgpuDevices(reader);
}

std::vector<core::TelemetrySample> AmdgpuSampler::Sample(int first_index) {
  std::vector<core::TelemetrySample> out;
  for (size_t i = 0; i < devices_.size(); ++i) {
    core::Section scratch;  // a sampler has nobody to tell about a missing sensor: the value stays empty
    AttributeReader reader(os_, scratch);
    core::Json a = ReadAmdgpuAttributes(reader, devices_[i].sysfs_dir, "telemetry");
    core::TelemetrySample s;
    s.device = first_index + static_cast<int>(i);
    if (auto temps = a.find("temperatures_c"); temps != a.end() && temps->is_object() && !temps->empty()) {
      // The edge sensor is the one older kernels call temp1; junction (hotspot) otherwise.
      for (const char* key : {"edge", "temp1", "junction"}) {
        if (auto t = Number(*temps, key)) {
          s.temperature_c = static_cast<int>(*t);
          break;
        }
      }
    }
    if (auto mw = Number(a, "power_mw")) s.power_w = *mw / 1000.0;
    if (auto clocks = a.find("clocks"); clocks != a.end() && clocks->is_object()) {
      if (auto mhz = Number(*clocks, "sclk_mhz")) s.sm_clock_mhz = static_cast<int>(*mhz);
      if (auto mhz = Number(*clocks, "mclk_mhz")) s.memory_clock_mhz = static_cast<int>(*mhz);
    }
    if (auto used = Number(a, "vram_used_bytes")) s.memory_used_mib = *used / (1 << 20);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gputriage::amd
