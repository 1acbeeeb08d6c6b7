// Fuzz target for the offload bundle readers (src/inspect/amd.h): the bytes are read as one
// bundle (plain or compressed) and as the content of a .hip_fatbin section, and the code object
// of every entry that looks like one is read, as `gputriage inspect` does. The readers'
// promises are checked: entries point into the input or into their own storage, an entry with
// an error has no bytes, an object with an error reports no kernels; and StreamHipFatbin (what
// `inspect` reads a file's section with, a bundle at a time) reads only inside the input and
// gives the same objects, origins and errors as ReadHipFatbin on the whole input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

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
  std::vector<CodeObject> whole = ReadHipFatbin(bytes, "fuzz", kDecompressLimit);
  for (const CodeObject& object : whole) {
    if (object.vendor != "amd") std::abort();
    if (object.error && (object.error->empty() || !object.kernels.empty())) std::abort();
  }
  RangeReader read = [bytes](uint64_t offset, size_t n, std::string* out) {
    if (offset > bytes.size() || n > bytes.size() - offset) std::abort();  // outside the input
    out->assign(bytes.substr(offset, n));
    return true;
  };
  size_t i = 0;
  StreamHipFatbin(
      read, size, "fuzz",
      [&](CodeObject&& object) {
        if (i >= whole.size()) std::abort();
        const CodeObject& same = whole[i++];
        if (object.origin != same.origin || object.error != same.error || object.target_id != same.target_id ||
            object.kernels.size() != same.kernels.size()) {
          std::abort();
        }
      },
      nullptr, kDecompressLimit);
  if (i != whole.size()) std::abort();
  return 0;
}
