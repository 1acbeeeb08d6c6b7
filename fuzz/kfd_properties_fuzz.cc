// Fuzz target for the KFD topology parsers (src/collect/amd/kfd_topology.h): the bytes are a
// node or io-link `properties` file. Every derived value is exercised, including the gfx
// target name of every parsed number, and the results are checked for the parser's promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "collect/amd/amdgpu_text.h"
#include "collect/amd/kfd_topology.h"

using namespace gputriage::amd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  KfdProperties props = ParseKfdProperties(text);
  if (props.values.empty() && props.problems.empty()) std::abort();  // an empty file says so
  for (const auto& [name, value] : props.values) {
    if (name.empty() || props.Get(name) != value) std::abort();  // names are unique
    if (auto arch = GfxArchName(value); arch && !arch->starts_with("gfx")) std::abort();
    (void)KfdPciAddress(value, value);
    (void)IoLinkTypeName(value);
  }
  if (IsKfdGpuNode(props)) {
    KfdGpuSummary gpu = SummarizeKfdGpu(props);
    if (gpu.compute_units && (!gpu.simd_count || *gpu.compute_units > *gpu.simd_count)) {
      std::abort();
    }
    if (gpu.wavefront_size && *gpu.wavefront_size != 32 && *gpu.wavefront_size != 64) std::abort();
  }
  (void)SummarizeKfdIoLink(props);
  // The same bytes as an amdgpu pp_dpm_* or RAS file: the other line parsers of this module.
  (void)ParseDpmLevels(text);
  (void)ParseRasErrorCount(text);
  return 0;
}
