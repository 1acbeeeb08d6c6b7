// The failure categories and verdicts of docs/design.md, as enums. Their names ("illegal-address",
// "driver-firmware") are stable: they are what JSON outputs, the knowledge base and the error
// tables say.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace gputriage::core {

/// The class of a failure's root cause when it can be told, else of its symptom.
enum class Category {
  kIllegalAddress,  ///< a kernel touched memory it must not
  kPageFault,       ///< amdgpu / HSA GPU page faults
  kDeviceAssert,    ///< an assert inside a GPU kernel fired
  kArchMismatch,    ///< no code for this GPU
  kAbiMismatch,     ///< undefined symbols, libraries from different releases
  kNumerical,       ///< NaN/Inf or wrong results
  kHangTimeout,     ///< ring/queue timeouts, GPU hangs, collective timeouts
  kOom,             ///< out of device (or pinned host) memory
  kHardware,        ///< ECC/RAS, fatal Xid, fallen off the bus, PCIe, power
  kDriverRuntime,   ///< driver or runtime cannot start or talk to the GPU
  kCompilerJit,     ///< the compile step itself fails
  kOther,
};
inline constexpr size_t kCategoryCount = 12;

/// Every category, in the order above (docs/design.md's table).
const std::array<Category, kCategoryCount>& AllCategories();

/// "illegal-address", ... "other".
std::string_view CategoryName(Category category);
std::optional<Category> ParseCategory(std::string_view name);

/// Where the fault lies.
enum class Verdict { kHardware, kDriverFirmware, kLibrary, kApplication, kUnknown };
inline constexpr size_t kVerdictCount = 5;

const std::array<Verdict, kVerdictCount>& AllVerdicts();

/// "hardware", "driver-firmware", "library", "application", "unknown".
std::string_view VerdictName(Verdict verdict);
std::optional<Verdict> ParseVerdict(std::string_view name);

/// The names for the models' field lists (json_fields): EnumName and ParseEnum.
inline std::string_view EnumName(Category category) { return CategoryName(category); }
inline std::string_view EnumName(Verdict verdict) { return VerdictName(verdict); }
bool ParseEnum(std::string_view name, Category& out);
bool ParseEnum(std::string_view name, Verdict& out);

}  // namespace gputriage::core
