// Fuzz target for the C runtime and toolchain parsers (src/collect/elf_versions.h, c_runtime.h,
// toolchain.h): the bytes are a shared library from a captured tree (read through libelf), a
// libc.so.6 holding glibc's banner, or a compiler's `--version` output. The results are checked
// for the parsers' promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "collect/c_runtime.h"
#include "collect/elf_versions.h"
#include "collect/toolchain.h"
#include "core/text.h"

using namespace gputriage::collect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto names = ReadElfVersionDefinitions(std::string(bytes), "fuzz.so");
  if (!names.ok() && !names.error().message.starts_with("fuzz.so: ")) std::abort();  // errors name the input
  if (names.ok()) {
    for (std::string_view prefix : {"GLIBC_", "GLIBCXX_", "CXXABI_", "TOOL_"}) {
      auto highest = HighestVersion(*names, prefix);
      if (!highest) continue;
      if (!highest->starts_with(prefix)) std::abort();
      for (const std::string& name : *names) {
        std::string_view n = name;
        if (n.starts_with(prefix) && n.size() > prefix.size() && n[prefix.size()] >= '0' && n[prefix.size()] <= '9' &&
            gputriage::core::CompareDottedVersions(n.substr(prefix.size()), highest->substr(prefix.size())) > 0) {
          std::abort();  // nothing above the highest
        }
      }
    }
  }
  if (auto version = ParseGlibcBanner(bytes);
      version && version->find_first_not_of("0123456789.") != std::string::npos) {
    std::abort();
  }
  for (std::string_view tool : {"gcc", "g++-12", "clang++", "amdclang++", "nvcc", "hipcc", "cmake"}) {
    auto version = ParseToolVersion(tool, bytes);
    if (version && (version->version.empty() || version->line.empty())) std::abort();
  }
  std::string_view a = bytes.substr(0, size / 2), b = bytes.substr(size / 2);
  if (gputriage::core::CompareDottedVersions(a, b) != -gputriage::core::CompareDottedVersions(b, a)) std::abort();
  return 0;
}
