#include "core/collectives.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/json_fields.h"

namespace gputriage::core {

Json ToJson(const CollectiveReport& report) { return json_fields::WriteValue(report); }

CollectiveReport CollectiveReportFromJson(const Json& json) {
  CollectiveReport report;
  json_fields::ReadValue(json, report);
  return report;
}

std::string CollectiveLabel(std::string_view op, int64_t seq, std::string_view group, std::string_view desc) {
  // "nccl:all_reduce" -> "all_reduce"
  std::string_view name = op.empty() ? std::string_view("collective") : op.substr(op.find(':') + 1);
  std::string where = desc.empty() ? fmt::format("group {}", group) : std::string(desc);
  return fmt::format("{} #{} of {}", name, seq, where);
}

namespace {

struct RankDump {
  int rank;
  const FrDump* dump;
};

bool InGroup(const FrEntry& e, const std::string& group) {
  return !e.is_p2p && e.pg_id && std::to_string(*e.pg_id) == group && e.collective_seq_id;
}

// The last collective this rank enqueued in `group`: pg_status's, else its newest entry's.
std::optional<int64_t> LastEnqueued(const FrDump& dump, const FrGroup* g, const std::string& group) {
  if (g && g->last_enqueued_collective && *g->last_enqueued_collective >= 0) return g->last_enqueued_collective;
  std::optional<int64_t> last;
  for (const FrEntry& e : dump.entries) {
    if (InGroup(e, group)) last = std::max(last.value_or(0), *e.collective_seq_id);
  }
  return last;
}

const FrEntry* EntryAt(const FrDump& dump, const std::string& group, int64_t seq) {
  for (const FrEntry& e : dump.entries) {
    if (InGroup(e, group) && *e.collective_seq_id == seq) return &e;
  }
  return nullptr;
}

}  // namespace

CollectiveReport CompareCollectives(std::vector<std::pair<CollectiveDump, FrDump>> dumps) {
  CollectiveReport report;
  std::vector<RankDump> ranks;
  std::vector<std::string> groups;  // ids, in order of first appearance
  std::map<std::string, std::string> descs;
  for (auto& [summary, dump] : dumps) {
    if (!summary.error) {
      summary.version = dump.version;
      summary.comm_lib_version = dump.comm_lib_version;
      summary.groups = dump.groups;
      summary.entries = dump.entries.size();
      size_t first = dump.entries.size() > kCollectiveLastEntries ? dump.entries.size() - kCollectiveLastEntries : 0;
      summary.last.assign(dump.entries.begin() + static_cast<ptrdiff_t>(first), dump.entries.end());
      for (const FrGroup& g : dump.groups) {
        if (std::find(groups.begin(), groups.end(), g.id) == groups.end()) groups.push_back(g.id);
        if (!g.desc.empty()) descs.emplace(g.id, g.desc);
      }
      if (summary.rank) ranks.push_back({*summary.rank, &dump});
    }
    report.dumps.push_back(summary);
  }
  for (const std::string& group : groups) {
    const std::string desc = descs.count(group) ? descs[group] : "";
    // Each rank's oldest collective of the group that had not completed when it dumped.
    for (const auto& [summary, dump] : dumps) {
      if (summary.error) continue;
      for (const FrEntry& e : dump.entries) {
        if (!InGroup(e, group) || e.retired || e.state == "completed") continue;
        report.pending.push_back(
            {summary.rank, group, desc, *e.collective_seq_id, e.profiling_name, e.state, e.timeout_ms});
        break;
      }
    }
    if (ranks.size() < 2) continue;
    // The first collective some ranks entered and others did not.
    std::map<int, int64_t> enqueued;
    for (const RankDump& r : ranks) {
      const FrGroup* g = nullptr;
      for (const FrGroup& candidate : r.dump->groups) g = candidate.id == group ? &candidate : g;
      if (g == nullptr) continue;
      if (std::optional<int64_t> last = LastEnqueued(*r.dump, g, group)) enqueued[r.rank] = *last;
    }
    if (enqueued.size() >= 2) {
      int64_t low = INT64_MAX, high = INT64_MIN;
      for (const auto& [rank, seq] : enqueued) low = std::min(low, seq), high = std::max(high, seq);
      if (low < high) {
        CollectiveStall stall{group, desc, low + 1};
        for (const auto& [rank, seq] : enqueued) (seq > low ? stall.entered : stall.missing).push_back(rank);
        for (const RankDump& r : ranks) {
          if (const FrEntry* e = EntryAt(*r.dump, group, stall.seq)) {
            stall.op = e->profiling_name;
            stall.input_sizes = e->input_sizes;
            break;
          }
        }
        report.stalls.push_back(std::move(stall));
      }
    }
    // The first sequence number the ranks disagree on.
    std::map<int64_t, std::vector<CollectiveSide>> sides;
    for (const RankDump& r : ranks) {
      for (const FrEntry& e : r.dump->entries) {
        if (InGroup(e, group))
          sides[*e.collective_seq_id].push_back({r.rank, e.profiling_name, e.input_sizes, e.input_dtypes});
      }
    }
    for (auto& [seq, list] : sides) {
      bool differ = false;
      for (const CollectiveSide& s : list) {
        differ = differ || s.op != list[0].op || s.input_sizes != list[0].input_sizes ||
                 s.input_dtypes != list[0].input_dtypes;
      }
      if (!differ) continue;
      report.mismatches.push_back({group, desc, seq, std::move(list)});
      break;
    }
  }
  return report;
}

}  // namespace gputriage::core
