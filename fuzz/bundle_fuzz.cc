// Fuzz target for a crash bundle's files, parsed from memory by the same function ReadBundle uses
// (core::BundleFromFiles), then analysed as `analyze BUNDLE` does. The input holds the files in
// a fixed order (process.json, manifest.json, snapshot.json, repeat.json, stdout.tail,
// stderr.tail, kmsg.log), each as a 2-byte little-endian length and that many bytes (fewer at
// the end of the input); a length of 0xffff means the file is absent.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/bundle.h"
#include "embedded_analyzer.h"
#include "kb/analysis.h"
#include "kb/knowledge_base.h"

namespace {

constexpr const char* kNames[] = {"process.json", "manifest.json", "snapshot.json", "repeat.json",
                                  "stdout.tail",  "stderr.tail",   "kmsg.log"};

gputriage::core::BundleFileSet Split(std::string_view input) {
  gputriage::core::BundleFileSet files;
  for (const char* name : kNames) {
    if (input.size() < 2) break;
    size_t length = static_cast<uint8_t>(input[0]) | static_cast<size_t>(static_cast<uint8_t>(input[1])) << 8;
    input.remove_prefix(2);
    if (length == 0xffff) continue;
    length = std::min(length, input.size());
    files[name] = {.exists = true, .bytes = std::string(input.substr(0, length))};
    input.remove_prefix(length);
  }
  return files;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gputriage::kb::Analyzer* analyzer = &EmbeddedAnalyzer();
  auto bundle =
      gputriage::core::BundleFromFiles("fuzz", Split(std::string_view(reinterpret_cast<const char*>(data), size)));
  if (!bundle.ok()) return 0;
  analyzer->Begin("fuzz");
  analyzer->AddBundle(*bundle);
  gputriage::kb::Facts facts;
  if (bundle->snapshot) facts = gputriage::kb::FactsFromSnapshot(*bundle->snapshot);
  gputriage::kb::Analysis a = analyzer->Finish(bundle->snapshot ? &facts : nullptr);
  (void)gputriage::kb::ToJson(a).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (bundle->manifest) (void)gputriage::core::ToJson(*bundle->manifest).dump();
  (void)gputriage::core::ToJson(bundle->process).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
