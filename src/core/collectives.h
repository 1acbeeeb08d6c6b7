// PyTorch's flight recorder (the last collectives of every process group of one rank, dumped to
// `<prefix><rank>` on a collective timeout) as data, and what the ranks' dumps say together:
// collectives.json of a crash bundle. The dump itself is read by forensics/torch_flight_recorder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace gputriage::core {

/// One Python frame of the call that issued a collective.
struct FrFrame {
  std::string name;
  std::string filename;
  int64_t line = 0;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("name", s.name);
    v("filename", s.filename);
    v("line", s.line);
  }
};

/// One collective or point-to-point operation the recorder saw.
struct FrEntry {
  std::optional<int64_t> record_id, pg_id, collective_seq_id, p2p_seq_id, op_id;
  std::string process_group;       ///< the group's name ("0")
  std::string process_group_desc;  ///< its description ("default_pg")
  std::string profiling_name;      ///< "nccl:all_reduce", "gloo:broadcast"
  std::string state;               ///< "scheduled", "started", "completed"
  std::string thread_name;
  std::optional<int64_t> time_created_ns, time_discovered_started_ns, time_discovered_completed_ns, timeout_ms;
  std::vector<std::vector<int64_t>> input_sizes, output_sizes;
  std::vector<std::string> input_dtypes, output_dtypes;
  bool retired = false;
  bool is_p2p = false;
  std::vector<FrFrame> frames;  ///< empty when dumped without stack traces
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("record_id", s.record_id);
    v("pg_id", s.pg_id);
    v("collective_seq_id", s.collective_seq_id);
    v("p2p_seq_id", s.p2p_seq_id);
    v("op_id", s.op_id);
    v("process_group", s.process_group);
    v("process_group_desc", s.process_group_desc);
    v("profiling_name", s.profiling_name);
    v("state", s.state);
    v("thread_name", s.thread_name);
    v("time_created_ns", s.time_created_ns);
    v("time_discovered_started_ns", s.time_discovered_started_ns);
    v("time_discovered_completed_ns", s.time_discovered_completed_ns);
    v("timeout_ms", s.timeout_ms);
    v("input_sizes", s.input_sizes);
    v("output_sizes", s.output_sizes);
    v("input_dtypes", s.input_dtypes);
    v("output_dtypes", s.output_dtypes);
    v("retired", s.retired);
    v("is_p2p", s.is_p2p);
    v("frames", s.frames);
  }
};

/// A process group's configuration and progress (pg_config and pg_status, keyed by its id).
struct FrGroup {
  std::string id;
  std::string name, desc;
  std::string ranks;  ///< as PyTorch writes it: "[0, 1, 2, 3]"
  std::optional<int64_t> last_enqueued_collective, last_started_collective, last_completed_collective;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("id", s.id);
    v("name", s.name);
    v("desc", s.desc);
    v("ranks", s.ranks);
    v("last_enqueued_collective", s.last_enqueued_collective);
    v("last_started_collective", s.last_started_collective);
    v("last_completed_collective", s.last_completed_collective);
  }
};

struct FrDump {
  std::string version;           ///< the dump format's version ("2.10")
  std::string comm_lib_version;  ///< NCCL's ("2.28.9"); "" for gloo
  std::vector<FrGroup> groups;   ///< by id, in the dump's order
  std::vector<FrEntry> entries;  ///< oldest first
};

/// One rank's dump as `run` found it.
struct CollectiveDump {
  std::optional<int> rank;  ///< from the file name's suffix
  std::string source;       ///< where the job wrote it
  std::string file;         ///< its copy in the bundle ("fr_trace_rank_1")
  uint64_t bytes = 0;
  std::optional<std::string> error;  ///< why it could not be read (the rest is then empty)
  std::string version, comm_lib_version;
  std::vector<FrGroup> groups;
  uint64_t entries = 0;       ///< in the dump
  std::vector<FrEntry> last;  ///< the newest entries (at most kCollectiveLastEntries), oldest first
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("rank", s.rank);
    v("source", s.source);
    v("file", s.file);
    v("bytes", s.bytes);
    v("error", s.error);
    v("version", s.version);
    v("comm_lib_version", s.comm_lib_version);
    v("groups", s.groups);
    v("entries", s.entries);
    v("last", s.last);
  }
};
inline constexpr size_t kCollectiveLastEntries = 8;

/// A collective some ranks of a group entered and others never did: the others' timeouts wait
/// on the missing ranks.
struct CollectiveStall {
  std::string group;       ///< the group's id
  std::string group_desc;  ///< "default_pg"
  int64_t seq = 0;         ///< collective_seq_id
  std::string op;          ///< profiling_name of an entering rank's entry ("nccl:all_reduce")
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<int> entered, missing;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("group", s.group);
    v("group_desc", s.group_desc);
    v("seq", s.seq);
    v("op", s.op);
    v("input_sizes", s.input_sizes);
    v("entered", s.entered);
    v("missing", s.missing);
  }
};

/// One rank's side of a collective the ranks disagree on.
struct CollectiveSide {
  int rank = 0;
  std::string op;
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<std::string> input_dtypes;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("rank", s.rank);
    v("op", s.op);
    v("input_sizes", s.input_sizes);
    v("input_dtypes", s.input_dtypes);
  }
};

/// The same sequence number of a group with another operation, sizes or types on some rank.
struct CollectiveMismatch {
  std::string group, group_desc;
  int64_t seq = 0;
  std::vector<CollectiveSide> ranks;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("group", s.group);
    v("group_desc", s.group_desc);
    v("seq", s.seq);
    v("ranks", s.ranks);
  }
};

/// The oldest collective of a rank's group that had not completed when it dumped.
struct CollectivePending {
  std::optional<int> rank;
  std::string group, group_desc;
  int64_t seq = 0;
  std::string op, state;
  std::optional<int64_t> timeout_ms;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("rank", s.rank);
    v("group", s.group);
    v("group_desc", s.group_desc);
    v("seq", s.seq);
    v("op", s.op);
    v("state", s.state);
    v("timeout_ms", s.timeout_ms);
  }
};

/// collectives.json: the dumps and what they say together.
struct CollectiveReport {
  std::vector<CollectiveDump> dumps;  ///< by rank
  std::vector<CollectiveStall> stalls;
  std::vector<CollectiveMismatch> mismatches;
  std::vector<CollectivePending> pending;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("dumps", s.dumps);
    v("stalls", s.stalls);
    v("mismatches", s.mismatches);
    v("pending", s.pending);
  }
};

Json ToJson(const CollectiveReport& report);
/// Parses what ToJson wrote; unknown or ill-typed members stay at their defaults; never throws.
CollectiveReport CollectiveReportFromJson(const Json& json);

/// What the dumps say together: per group (by id), the first collective some ranks entered and
/// others did not, the first sequence number whose operation, sizes or types differ between
/// ranks, and each rank's oldest collective not completed. A rank without a readable dump takes
/// no part. Dumps keep their order.
CollectiveReport CompareCollectives(std::vector<std::pair<CollectiveDump, FrDump>> dumps);

/// "all_reduce #3 of default_pg" for messages.
std::string CollectiveLabel(std::string_view op, int64_t seq, std::string_view group, std::string_view desc);

}  // namespace gputriage::core
