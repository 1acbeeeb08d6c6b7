// Pure parsers for the text of amdgpu's sysfs attributes (Documentation/gpu/amdgpu/thermal.rst
// and driver-misc.rst in the kernel tree). They take bytes, never a path, and never fail: what
// looks wrong is listed in `problems` for the caller to report with the path.
//
// Formats handled (seen in the captures under tests/fixtures/amd/):
//   pp_dpm_sclk / pp_dpm_mclk / pp_dpm_fclk ...   "0: 300Mhz \n1: 588Mhz *\n" ('*' = current;
//                                                newer SMUs add a deep-sleep level "S: 19Mhz")
//   pp_dpm_pcie                                  "0: 2.5GT/s, x8 250Mhz\n1: 16.0GT/s, x8 1143Mhz *"
//                                                (older ASICs print no clock: "1: 8.0GT/s, x16 *")
//   ras/<block>_err_count                        "ue: 0\nce: 3\n" (newer kernels add "de: N")
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputriage::amd {

/// One line of a pp_dpm_* file.
struct DpmLevel {
  /// "0", "1", ... or "S" for the deep-sleep level.
  std::string level;
  /// The level's clock; for pp_dpm_pcie the link clock, when the kernel prints one.
  std::optional<uint64_t> mhz;
  /// pp_dpm_pcie only: the link speed and width of the level.
  std::optional<double> pcie_gts;
  std::optional<uint64_t> pcie_width;
  /// Marked with '*': the level the SMU runs at now.
  bool current = false;
};

/// A parsed pp_dpm_* file.
struct DpmTable {
  std::vector<DpmLevel> levels;
  /// Reasons the text looked wrong ("line 2: unexpected token \"abc\""); empty when clean.
  std::vector<std::string> problems;

  /// The first level marked current, or nullptr when none is (the SMU marks none while it
  /// sits between levels on some ASICs).
  const DpmLevel* Current() const;
};

/// Parses a pp_dpm_* file. Leading indentation and trailing blanks are ignored. Never fails;
/// malformed lines are skipped and described in `problems`.
DpmTable ParseDpmLevels(std::string_view text);

/// A parsed ras/<block>_err_count file.
struct RasErrorCount {
  std::optional<uint64_t> ue;  ///< uncorrectable
  std::optional<uint64_t> ce;  ///< correctable
  std::optional<uint64_t> de;  ///< deferred (newer kernels)
  std::vector<std::string> problems;
};

/// Parses "ue: N\nce: N[\nde: N]". Never fails; a file with neither ue nor ce says so in
/// `problems`.
RasErrorCount ParseRasErrorCount(std::string_view text);

}  // namespace gputriage::amd
