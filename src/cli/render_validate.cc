// `validate` for the terminal and as JUnit XML.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <ctime>
#include <map>

#include "cli/render.h"

namespace gputriage::cli {
namespace {

std::string StatusWord(core::CheckStatus status) {
  switch (status) {
    case core::CheckStatus::kPass:
      return "PASS ";
    case core::CheckStatus::kFail:
      return "FAIL ";
    case core::CheckStatus::kSkip:
      return "skip ";
    case core::CheckStatus::kError:
      return "ERROR";
  }
  return "ERROR";
}

std::string Counts(const core::ValidationReport& report) {
  core::CheckCounts c = core::CountChecks(report.checks);
  return fmt::format("{} passed, {} failed, {} error, {} skipped", c.pass, c.fail, c.error, c.skip);
}

// XML text and attribute values: the five entities escaped, control characters XML 1.0 forbids
// dropped (a detail can carry a library's message).
std::string Xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (c >= 0x20 || ch == '\t' || ch == '\n' || ch == '\r') out += ch;
    }
  }
  return out;
}

std::string CaseName(const core::ValidationCheck& check) {
  return check.dtype.empty() ? check.name : fmt::format("{}[{}]", check.name, check.dtype);
}

}  // namespace

std::string RenderValidation(const core::ValidationReport& report) {
  std::string out = fmt::format("validate level {}\n", report.level);
  for (const core::ValidationDevice& d : report.devices) {
    out += fmt::format("GPU {}: {} ({}, {}), {}{}\n", d.index, d.name, d.vendor, d.arch, d.runtime,
                       d.memory_total_bytes ? fmt::format(", {:.1f} GiB", *d.memory_total_bytes / 1073741824.0) : "");
  }
  for (const std::string& note : report.notes) out += fmt::format("note: {}\n", note);
  const std::string* previous = nullptr;
  for (const core::ValidationCheck& c : report.checks) {
    std::string numbers;
    if (c.max_rel_error) numbers += fmt::format("  err {:.2g}", *c.max_rel_error);
    if (c.throughput) {
      numbers += fmt::format("  {:.1f} {}", *c.throughput, c.throughput_unit.value_or(""));
      if (c.fraction_of_peak) numbers += fmt::format(" ({:.0f}% of peak)", *c.fraction_of_peak * 100);
    }
    if (c.seconds) numbers += fmt::format("  {:.1f} s", *c.seconds);
    std::string where = c.device >= 0 ? fmt::format("GPU {} ", c.device) : "";
    // Checks skipped for one reason (no GPU, no cuDNN) say it once.
    bool repeated = previous != nullptr && *previous == c.detail;
    out += fmt::format("{} {}{:<16}{}\n", StatusWord(c.status), where, CaseName(c), numbers);
    if (!repeated) out += fmt::format("        {}\n", c.detail);
    previous = &c.detail;
  }
  out += fmt::format("\n{} in {:.1f} s\n", Counts(report), report.seconds);
  if (!report.findings.empty()) out += "\n" + RenderFindings(report.findings);
  return out;
}

std::string RenderValidationSummary(const core::ValidationReport& report) {
  std::string out = fmt::format("validate (level {}, {} GPU{}): {}\n", report.level, report.devices.size(),
                                report.devices.size() == 1 ? "" : "s", Counts(report));
  for (const core::ValidationCheck& c : report.checks) {
    if (c.status == core::CheckStatus::kFail || (c.status == core::CheckStatus::kError && !report.devices.empty())) {
      out += fmt::format("  {} GPU {} {}: {}\n", StatusWord(c.status), c.device, CaseName(c), c.detail);
    }
  }
  return out;
}

std::string RenderJunit(const core::ValidationReport& report) {
  char host[256] = "localhost";
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "localhost");
  char stamp[32] = {};
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  // One suite per device, in device order; checks tied to no device (no GPU, bad options) in their own.
  std::map<int, std::vector<const core::ValidationCheck*>> suites;
  for (const core::ValidationCheck& c : report.checks) suites[c.device].push_back(&c);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  int id = 0;
  for (const auto& [device, checks] : suites) {
    std::string name = "no device";
    std::vector<std::pair<std::string, std::string>> properties = {{"level", std::to_string(report.level)}};
    for (const core::ValidationDevice& d : report.devices) {
      if (d.index != device) continue;
      name = fmt::format("GPU {}: {}", d.index, d.name);
      properties.insert(properties.end(),
                        {{"vendor", d.vendor}, {"arch", d.arch}, {"runtime", d.runtime}, {"pci_bus_id", d.pci_bus_id}});
    }
    int failures = 0, errors = 0, skipped = 0;
    double time = 0;
    for (const core::ValidationCheck* c : checks) {
      failures += c->status == core::CheckStatus::kFail;
      errors += c->status == core::CheckStatus::kError;
      skipped += c->status == core::CheckStatus::kSkip;
      time += c->seconds.value_or(0);
    }
    out += fmt::format(
        "  <testsuite package=\"gputriage.validate\" id=\"{}\" name=\"{}\" timestamp=\"{}\" hostname=\"{}\" "
        "tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n    <properties>\n",
        id++, Xml(name), stamp, Xml(host), checks.size(), failures, errors, skipped, time);
    for (const auto& [key, value] : properties) {
      out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", Xml(key), Xml(value));
    }
    out += "    </properties>\n";
    for (const core::ValidationCheck* c : checks) {
      std::string classname = device >= 0 ? fmt::format("gputriage.validate.gpu{}", device) : "gputriage.validate";
      out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"", classname, Xml(CaseName(*c)),
                         c->seconds.value_or(0));
      std::string message = Xml(c->detail);
      switch (c->status) {
        case core::CheckStatus::kPass:
          out += "/>\n";
          break;
        case core::CheckStatus::kFail:
          out += fmt::format(">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                             Xml(c->name), message, message);
          break;
        case core::CheckStatus::kError:
          out += fmt::format(">\n      <error type=\"{}\" message=\"{}\">{}</error>\n    </testcase>\n", Xml(c->name),
                             message, message);
          break;
        case core::CheckStatus::kSkip:
          out += fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n", message);
          break;
      }
    }
    out += "    <system-out></system-out>\n    <system-err></system-err>\n  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace gputriage::cli
