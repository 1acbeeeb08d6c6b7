#include "core/clock.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

namespace gputriage::core {

double NowEpochSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string FormatUtcIso(double epoch_seconds, bool millis) {
  double whole = std::floor(epoch_seconds);
  auto seconds = static_cast<time_t>(whole);
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) return "";
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                                tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (millis) {
    int ms = static_cast<int>((epoch_seconds - whole) * 1000.0);
    if (ms > 999) ms = 999;
    out += fmt::format(".{:03}", ms);
  }
  out += 'Z';
  return out;
}

std::optional<double> ParseUtcIso(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  double fraction = 0;
  const char* rest = text.c_str() + consumed;
  if (*rest == '.') {
    double scale = 0.1;
    for (++rest; *rest >= '0' && *rest <= '9'; ++rest, scale /= 10) fraction += (*rest - '0') * scale;
  }
  if (*rest != 'Z' || rest[1] != '\0') return std::nullopt;
  return static_cast<double>(timegm(&tm)) + fraction;
}

}  // namespace gputriage::core
