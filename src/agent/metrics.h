// The agent's counters and gauges, rendered in Prometheus' text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): `# HELP`, `# TYPE`, then one
// sample per label set. Counters only go up (a count of events, never a last value). Safe to
// update from one thread while another renders.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace gputriage::agent {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  /// Declares a family: `type` is "counter" or "gauge". Samples of an undeclared family are
  /// not rendered.
  void Declare(const std::string& name, const std::string& type, const std::string& help);
  void Add(const std::string& name, const Labels& labels, double value);
  void Set(const std::string& name, const Labels& labels, double value);
  /// The exposition text, families in name order, samples in label order.
  std::string Render() const;

 private:
  struct Family {
    std::string type, help;
    std::map<std::string, double> samples;  // rendered label set -> value
  };
  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
};

/// A label value escaped for the exposition format (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& value);

}  // namespace gputriage::agent
