// What the flight recorder (`run --record`) saw the job do on the GPU, as the bundle's
// gpu_calls.json: the calls kept (newest last), the candidates for an asynchronous fault (the
// launches since the last successful synchronisation, newest first), synchronisations still in
// progress at the end, failed calls counted by code, the allocation table and where a faulting
// address falls in it. Written by forensics, read by kb and report through this type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace gputriage::core {

struct GpuCall {
  std::string api;  ///< "hipMalloc", "cuLaunchKernel"
  int64_t result = 0;
  std::optional<std::string> result_name;  ///< "hipErrorInvalidDevice", "CUDA_ERROR_NO_BINARY_FOR_GPU"
  int64_t pid = 0;
  int64_t tid = 0;
  double t_ms = 0;  ///< since the recorder started in that process
  double duration_us = 0;
  bool in_progress = false;           ///< a synchronisation entered and not returned when the record ends
  std::optional<std::string> kernel;  ///< launches: the demangled kernel name
  std::optional<std::vector<int64_t>> grid;
  std::optional<std::vector<int64_t>> block;
  std::optional<int64_t> shared_mem_bytes;
  std::optional<std::string> stream;   ///< "0x..."; "0x0" is the default stream
  std::optional<std::string> address;  ///< alloc/free: the memory; copy/set: the destination
  std::optional<std::string> source;   ///< copy: the source
  std::optional<int64_t> bytes;
  std::optional<std::string> module;  ///< module loads: the file, when loaded from one
  /// Graph launches and instantiations: the graph's kernels (CUDA graphs, child graphs included).
  std::optional<std::vector<std::string>> graph_kernels;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("api", s.api);
    v("result", s.result);
    v("result_name", s.result_name);
    v("pid", s.pid);
    v("tid", s.tid);
    v("t_ms", s.t_ms);
    v("duration_us", s.duration_us);
    v("in_progress", s.in_progress);
    v("kernel", s.kernel);
    v("grid", s.grid);
    v("block", s.block);
    v("shared_mem_bytes", s.shared_mem_bytes);
    v("stream", s.stream);
    v("address", s.address);
    v("source", s.source);
    v("bytes", s.bytes);
    v("module", s.module);
    v("graph_kernels", s.graph_kernels);
  }
};

struct GpuAllocation {
  std::string address;  ///< "0x..."
  int64_t bytes = 0;
  std::string api;
  std::string state;  ///< "live" or "freed"
  int64_t pid = 0;
  double allocated_ms = 0;
  std::optional<double> freed_ms;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("address", s.address);
    v("bytes", s.bytes);
    v("api", s.api);
    v("state", s.state);
    v("pid", s.pid);
    v("allocated_ms", s.allocated_ms);
    v("freed_ms", s.freed_ms);
  }
};

struct GpuErrorCount {
  std::string api;
  int64_t result = 0;
  std::optional<std::string> result_name;
  int64_t count = 0;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("api", s.api);
    v("result", s.result);
    v("result_name", s.result_name);
    v("count", s.count);
  }
};

/// One process's record file.
struct GpuRecordedProcess {
  int64_t pid = 0;
  std::string exe;
  std::vector<std::string> hooks;  ///< "hip", "cupti"
  int64_t calls = 0;               ///< every call seen (the ring keeps the newest)
  int64_t launches = 0;
  int64_t failed_calls = 0;
  int64_t calls_kept = 0;
  int64_t allocations_not_tracked = 0;      ///< the table was full
  std::optional<std::string> switched_off;  ///< why the recorder turned itself off
  std::optional<std::string> note;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("pid", s.pid);
    v("exe", s.exe);
    v("hooks", s.hooks);
    v("calls", s.calls);
    v("launches", s.launches);
    v("failed_calls", s.failed_calls);
    v("calls_kept", s.calls_kept);
    v("allocations_not_tracked", s.allocations_not_tracked);
    v("switched_off", s.switched_off);
    v("note", s.note);
  }
};

/// One block of PyTorch's caching allocator, from the job's own allocator snapshot
/// (torch.cuda.memory._record_memory_history + _dump_snapshot; `run --torch-snapshot`).
struct TorchBlock {
  std::string address;  ///< "0x..."
  int64_t bytes = 0;
  int64_t requested_bytes = 0;      ///< what the tensor asked for (bytes is rounded up)
  std::string state;                ///< "active_allocated", "active_pending_free", "inactive"
  std::vector<std::string> frames;  ///< where it was allocated: the Python frames, innermost first
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("address", s.address);
    v("bytes", s.bytes);
    v("requested_bytes", s.requested_bytes);
    v("state", s.state);
    v("frames", s.frames);
  }
};

/// A segment the caching allocator took from the driver (one cudaMalloc), and its blocks.
struct TorchSegment {
  std::string address;
  int64_t bytes = 0;
  int64_t device = 0;
  std::string type;  ///< "small", "large"
  std::vector<TorchBlock> blocks;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("address", s.address);
    v("bytes", s.bytes);
    v("device", s.device);
    v("type", s.type);
    v("blocks", s.blocks);
  }
};

struct TorchMemory {
  std::string source;  ///< the snapshot file the job wrote
  std::vector<TorchSegment> segments;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("source", s.source);
    v("segments", s.segments);
  }
};

/// Where an address (a fault's) falls among the recorded allocations.
struct GpuAddressAttribution {
  std::string address;
  std::string relation;  ///< "inside", "past-end", "before-start", "inside-freed", "none"
  std::optional<GpuAllocation> allocation;
  std::optional<int64_t> offset;  ///< from the allocation's start (inside) or end (past-end)
  std::string summary;            ///< "4 KiB past the end of a 512 KiB buffer allocated by cuMemAlloc_v2 at ..."
  /// Inside PyTorch's segments (from its allocator snapshot): the tensor block it is in or past.
  std::optional<TorchBlock> tensor;
  std::optional<std::string> tensor_summary;  ///< "1.5 MiB past the end of a 256 KiB tensor allocated at ..."
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("address", s.address);
    v("relation", s.relation);
    v("allocation", s.allocation);
    v("offset", s.offset);
    v("summary", s.summary);
    v("tensor", s.tensor);
    v("tensor_summary", s.tensor_summary);
  }
};

/// gpu_calls.json.
struct GpuCalls {
  int64_t schema_version = 1;
  std::vector<GpuRecordedProcess> processes;
  std::vector<GpuCall> calls;        ///< the newest kept calls of every process, oldest first
  std::vector<GpuCall> candidates;   ///< launches since the last successful synchronisation, newest first
  std::vector<GpuCall> in_progress;  ///< synchronisations entered and not returned
  std::vector<GpuErrorCount> errors;
  std::vector<GpuAllocation> allocations;           ///< live, then the most recently freed
  std::map<std::string, int64_t> allocation_sizes;  ///< "64 KiB-128 KiB" -> count
  std::vector<GpuAddressAttribution> attributions;  ///< faulting addresses from the kernel log
  std::vector<NotCollected> not_recorded;
  std::optional<TorchMemory> torch_memory;  ///< `run --torch-snapshot`: PyTorch's own allocator snapshot
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("schema_version", s.schema_version);
    v("processes", s.processes);
    v("calls", s.calls);
    v("candidates", s.candidates);
    v("in_progress", s.in_progress);
    v("errors", s.errors);
    v("allocations", s.allocations);
    v("allocation_sizes", s.allocation_sizes);
    v("attributions", s.attributions);
    v("not_recorded", s.not_recorded);
    v("torch_memory", s.torch_memory);
  }

  /// Calls that returned an error (every process, from the counters).
  int64_t FailedCalls() const;
};

/// One error compute-sanitizer's memcheck reported ("Invalid __global__ write of size 4 bytes").
struct SanitizerError {
  std::string kind;  ///< "Invalid __global__ write"
  std::optional<int64_t> access_bytes;
  std::string kernel;                    ///< as the tool prints it
  std::optional<std::string> pc_offset;  ///< "0xb0"
  std::optional<std::string> file;       ///< with -lineinfo
  std::optional<int64_t> line;
  std::optional<std::vector<int64_t>> thread;
  std::optional<std::vector<int64_t>> block;
  std::optional<std::string> address;
  std::optional<std::string> problem;   ///< "is out of bounds", "is misaligned"
  std::optional<std::string> relation;  ///< "1 bytes after", "inside"
  std::optional<std::string> nearest_allocation;
  std::optional<int64_t> nearest_allocation_bytes;
  std::vector<std::string> host_frames;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("kind", s.kind);
    v("access_bytes", s.access_bytes);
    v("kernel", s.kernel);
    v("pc_offset", s.pc_offset);
    v("file", s.file);
    v("line", s.line);
    v("thread", s.thread);
    v("block", s.block);
    v("address", s.address);
    v("problem", s.problem);
    v("relation", s.relation);
    v("nearest_allocation", s.nearest_allocation);
    v("nearest_allocation_bytes", s.nearest_allocation_bytes);
    v("host_frames", s.host_frames);
  }
};

/// One step of `run --escalate`: a rerun of the job and what it showed.
struct EscalationStep {
  std::string step;  ///< "sync" (synchronous launches) or "sanitizer"
  std::vector<std::string> command;
  std::vector<std::string> environment;  ///< what the step set ("CUDA_LAUNCH_BLOCKING=1")
  std::optional<int64_t> exit_status;
  double seconds = 0;
  std::string outcome;  ///< one line
  std::optional<GpuCall> failing_launch;
  std::vector<SanitizerError> errors;
  std::optional<int64_t> errors_reported;  ///< memcheck's "ERROR SUMMARY: N errors"
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("step", s.step);
    v("command", s.command);
    v("environment", s.environment);
    v("exit_status", s.exit_status);
    v("seconds", s.seconds);
    v("outcome", s.outcome);
    v("failing_launch", s.failing_launch);
    v("errors", s.errors);
    v("errors_reported", s.errors_reported);
  }
};

/// escalation.json: the chain of evidence from an asynchronous GPU error to its kernel.
struct Escalation {
  double job_seconds = 0;  ///< the failed run's own duration, for comparison
  std::vector<EscalationStep> steps;
  std::optional<std::string> kernel;    ///< the faulting kernel, when a step named it
  std::optional<std::string> location;  ///< "file.cu:42", from the sanitizer
  std::string summary;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("job_seconds", s.job_seconds);
    v("steps", s.steps);
    v("kernel", s.kernel);
    v("location", s.location);
    v("summary", s.summary);
  }
};

/// "(128,1,1)" for a grid, block or thread; "?" when unknown.
std::string DimsText(const std::optional<std::vector<int64_t>>& dims);

/// "grid (64,1,1), block (256,1,1)" for a kernel launch; "" for a call without a shape of its own
/// (a CUDA graph launch: its kernels' shapes are listed with them).
std::string LaunchShapeText(const GpuCall& call);

Json ToJson(const GpuCalls& calls);
Json ToJson(const GpuCall& call);
Json ToJson(const GpuErrorCount& count);
Json ToJson(const GpuAddressAttribution& attribution);
Json ToJson(const Escalation& escalation);
Escalation EscalationFromJson(const Json& json);
/// Lenient: a member of another shape stays at its default.
GpuCalls GpuCallsFromJson(const Json& json);

}  // namespace gputriage::core
