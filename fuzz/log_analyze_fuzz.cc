// Fuzz target for the log reader and the analysis of untrusted logs: the bytes are read as a
// log (plain, gzip or zstd, by their magic), every line goes through the built-in knowledge
// base's matcher and the general classifier, and the result is rendered as JSON, as
// `gputriage analyze` does.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "embedded_analyzer.h"
#include "kb/analysis.h"
#include "kb/knowledge_base.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gputriage::kb::Analyzer* analyzer = &EmbeddedAnalyzer();
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  gputriage::kb::Analysis a = analyzer->AnalyzeText(bytes, "fuzz", nullptr);
  (void)gputriage::kb::ToJson(a).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)gputriage::forensics::NormalizeLine(bytes.substr(0, 4096));
  return 0;
}
