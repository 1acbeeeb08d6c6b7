// PyTorch's flight recorder dumps: the last collectives of every process group of one rank, as
// PyTorch writes them to `<prefix><rank>` (TORCH_FR_DUMP_TEMP_FILE, else
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE) on a collective timeout, or returns them from
// torch._C._distributed_c10d._dump_nccl_trace(). The dump is a pickle (protocol 2, written by
// PyTorch's C++ pickler). This is a restricted reader of the data opcodes that writer uses —
// dicts, lists, tuples, strings, integers, floats, booleans, None and the memo — never a general
// unpickler: an opcode that names or calls code (GLOBAL, REDUCE, BUILD, ...) or any other is an
// error naming it and its offset, and nothing in the input is ever executed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gputriage::kb {

/// One Python frame of the call that issued a collective.
struct FrFrame {
  std::string name;
  std::string filename;
  int64_t line = 0;
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
};

/// A process group's configuration and progress (pg_config and pg_status, keyed by its id).
struct FrGroup {
  std::string id;
  std::string name, desc;
  std::string ranks;  ///< as PyTorch writes it: "[0, 1, 2, 3]"
  std::optional<int64_t> last_enqueued_collective, last_started_collective, last_completed_collective;
};

struct FrDump {
  std::string version;           ///< the dump format's version ("2.10")
  std::string comm_lib_version;  ///< NCCL's ("2.28.9")
  std::vector<FrGroup> groups;   ///< by id, in the dump's order
  std::vector<FrEntry> entries;  ///< oldest first
};

/// Reads a dump. Fails, naming `source`, the offset and what is wrong, on a truncated or
/// malformed pickle, an opcode outside the subset above, a top level that is not a dict without
/// the recorder's `entries` or `pg_status`, or more than 8 million values. Containers live in an
/// arena and are walked only along the dump's own fields, so a pickle that nests deeply or refers
/// to itself through the memo costs neither recursion nor a loop. Fields of an unexpected type are
/// left unset.
core::Result<FrDump> ParseFlightRecorderDump(std::string_view bytes, std::string_view source);

}  // namespace gputriage::kb
