#include "forensics/debug_agent_report.h"

#include <re2/re2.h>

#include <string>

#include "core/text.h"

namespace gputriage::forensics {

SanitizerReport ParseDebugAgentReport(std::string_view text) {
  static const re2::RE2 kQueueError(R"(^\s*Queue error \((\w+)(?::\s*(.*))?\)\s*$)");
  static const re2::RE2 kSystemEvent(R"(^\s*System event \((\w+)(?::\s*(.*))?\)\s*$)");
  static const re2::RE2 kFaultingPage(R"(^\s*Faulting page:\s*(0x[0-9a-fA-F]+))");
  static const re2::RE2 kOldFault(R"(^\s*Memory access fault (?:by GPU agent: (.+?)|at GPU Node: (\d+))\s*$)");
  static const re2::RE2 kOldAddress(R"(^\s*Address:\s*(0x[0-9a-fA-Fx]+)\s*(?:\((.*)\))?)");
  static const re2::RE2 kWave(R"(^\s*wave_\d+:\s*pc=(0x[0-9a-fA-F]+)\s*\(stopped, reason:\s*([^)]*)\))");
  static const re2::RE2 kOldWaves(R"(^\s*(\d+) wavefront\(s\) found in .*@PC:\s*(0x[0-9a-fA-F]+))");
  static const re2::RE2 kFunction(R"(^\s*Disassembly for function (.+):\s*$)");
  static const re2::RE2 kSourceFile(R"(^\s*(/\S+|\S+\.(?:cpp|cc|cxx|hip|cu|c|h|hpp|cl)):\s*$)");
  static const re2::RE2 kSourceLine(R"(^\s*(\d+)\s{2,}\S)");
  static const re2::RE2 kStopped(R"(^\s*=>\s*(0x[0-9a-fA-F]+)\s*<(\+\d+)>)");

  SanitizerReport report;
  core::SanitizerError* current = nullptr;
  auto start = [&](std::string kind) {
    report.errors.push_back({});
    current = &report.errors.back();
    current->kind = std::move(kind);
  };
  std::string file;
  std::optional<int64_t> line;
  // Each pattern runs only on lines holding its keyword: a report is mostly register dumps.
  auto has = [](std::string_view line, std::string_view word) { return line.find(word) != std::string_view::npos; };
  for (std::string_view raw : core::SplitLines(text)) {
    re2::StringPiece l(raw.data(), raw.size());
    std::string a, b;
    bool event = has(raw, "Queue error") || has(raw, "System event") || has(raw, "Memory access fault");
    if (!event && current == nullptr) continue;  // before the agent's first event: the job's own output
    if (event && re2::RE2::PartialMatch(l, kQueueError, &a, &b)) {
      start("queue error " + a);
      if (!b.empty()) current->problem = b;
    } else if (event && re2::RE2::PartialMatch(l, kSystemEvent, &a, &b)) {
      start("system event " + a);
      if (!b.empty()) current->problem = b;
    } else if (event && re2::RE2::PartialMatch(l, kOldFault, &a, &b)) {
      start(a.empty() ? "memory access fault at GPU node " + b : "memory access fault by GPU agent " + a);
    } else if (current == nullptr) {
      continue;
    } else if (has(raw, "Faulting page") && re2::RE2::PartialMatch(l, kFaultingPage, &a)) {
      current->address = a;
    } else if (has(raw, "Address:") && re2::RE2::PartialMatch(l, kOldAddress, &a, &b)) {
      current->address = a;
      if (!b.empty()) current->problem = b;
    } else if (has(raw, "wave_") && re2::RE2::PartialMatch(l, kWave, &a, &b)) {
      if (!current->pc_offset) current->pc_offset = a;
      if (current->kind.find("reason") == std::string::npos) current->kind += " (stopped, reason: " + b + ")";
    } else if (has(raw, "wavefront(s)") && re2::RE2::PartialMatch(l, kOldWaves, &a, &b)) {
      if (!current->pc_offset) current->pc_offset = b;
      current->problem = current->problem.value_or("") + (current->problem ? "; " : "") + a + " wavefront(s) found";
    } else if (has(raw, "Disassembly for function") && re2::RE2::PartialMatch(l, kFunction, &a)) {
      if (current->kernel.empty()) current->kernel = a;
    } else if (has(raw, "=>") && re2::RE2::PartialMatch(l, kStopped, &a, &b)) {
      current->pc_offset = a + " <" + b + ">";
      if (!file.empty() && !current->file) current->file = file, current->line = line;
    } else if (raw.find_last_not_of(" \t\r") != std::string_view::npos && raw[raw.find_last_not_of(" \t\r")] == ':' &&
               re2::RE2::PartialMatch(l, kSourceFile, &a)) {
      file = a, line.reset();
    } else if (size_t d = raw.find_first_not_of(" \t"); d != std::string_view::npos && raw[d] >= '1' && raw[d] <= '9') {
      if (std::string n; re2::RE2::PartialMatch(l, kSourceLine, &n) && n.size() < 9) line = std::stoll(n);
    }
  }
  return report;
}

}  // namespace gputriage::forensics
