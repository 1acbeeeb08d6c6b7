// Pure parsers for the text files the NVIDIA kernel module publishes under /proc/driver/nvidia.
// They take the bytes of a file (never a path), so tests and the fuzzer feed memory, and they
// never fail: what looks wrong is listed in `problems` for the caller to report with the path.
//
// Formats handled (all seen in real captures, see tests/fixtures/nvidia/):
//   version      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.130  Wed Mar 21 ..."
//                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release
//                 Build  (builder@host)  date"
//                "GCC version:  gcc version 15.3.0 (GCC) "
//   information  "Model: \t\t NVIDIA H200" ... "Bus Location: \t 0000:00:06.0" ...
//                ("Key:<tabs/spaces>value", first ':' separates; values may contain ':').
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gputriage::nvidia {

/// What /proc/driver/nvidia/version says about the loaded kernel module.
struct DriverVersionInfo {
  /// The "NVRM version:" line without surrounding whitespace (valid UTF-8); empty when absent.
  std::string version_line;
  /// "580.159.04"; nullopt when no version-like token follows "Kernel Module".
  std::optional<std::string> driver_version;
  /// "open" for the open kernel module ("Open Kernel Module"), else "proprietary".
  std::optional<std::string> kernel_module;
  /// The CPU architecture the module was built for ("x86_64", "aarch64").
  std::optional<std::string> arch;
  /// The text after "GCC version:" ("gcc version 15.3.0 (GCC)").
  std::optional<std::string> gcc_version;
  /// Human-readable reasons the text looked wrong ("no 'NVRM version:' line").
  std::vector<std::string> problems;
};

/// Parses the content of /proc/driver/nvidia/version. Never fails; see `problems`.
DriverVersionInfo ParseVersionFile(std::string_view text);

/// One /proc/driver/nvidia/gpus/<pci>/information file.
struct GpuInformation {
  /// Every "Key: value" line in file order, key and value trimmed and made valid UTF-8.
  std::vector<std::pair<std::string, std::string>> fields;
  /// Typed views of the well-known keys. The driver's placeholders for "could not read"
  /// ("Unknown" model, "GPU-????????-..." UUID, "??.??.??.??.??" BIOS) read as nullopt.
  std::optional<std::string> model;
  std::optional<std::string> uuid;
  std::optional<std::string> video_bios;
  std::optional<std::string> bus_type;
  std::optional<std::string> bus_location;
  std::optional<std::string> gpu_firmware;
  std::optional<uint64_t> irq;
  std::optional<uint64_t> dma_size_bits;
  std::optional<uint64_t> dma_mask;
  std::optional<uint64_t> device_minor;
  /// "GPU Excluded" (older drivers: "Blacklisted"): true for "Yes".
  std::optional<bool> excluded;
  /// Reasons the text looked wrong: control bytes, lines without ':', missing keys, no final
  /// newline. Each names line numbers or keys, not the path (the caller knows the path).
  std::vector<std::string> problems;
};

/// Parses the content of an information file. Never fails; see `problems`.
GpuInformation ParseInformationFile(std::string_view text);

/// "0000:00:06.0" (4-digit lower-case domain, or wider when the domain needs it) from
/// "00000000:00:06.0" (NVML busId), "0000:00:06.0", "0000:00:06.0\n"; nullopt when `text` is not
/// domain:bus:device.function in hex.
std::optional<std::string> NormalizePciBusId(std::string_view text);

}  // namespace gputriage::nvidia
