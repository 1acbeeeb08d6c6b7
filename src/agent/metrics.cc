#include "agent/metrics.h"

#include <fmt/format.h>

#include <cmath>

namespace gputriage::agent {
namespace {

std::string LabelText(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    out += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, EscapeLabelValue(labels[i].second));
  }
  return out + "}";
}

std::string ValueText(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{:.0f}", value);
  return fmt::format("{}", value);
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void Metrics::Declare(const std::string& name, const std::string& type, const std::string& help) {
  std::lock_guard<std::mutex> lock(mutex_);
  Family& f = families_[name];
  f.type = type;
  f.help = help;
}

void Metrics::Add(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  families_[name].samples[LabelText(labels)] += value;
}

void Metrics::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  families_[name].samples[LabelText(labels)] = value;
}

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const auto& [name, family] : families_) {
    if (family.type.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, family.help, name, family.type);
    for (const auto& [labels, value] : family.samples) out += fmt::format("{}{} {}\n", name, labels, ValueText(value));
  }
  return out;
}

}  // namespace gputriage::agent
