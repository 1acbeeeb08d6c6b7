// PyTorch's flight recorder dumps: the last collectives of every process group of one rank, as
// PyTorch writes them to `<prefix><rank>` (TORCH_FR_DUMP_TEMP_FILE, else
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE) on a collective timeout, or returns them from
// torch._C._distributed_c10d._dump_nccl_trace() (_dump_fr_trace() for any backend). The types are
// core's (core/collectives.h). The dump is a pickle (protocol 2, written by
// PyTorch's C++ pickler). This is a restricted reader of the data opcodes that writer uses —
// dicts, lists, tuples, strings, integers, floats, booleans, None and the memo — never a general
// unpickler: an opcode that names or calls code (GLOBAL, REDUCE, BUILD, ...) or any other is an
// error naming it and its offset, and nothing in the input is ever executed.
#pragma once

#include <string_view>

#include "core/collectives.h"
#include "core/result.h"

namespace gputriage::forensics {

using core::FrDump;
using core::FrEntry;
using core::FrFrame;
using core::FrGroup;

/// Reads a dump. Fails, naming `source`, the offset and what is wrong, on a truncated or
/// malformed pickle, an opcode outside the subset above, a top level that is not a dict without
/// the recorder's `entries` or `pg_status`, or more than 8 million values. Containers live in an
/// arena and are walked only along the dump's own fields, so a pickle that nests deeply or refers
/// to itself through the memo costs neither recursion nor a loop. Fields of an unexpected type are
/// left unset.
core::Result<FrDump> ParseFlightRecorderDump(std::string_view bytes, std::string_view source);

}  // namespace gputriage::forensics
