// Fuzz target for the packed-bundle reader (`analyze FILE.tar.zst`, `report FILE.tar.zst`): the
// input is the archive's bytes, zstd-compressed or a plain tar, read by pack::ReadPackedBundle
// under small limits and then parsed as a bundle by core::BundleFromFiles, as `analyze` does.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pack/packed_bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  gputriage::pack::PackedBundleLimits limits{.max_members = 32, .max_total_bytes = 64u << 20};
  auto bundle = gputriage::pack::ReadPackedBundleModel(gputriage::pack::FromMemory(bytes), "fuzz.tar.zst", limits);
  (void)bundle;
  return 0;
}
