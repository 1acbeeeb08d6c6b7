// A crash bundle (docs/design.md "The crash bundle") as one typed model: the manifest, the process file,
// the snapshot, `run --repeat`'s statistics and the output tails, read by one function for
// `analyze`, `report` and the analyzer alike. The writers (forensics) use the same types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/collectives.h"
#include "core/gpu_calls.h"
#include "core/libs.h"
#include "core/model.h"
#include "core/process.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "core/telemetry.h"

namespace gputriage::core {

/// One file of the bundle layout in the manifest: present (with its size), or why not.
struct BundleFile {
  std::optional<bool> present;
  std::optional<uint64_t> bytes;
  std::optional<std::string> reason;  ///< why it is absent
  std::optional<std::string> note;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("present", s.present);
    v("bytes", s.bytes);
    v("reason", s.reason);
    v("note", s.note);
  }
};

struct BundleClassification {
  std::optional<std::string> kind;
  std::optional<std::string> category;
  std::optional<std::string> summary;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("kind", s.kind);
    v("category", s.category);
    v("summary", s.summary);
  }
};

struct BundleTimings {
  std::optional<std::string> started_at;  ///< UTC ISO-8601
  std::optional<double> duration_s;
  std::optional<double> capture_ms;
  std::optional<double> signal_to_bundle_ms;
  std::optional<double> bundle_write_ms;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("started_at", s.started_at);
    v("duration_s", s.duration_s);
    v("capture_ms", s.capture_ms);
    v("signal_to_bundle_ms", s.signal_to_bundle_ms);
    v("bundle_write_ms", s.bundle_write_ms);
  }
};

struct BundleOutput {
  std::optional<uint64_t> stdout_bytes;
  std::optional<uint64_t> stderr_bytes;
  std::optional<uint64_t> tail_limit_bytes;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("stdout_bytes", s.stdout_bytes);
    v("stderr_bytes", s.stderr_bytes);
    v("tail_limit_bytes", s.tail_limit_bytes);
  }
};

struct BundleKernelLog {
  std::optional<uint64_t> records;
  std::optional<uint64_t> lost;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("records", s.records);
    v("lost", s.lost);
  }
};

/// manifest.json's `capture`: the bundle of a process captured while running (`gputriage
/// capture PID`), not of a supervised run.
struct BundleCapture {
  std::optional<std::string> method;  ///< "ptrace-seize": PTRACE_SEIZE + PTRACE_INTERRUPT, then PTRACE_DETACH
  std::optional<int64_t> pid;         ///< the process asked for
  std::vector<int64_t> pids;          ///< every process captured (the descendants too with --tree)
  std::optional<uint64_t> threads_stopped;
  std::optional<uint64_t> threads_not_stopped;  ///< did not stop in time (blocked in the kernel)
  std::optional<double> stopped_ms;             ///< the longest time a process was held stopped
  std::optional<bool> exited_during_capture;    ///< the process exited while it was being captured
  std::optional<bool> was_stopped;              ///< it was already stopped (SIGSTOP) and was left so
  std::optional<bool> detached;                 ///< every stopped thread was let go
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("method", s.method);
    v("pid", s.pid);
    v("pids", s.pids);
    v("threads_stopped", s.threads_stopped);
    v("threads_not_stopped", s.threads_not_stopped);
    v("stopped_ms", s.stopped_ms);
    v("exited_during_capture", s.exited_during_capture);
    v("was_stopped", s.was_stopped);
    v("detached", s.detached);
  }
};

/// manifest.json.
struct BundleManifest {
  std::optional<int64_t> schema_version;
  std::optional<std::string> kind;  ///< "gputriage.crash-bundle"
  std::optional<std::string> tool_version;
  std::optional<std::string> created_at;
  std::optional<std::vector<std::string>> command;
  std::optional<int64_t> exit_status;
  std::optional<bool> traced;
  std::optional<BundleClassification> classification;
  std::optional<std::string> signature;
  std::optional<BundleTimings> timings;
  std::optional<BundleOutput> output;
  std::optional<BundleKernelLog> kernel_log;
  std::vector<NotCollected> not_collected;
  /// Only in the bundle of `gputriage capture`: how the running process was captured.
  std::optional<BundleCapture> capture;
  /// Every file of the layout, present or not: "stderr.tail" -> {present, bytes}.
  std::map<std::string, BundleFile> files;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("schema_version", s.schema_version);
    v("kind", s.kind);
    v("tool_version", s.tool_version);
    v("created_at", s.created_at);
    v("command", s.command);
    v("exit_status", s.exit_status);
    v("traced", s.traced);
    v("classification", s.classification);
    v("signature", s.signature);
    v("timings", s.timings);
    v("output", s.output);
    v("kernel_log", s.kernel_log);
    v("not_collected", s.not_collected);
    v("capture", s.capture);
    v("files", s.files);
  }

  /// True when the manifest lists `file` as present (false when absent, unknown or not listed).
  bool Has(const std::string& file) const;
};

/// repeat.json lists this many runs of a series at most (the counts cover them all).
inline constexpr size_t kRepeatSeriesMax = 10000;

/// One run of a `run --repeat` series.
struct RepeatRun {
  int64_t run = 0;  ///< 1-based, in the order they ran
  bool failed = false;
  int64_t exit_status = 0;  ///< as a shell reports it (128+N for signal N)
  bool timed_out = false;
  std::optional<std::string> signature;  ///< a failed run's
  std::optional<std::string> category;   ///< a failed run's docs/design.md category
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("run", s.run);
    v("failed", s.failed);
    v("exit_status", s.exit_status);
    v("timed_out", s.timed_out);
    v("signature", s.signature);
    v("category", s.category);
  }
};

/// How many failed runs of a series had one signature.
struct SignatureCount {
  std::string signature;
  int64_t count = 0;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("signature", s.signature);
    v("count", s.count);
  }
};

/// repeat.json: how a `run --repeat` series went, as each of its bundles records it.
struct RepeatStats {
  int64_t runs = 0;
  int64_t passes = 0;
  int64_t failures = 0;
  int64_t same_signature = 0;  ///< failures with this bundle's signature
  int64_t distinct_signatures = 0;
  std::string verdict;  ///< "deterministic", "flaky", "not-reproduced"
  /// Every run, in order (at most kRepeatSeriesMax; bundles written before this field have none).
  std::vector<RepeatRun> series;
  std::vector<SignatureCount> signatures;  ///< failed runs per signature, first seen first
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("runs", s.runs);
    v("passes", s.passes);
    v("failures", s.failures);
    v("same_signature", s.same_signature);
    v("distinct_signatures", s.distinct_signatures);
    v("verdict", s.verdict);
    v("series", s.series);
    v("signatures", s.signatures);
  }
};

Json ToJson(const BundleManifest& manifest);
Json ToJson(const RepeatStats& repeat);

/// A crash bundle as the history database indexes it (one row per bundle written by `run`).
struct BundleRecord {
  int64_t id = 0;
  std::string created_at;  ///< ISO-8601 UTC
  std::string path;        ///< the bundle directory
  std::string command;     ///< the job's command line
  std::optional<int64_t> exit_status;
  std::optional<std::string> signal;     ///< "SIGSEGV"; nullopt for exits and hangs
  std::optional<std::string> kind;       ///< classification kind ("null-dereference")
  std::optional<std::string> category;   ///< docs/design.md category ("illegal-address")
  std::optional<std::string> signature;  ///< groups runs of the same failure
  std::string summary;
  bool operator==(const BundleRecord&) const = default;
};

/// A crash bundle as read from its directory. Every member but the process file is optional.
struct Bundle {
  std::string dir;
  std::optional<BundleManifest> manifest;
  ProcessFile process;
  std::optional<Snapshot> snapshot;             ///< snapshot.json, at most kSnapshotMaxBytes
  std::optional<RepeatStats> repeat;            ///< only when the series ran more than once
  std::optional<GpuCalls> gpu_calls;            ///< gpu_calls.json (`run --record`)
  std::optional<Escalation> escalation;         ///< escalation.json (`run --escalate`)
  std::optional<LibraryReport> libraries;       ///< libraries.json: the crashed process's loaded libraries
  std::optional<CollectiveReport> collectives;  ///< collectives.json: PyTorch flight-recorder dumps compared
  std::string stdout_tail;
  std::string stderr_tail;
  std::string kmsg;  ///< kmsg.log: the raw /dev/kmsg records of the run
  /// telemetry.csv: GPU telemetry sampled during the run, t_s from the job's start.
  std::vector<TelemetrySample> telemetry;
  /// Files that are there but could not be used, and why ("snapshot.json: not valid JSON").
  std::vector<NotCollected> problems;
};

/// Bounds on what ReadBundle reads of each file, from what `run` writes. The output tails are
/// what run keeps of each stream (forensics::SuperviseOptions::tail_bytes, the manifest's
/// output.tail_limit_bytes); the JSON files are a few KiB (process.json with every thread's stack
/// and the maps reaches a few MiB); kmsg.log holds the run's kernel-log records. A tail or
/// kmsg.log larger than its bound is read from its end (noted in `problems`); a JSON file
/// larger than its bound is a problem, not read.
inline constexpr size_t kBundleTailMaxBytes = 1u << 20;
inline constexpr size_t kBundleProcessMaxBytes = 64u << 20;
inline constexpr size_t kBundleManifestMaxBytes = 4u << 20;
inline constexpr size_t kBundleRepeatMaxBytes = 64u << 10;
inline constexpr size_t kBundleKmsgMaxBytes = 64u << 20;
/// gpu_calls.json holds at most 2,000 calls, 64 candidates and 2,000 allocations (a few MiB).
inline constexpr size_t kBundleGpuCallsMaxBytes = 32u << 20;
inline constexpr size_t kBundleEscalationMaxBytes = 4u << 20;
inline constexpr size_t kBundleLibrariesMaxBytes = 16u << 20;
/// collectives.json: the newest 8 entries of at most 64 ranks' dumps, with their stacks.
inline constexpr size_t kBundleCollectivesMaxBytes = 16u << 20;
/// telemetry.csv: ~60 bytes per GPU per sample (8 GPUs at 2 Hz for 4 hours is ~14 MiB); a larger
/// file is read from its end (the samples nearest the failure).
inline constexpr size_t kBundleTelemetryMaxBytes = 32u << 20;

/// One file of a bundle as read: absent, there but unusable (`problem`), or its bytes. A tail
/// read from its end has both its bytes and a problem saying so.
struct BundleFileBytes {
  bool exists = false;
  std::string bytes;
  std::string problem;
};

/// The files ReadBundle reads, by name ("process.json", "stderr.tail", ...).
using BundleFileSet = std::map<std::string, BundleFileBytes>;

/// How ReadBundle reads one file of the layout: at most `max_bytes`, the last ones when `tail`
/// (the output tails, kmsg.log), else the file is a problem when larger (the JSON files).
struct BundleFileBound {
  size_t max_bytes = 0;
  bool tail = false;
};

/// The bound of `name` when it is one of the files ReadBundle reads; nullopt for any other name
/// (the core, findings.json, a file run does not write). Readers of a packed bundle use it so
/// that a member is read exactly as the same file in a directory would be.
std::optional<BundleFileBound> BundleFileBoundOf(std::string_view name);

/// `bytes` as ReadBundle would have read them of a file of `size` bytes: the whole, or the
/// problem that it is larger than `bound` (a tail keeps its last bound.max_bytes bytes). `bytes`
/// holds at most bound.max_bytes, the last ones when the file was larger and `bound.tail`.
BundleFileBytes BundleFileFromBytes(std::string bytes, uint64_t size, const BundleFileBound& bound);

/// The files of the bundle in `dir` that ReadBundle uses, each opened inside the directory with
/// O_NOFOLLOW | O_NONBLOCK (a symbolic link is not followed, a FIFO is not waited on), checked
/// with fstat to be a regular file and read with its bound (above) before anything is read.
/// Fails naming the directory when it cannot be opened.
Result<BundleFileSet> ReadBundleFiles(const std::string& dir);

/// The bundle from its files (as ReadBundleFiles gives them, or from memory: tests, fuzzing);
/// every JSON file goes through core::ParseJson. Fails naming the file when process.json is
/// unusable or not a JSON object ("<dir>/process.json: invalid JSON at line 1, column 2 (byte 2):
/// ..."), or when neither process.json nor manifest.json is there ("<dir>: not a crash bundle
/// (neither process.json nor manifest.json)"); a missing process.json beside a manifest and the
/// other files' problems go to Bundle::problems.
Result<Bundle> BundleFromFiles(const std::string& dir, BundleFileSet files);

/// ReadBundleFiles, then BundleFromFiles.
Result<Bundle> ReadBundle(const std::string& dir);

}  // namespace gputriage::core
