// Fuzz target for the offload bundle readers (src/inspect/amd.h): the bytes are read as one
// bundle (plain or compressed) and as the content of a .hip_fatbin section, and the code object
// of every entry that looks like one is read, as `gputriage inspect` does. The readers'
// promises are checked: entries point into the input or into their own storage, an entry with
// an error has no bytes, an object with an error reports no kernels.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "inspect/amd.h"

using namespace gputriage::inspect;

namespace {

// libFuzzer's default RSS limit is 2 GiB; the readers' own limit (4 GiB) is for real files.
constexpr uint64_t kDecompressLimit = uint64_t{64} << 20;

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void CheckEntry(const BundleEntry& entry, std::string_view input) {
  if (entry.error && (entry.error->empty() || !entry.bytes.empty())) std::abort();
  if (entry.compressed != (entry.storage != nullptr)) std::abort();
  if (!Inside(entry.bytes, entry.storage ? std::string_view(*entry.storage) : input)) std::abort();
  if (LooksLikeAmdgpuElf(entry.bytes)) {
    CodeObject object = ReadAmdgpuCodeObject(entry.bytes, "fuzz");
    if (object.size != entry.bytes.size()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t consumed = 0;
  auto entries = ReadOffloadBundle(bytes, &consumed, kDecompressLimit);
  if (entries.ok()) {
    if (consumed > size) std::abort();
    for (const BundleEntry& entry : *entries) CheckEntry(entry, bytes);
  } else if (entries.error().message.empty()) {
    std::abort();
  }
  for (const CodeObject& object : ReadHipFatbin(bytes, "fuzz", kDecompressLimit)) {
    if (object.vendor != "amd") std::abort();
    if (object.error && (object.error->empty() || !object.kernels.empty())) std::abort();
  }
  return 0;
}
