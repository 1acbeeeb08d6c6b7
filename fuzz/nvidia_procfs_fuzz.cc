// Fuzz target for the /proc/driver/nvidia parsers (version and gpus/*/information files) and
// the PCI bus id normaliser. Invariants: no crash, and everything they return is valid UTF-8
// (serialising it as JSON must not throw).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "collect/nvidia/procfs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  namespace nv = gputriage::nvidia;

  nv::DriverVersionInfo version = nv::ParseVersionFile(text);
  nv::GpuInformation information = nv::ParseInformationFile(text);
  std::optional<std::string> bus = nv::NormalizePciBusId(text);

  nlohmann::json json;
  json["version_line"] = version.version_line;
  if (version.driver_version) json["driver_version"] = *version.driver_version;
  if (version.gcc_version) json["gcc"] = *version.gcc_version;
  json["problems"] = version.problems;
  for (const auto& [key, value] : information.fields) json["fields"][key] = value;
  json["info_problems"] = information.problems;
  if (bus) {
    json["bus"] = *bus;
    // A normalised address normalises to itself.
    if (nv::NormalizePciBusId(*bus) != bus) std::abort();
  }
  (void)json.dump();  // throws (and aborts the fuzzer) on invalid UTF-8
  return 0;
}
