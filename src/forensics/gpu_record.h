// Reading the flight recorder's files (src/recorder/ring_format.h) after the job: every
// process's calls, the candidates for an asynchronous fault, the synchronisations still in
// progress, failed calls by code, the allocation table, and where a faulting address from the
// kernel log falls among the allocations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error_codes.h"
#include "core/gpu_calls.h"
#include "core/result.h"
#include "forensics/kmsg_watch.h"

namespace gputriage::forensics {

struct GpuRecordLimits {
  size_t max_calls = 2000;  ///< the newest calls written to gpu_calls.json
  size_t max_candidates = 64;
  size_t max_allocations = 2000;  ///< live first, then the most recently freed
};

/// One record file: validated (magic, version, sizes against the file's size) and read with
/// torn records (a crash in the middle of a write) skipped. Fails naming the file.
core::Result<core::GpuCalls> ReadGpuRecordFile(const std::string& path, const catalog::ErrorCodes& errors,
                                               const GpuRecordLimits& limits = {});

/// The same from the file's bytes (8-byte aligned; fuzzing and tests); `path` names it in errors.
core::Result<core::GpuCalls> ParseGpuRecord(std::string_view file, const std::string& path,
                                            const catalog::ErrorCodes& errors, const GpuRecordLimits& limits = {});

/// Every "gpu-record.<pid>.ring" in `dir`, merged (calls ordered by time across processes). A
/// file that cannot be read is a `not_recorded` entry; a directory without any file says why
/// (nothing in the job loaded the recorder).
core::GpuCalls ReadGpuRecordDir(const std::string& dir, const catalog::ErrorCodes& errors,
                                const GpuRecordLimits& limits = {});

/// The faulting addresses the kernel log names for the job: NVIDIA Xid 31 "faulted @ 0x..."
/// and amdgpu VM faults "at address 0x...". Another process's records are skipped.
std::vector<uint64_t> FaultAddresses(const std::vector<CorrelatedRecord>& records);

/// Where `address` falls among the recorded allocations: inside a live one, inside a freed one,
/// up to 1 MiB past the end or before the start of the nearest one, or in none.
core::GpuAddressAttribution AttributeAddress(const core::GpuCalls& calls, uint64_t address);

/// The CUPTI library the recorder loads in CUDA jobs: $GPUTRIAGE_CUPTI when set, else the first
/// libcupti.so* of the CUDA toolkit ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda: extras/CUPTI/lib64,
/// lib64, lib, targets/x86_64-linux/lib) or of the system (/usr/lib/x86_64-linux-gnu). nullopt
/// when there is none: the recorder then tries the loader's search path and, failing that,
/// records nothing of CUDA and says so.
std::optional<std::string> FindCupti();

/// Whether `result` of `api` is a context-killing (sticky) error in the error tables.
bool IsStickyError(const catalog::ErrorCodes& errors, std::string_view api, int64_t result);

/// "hip" for HIP runtime calls (hipMalloc, __hipPushCallConfiguration), else "cuda".
std::string_view ApiVendor(std::string_view api);

/// A record directory for one run of the job and the environment that loads the recorder into
/// it: LD_PRELOAD (HIP), CUDA_INJECTION64_PATH (the CUDA driver loads it and calls its
/// InitializeInjection), GPUTRIAGE_RECORD_DIR and the CUPTI library to use. The directory and
/// its files go when the session ends.
class RecordSession {
 public:
  RecordSession() = default;
  ~RecordSession();
  RecordSession(const RecordSession&) = delete;
  RecordSession& operator=(const RecordSession&) = delete;

  /// Creates "<parent>/.record.partial-<tag>_XXXXXX" (a name RemoveStalePartials knows) for
  /// `library` (libgputriage-record.so). When that cannot be done, not_possible() says why and
  /// env() is empty: the job runs without the recorder.
  void Start(const std::string& library, const std::string& parent, const std::string& tag);

  const std::vector<std::string>& env() const { return env_; }
  const std::optional<std::string>& not_possible() const { return not_possible_; }

  /// What the job's processes recorded (ReadGpuRecordDir), with what this session could not
  /// arrange (another CUDA_INJECTION64_PATH already set). When nothing was recorded, `command`
  /// (the job's argv[0]) says why when it can: a static or a 32-bit executable.
  core::GpuCalls Read(const catalog::ErrorCodes& errors, const std::string& command) const;

 private:
  std::string dir_;
  std::optional<std::string> not_possible_;
  std::vector<std::string> notes_;
  std::vector<std::string> env_;
};

/// Why no process of a job recorded anything, from its executable (`executable` resolved, or
/// ""): statically linked, 32-bit, or the general list of reasons.
std::string WhyNothingWasRecorded(const std::string& executable);

/// "4 KiB", "1.5 MiB".
std::string HumanBytes(uint64_t bytes);

}  // namespace gputriage::forensics
