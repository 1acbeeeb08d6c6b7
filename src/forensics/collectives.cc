#include "forensics/collectives.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/file.h"
#include "core/text.h"
#include "forensics/torch_flight_recorder.h"

namespace gputriage::forensics {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxDumpFiles = 64;
constexpr size_t kMaxDumpBytes = 64u << 20;

std::string Sizes(const std::vector<std::vector<int64_t>>& sizes) {
  std::vector<std::string> parts;
  for (const auto& s : sizes) parts.push_back(fmt::format("[{}]", fmt::join(s, ", ")));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string Ranks(const std::vector<int>& ranks) {
  return fmt::format("rank{} {}", ranks.size() == 1 ? "" : "s", fmt::join(ranks, ", "));
}

}  // namespace

std::string FlightRecorderPrefix(const std::function<const char*(const char*)>& lookup) {
  for (const char* name : {"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"}) {
    const char* v = lookup(name);
    if (v && *v) return v;
  }
  return "/tmp/nccl_trace_rank_";
}

bool FlightRecorderDumpsOnTimeout(const std::function<const char*(const char*)>& lookup) {
  const char* v = lookup("TORCH_NCCL_DUMP_ON_TIMEOUT");
  if (!v || !*v) return false;
  std::string s = core::ToLower(v);
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

std::optional<FlightRecorderFiles> CollectFlightRecorderDumps(const std::string& prefix, fs::file_time_type since) {
  fs::path p(prefix);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string stem = p.filename().string();
  if (stem.empty()) return std::nullopt;  // a prefix ending in '/': PyTorch appends the rank to it
  std::vector<std::pair<int, fs::path>> found;
  FlightRecorderFiles out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.starts_with(stem) || name.size() == stem.size() || name.size() > stem.size() + 6) continue;
    std::string_view suffix = std::string_view(name).substr(stem.size());
    if (!std::all_of(suffix.begin(), suffix.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    // A link (to whatever file) or another user's file in a shared /tmp is never copied.
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      out.problems.push_back(fmt::format("{}: not taken: {}", it->path().string(),
                                         S_ISREG(st.st_mode) ? "owned by another user" : "not a regular file"));
      continue;
    }
    std::error_code time_error;
    auto written = fs::last_write_time(it->path(), time_error);
    if (time_error || written < since) continue;  // another run's dump
    found.push_back({std::atoi(std::string(suffix).c_str()), it->path()});
  }
  if (found.empty() && out.problems.empty()) return std::nullopt;
  std::sort(found.begin(), found.end());
  if (found.size() > kMaxDumpFiles) {
    out.problems.push_back(fmt::format("{} dumps found; the first {} ranks' taken", found.size(), kMaxDumpFiles));
    found.resize(kMaxDumpFiles);
  }
  std::vector<std::pair<core::CollectiveDump, core::FrDump>> dumps;
  for (const auto& [rank, path] : found) {
    core::CollectiveDump d;
    d.rank = rank;
    d.source = path.string();
    d.file = fmt::format("fr_trace_rank_{}", rank);
    core::FrDump dump;
    auto bytes = core::ReadFile(path.string(), kMaxDumpBytes);
    if (!bytes.ok()) {
      d.error = bytes.error().message;
    } else {
      d.bytes = bytes->size();
      auto parsed = ParseFlightRecorderDump(*bytes, d.source);
      if (parsed.ok()) {
        dump = std::move(*parsed);
      } else {
        d.error = parsed.error().message;
      }
      out.files.push_back({d.file, std::move(*bytes)});
    }
    dumps.push_back({std::move(d), std::move(dump)});
  }
  out.report = core::CompareCollectives(std::move(dumps));
  return out;
}

std::vector<core::Finding> CollectiveFindings(const core::CollectiveReport& report) {
  std::vector<core::Finding> out;
  std::set<std::string> explained;  // groups a stall or mismatch already explains
  for (const core::CollectiveStall& s : report.stalls) {
    explained.insert(s.group);
    core::Finding f;
    f.id = "collective.rank_never_entered";
    f.layer = 4;
    f.severity = core::Severity::kError;
    std::string label = core::CollectiveLabel(s.op, s.seq, s.group, s.group_desc);
    f.title = fmt::format("{} never entered {}, which {} entered", Ranks(s.missing), label, Ranks(s.entered));
    f.detail = fmt::format(
        "PyTorch's flight recorder: the last collective {} enqueued in this group comes before #{}{}. The "
        "collective timeouts of {} are a consequence: they waited for a rank that was elsewhere.",
        Ranks(s.missing), s.seq, s.input_sizes.empty() ? "" : fmt::format(" (input sizes {})", Sizes(s.input_sizes)),
        Ranks(s.entered));
    f.fix = fmt::format(
        "Find out why {} stopped before this collective: its own error or stack (its crash bundle, its stderr), a "
        "rank-dependent branch or uneven data that skipped the collective, an exception that was caught.",
        Ranks(s.missing));
    f.evidence.push_back({.source = "collectives.json", .text = label});
    out.push_back(std::move(f));
  }
  for (const core::CollectiveMismatch& m : report.mismatches) {
    explained.insert(m.group);
    std::vector<std::string> sides;
    for (const core::CollectiveSide& s : m.ranks) {
      sides.push_back(
          fmt::format("rank {}: {} {} {}", s.rank, s.op, Sizes(s.input_sizes), fmt::join(s.input_dtypes, ",")));
    }
    core::Finding f;
    f.id = "collective.mismatch";
    f.layer = 4;
    f.severity = core::Severity::kError;
    f.title = fmt::format("The ranks disagree on collective #{} of {}", m.seq,
                          m.group_desc.empty() ? "group " + m.group : m.group_desc);
    f.detail = fmt::format(
        "PyTorch's flight recorder: {}. Collectives are matched by their order in the group, "
        "so every rank must issue the same operation on the same shapes and types.",
        fmt::join(sides, "; "));
    f.fix =
        "Look for a rank-dependent code path before this collective (a condition on the rank, uneven batches, an "
        "early exit on one rank); TORCH_DISTRIBUTED_DEBUG=DETAIL makes PyTorch check shapes at every collective.";
    for (const std::string& s : sides) f.evidence.push_back({.source = "collectives.json", .text = s});
    out.push_back(std::move(f));
  }
  size_t ranks_with_dumps = 0;
  for (const core::CollectiveDump& d : report.dumps) ranks_with_dumps += !d.error && d.rank;
  for (const core::CollectivePending& p : report.pending) {
    if (explained.count(p.group)) continue;
    explained.insert(p.group);  // one per group: the oldest on the first rank that has one
    core::Finding f;
    f.id = "collective.not_completed";
    f.layer = 4;
    f.severity = core::Severity::kWarning;
    std::string label = core::CollectiveLabel(p.op, p.seq, p.group, p.group_desc);
    f.title = fmt::format("{} had not completed on {} when PyTorch dumped its flight recorder", label,
                          p.rank ? fmt::format("rank {}", *p.rank) : "a rank");
    f.detail = fmt::format("State {}{}.", p.state.empty() ? "unknown" : p.state,
                           p.timeout_ms ? fmt::format(", timeout {} ms", *p.timeout_ms) : "");
    f.detail += ranks_with_dumps > 1
                    ? " Every rank whose dump was found entered it: the collective itself did not finish."
                    : " Only one rank's dump was found: the other ranks' dumps say whether they entered it.";
    f.fix =
        "When every rank entered it: the communication or a GPU stopped (NCCL_DEBUG=INFO, the kernel log, a "
        "kernel queued before it on the same stream that never ended). Otherwise the rank that did not enter "
        "it is the cause.";
    f.evidence.push_back({.source = "collectives.json", .text = label});
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace gputriage::forensics
