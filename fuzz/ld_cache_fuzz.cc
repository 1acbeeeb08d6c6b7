// Fuzz target for the loader's text and binary inputs `libs` reads: /etc/ld.so.cache (bytes a
// root-owned file holds, but a container image can carry anything), `ld.so --help`'s output and
// the LD_AUDIT trace the traced program's processes append to. The first byte picks the parser.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "libs/ld_cache.h"
#include "libs/loader_config.h"
#include "libs/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto cache = gputriage::libs::ParseLdCache(text, "fuzz.cache");
      if (!cache.ok() && !cache.error().message.starts_with("fuzz.cache: ")) std::abort();
      if (cache.ok()) {
        for (size_t i = 0; i < cache->entries.size() && i < 64; ++i) {
          const auto& e = cache->entries[i];
          if (cache->Find(e.name).empty() && gputriage::libs::IsX8664Entry(e.flags)) std::abort();
        }
      }
      break;
    }
    case 1: {
      auto config = gputriage::libs::ParseLdSoHelp(text);
      if (config.ok()) {
        if (config->system_dirs.empty()) std::abort();
        (void)gputriage::libs::ExpandSearchPath(text.substr(0, 256), "/o", *config);
        (void)gputriage::libs::SubdirectoriesTried("/lib", *config);
      }
      break;
    }
    default: {
      size_t malformed = 0;
      auto events = gputriage::libs::ParseAuditTrace(text, &malformed);
      for (const auto& e : events) {
        if (e.kind != "search" && e.kind != "open") std::abort();
      }
      break;
    }
  }
  return 0;
}
