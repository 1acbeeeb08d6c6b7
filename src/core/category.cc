#include "core/category.h"

namespace gputriage::core {
namespace {

constexpr std::array<std::string_view, kCategoryCount> kCategoryNames = {
    "illegal-address", "page-fault", "device-assert", "arch-mismatch",  "abi-mismatch", "numerical",
    "hang-timeout",    "oom",        "hardware",      "driver-runtime", "compiler-jit", "other"};

constexpr std::array<std::string_view, kVerdictCount> kVerdictNames = {"hardware", "driver-firmware", "library",
                                                                       "application", "unknown"};

template <typename Enum, size_t N>
std::optional<Enum> Parse(std::string_view name, const std::array<std::string_view, N>& names) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace

const std::array<Category, kCategoryCount>& AllCategories() {
  static const std::array<Category, kCategoryCount> kAll = [] {
    std::array<Category, kCategoryCount> all{};
    for (size_t i = 0; i < kCategoryCount; ++i) all[i] = static_cast<Category>(i);
    return all;
  }();
  return kAll;
}

std::string_view CategoryName(Category category) {
  size_t i = static_cast<size_t>(category);
  return i < kCategoryCount ? kCategoryNames[i] : "other";
}

std::optional<Category> ParseCategory(std::string_view name) { return Parse<Category>(name, kCategoryNames); }

const std::array<Verdict, kVerdictCount>& AllVerdicts() {
  static const std::array<Verdict, kVerdictCount> kAll = {Verdict::kHardware, Verdict::kDriverFirmware,
                                                          Verdict::kLibrary, Verdict::kApplication, Verdict::kUnknown};
  return kAll;
}

std::string_view VerdictName(Verdict verdict) {
  size_t i = static_cast<size_t>(verdict);
  return i < kVerdictCount ? kVerdictNames[i] : "unknown";
}

std::optional<Verdict> ParseVerdict(std::string_view name) { return Parse<Verdict>(name, kVerdictNames); }

bool ParseEnum(std::string_view name, Category& out) {
  std::optional<Category> parsed = ParseCategory(name);
  if (parsed) out = *parsed;
  return parsed.has_value();
}

bool ParseEnum(std::string_view name, Verdict& out) {
  std::optional<Verdict> parsed = ParseVerdict(name);
  if (parsed) out = *parsed;
  return parsed.has_value();
}

}  // namespace gputriage::core
