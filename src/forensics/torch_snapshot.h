// `run --torch-snapshot PATH`: PyTorch's caching allocator places many tensors in each segment it
// takes from the driver, so a faulting address inside (or just past) a segment says little until
// the segment's blocks are known. A job that records its allocator's history
// (torch.cuda.memory._record_memory_history()) and writes a snapshot when it fails
// (torch.cuda.memory._dump_snapshot(PATH), in its exception handler) gives them, with the Python
// frames that allocated each tensor. The snapshot is a pickle of plain data; it is read by
// python3 with an unpickler that refuses every class, so reading it runs none of its code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/gpu_calls.h"
#include "core/result.h"

namespace gputriage::forensics {

/// Reads the snapshot at `path` with `python` (the job's interpreter, python3 by default). Fails
/// naming the file: missing, not a pickle, a pickle naming a class, not an allocator snapshot,
/// no python.
core::Result<core::TorchMemory> ReadTorchSnapshot(const std::string& path, const std::string& python = "python3");

/// Where `address` falls among the snapshot's tensors: inside a block (live or free), or past
/// the end of the nearest live tensor below it in a segment it is in or at most 1 MiB past.
/// nullopt when it is near no segment.
struct TensorPlace {
  core::TorchBlock block;
  std::string summary;  ///< "1.5 MiB past the end of a 256 KiB tensor at 0x..., allocated at f.py:23 in g"
};
std::optional<TensorPlace> PlaceInTensors(const core::TorchMemory& memory, uint64_t address);

}  // namespace gputriage::forensics
