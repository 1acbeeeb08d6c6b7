// `run` and PyTorch's flight recorder: a job that enables it (TORCH_NCCL_DUMP_ON_TIMEOUT, with
// TORCH_FR_BUFFER_SIZE or the older TORCH_NCCL_TRACE_BUFFER_SIZE) has every rank write its last
// collectives to `<prefix><rank>` when a collective times out. The dumps the job wrote during the
// run are copied into the bundle, read (forensics/torch_flight_recorder.h) and compared
// (core::CompareCollectives); what they say becomes findings.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "core/model.h"

namespace gputriage::forensics {

/// Where PyTorch writes the dumps: TORCH_FR_DUMP_TEMP_FILE, else TORCH_NCCL_DEBUG_INFO_TEMP_FILE,
/// else its default "/tmp/nccl_trace_rank_" (`lookup` is getenv or a test's).
std::string FlightRecorderPrefix(const std::function<const char*(const char*)>& lookup);

/// Whether the environment asks PyTorch to dump on a collective timeout.
bool FlightRecorderDumpsOnTimeout(const std::function<const char*(const char*)>& lookup);

/// The dumps found, their bytes (each copied into the bundle as `fr_trace_rank_<N>`) and what
/// they say; `problems` name files that were there but not taken.
struct FlightRecorderFiles {
  core::CollectiveReport report;
  std::vector<std::pair<std::string, std::string>> files;  ///< bundle name, bytes
  std::vector<std::string> problems;
};

/// Reads the files `<prefix><digits>` written at or after `since`: regular files (not links) of
/// this user, at most 64 of them and 64 MiB each. nullopt when there is none.
std::optional<FlightRecorderFiles> CollectFlightRecorderDumps(const std::string& prefix,
                                                              std::filesystem::file_time_type since);

/// The findings of the comparison: a rank that never entered a collective the others wait in
/// ("collective.rank_never_entered"), ranks that disagree on a collective
/// ("collective.mismatch"), a collective that never completed on a rank
/// ("collective.not_completed", when neither of the others explains it).
std::vector<core::Finding> CollectiveFindings(const core::CollectiveReport& report);

}  // namespace gputriage::forensics
