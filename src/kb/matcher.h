// Matching input against every known issue at once: each signal pattern is compiled once into
// an RE2::Set per source, and the input is streamed line by line, so the cost per line is one
// DFA pass whatever the number of entries. Then entries whose required signals all matched are
// ranked by the evidence they have.
#pragma once

#include <re2/set.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "kb/known_issue.h"

namespace gputriage::kb {

/// Where a line came from. kUnknown (a plain log with stderr and kernel log mixed) is matched
/// against the stderr, kmsg and any patterns.
enum class LineSource { kStderr, kKmsg, kUnknown, kFrames, kSignal };

/// One line that made a signal match.
struct Hit {
  size_t signal = 0;       ///< index into KnownIssue::signals
  size_t line_number = 0;  ///< 1-based, within its input
  std::string line;        ///< the line (clipped to 400 bytes)
  std::string input;       ///< which input ("stderr.tail", "job.log", "frames")
};

/// What is known about the machine, from a snapshot, for conditions. Unknown stays empty.
struct Facts {
  std::vector<std::pair<std::string, std::string>> versions;  ///< ("rocm", "6.1.3"), ("cuda", "12.4")
  std::vector<std::string> gpu_archs;                         ///< "gfx1100", "sm_90"
  std::vector<std::pair<std::string, std::string>> env;       ///< set variables
  size_t gpu_count = 0;                                       ///< GPUs in the snapshot
  /// Hardware health the snapshot shows, one line each ("GPU 0000:61:00.0: 2 uncorrectable
  /// ECC errors (volatile)"): uncorrectable ECC, remapped-row failures or pending remaps,
  /// retired pages pending, AMD RAS uncorrectable counts.
  std::vector<std::string> hardware_alerts;
  /// What changed since the last good snapshot (analyze --baseline), one line each.
  std::vector<std::string> changes;
  /// Of those, the driver's or the OS kernel's (the amdgpu driver lives in it) version changes,
  /// and the GPU stack's components' (CUDA/ROCm runtimes and libraries, frameworks, toolchains).
  std::vector<std::string> driver_changes;
  std::vector<std::string> stack_changes;
};

enum class ConditionResult { kTrue, kFalse, kUnknown };

struct IssueMatch {
  const KnownIssue* issue = nullptr;
  double score = 0;
  std::vector<Hit> hits;  ///< one per matched signal (its first line)
  /// Per condition: "true", "false" or "unknown" with what was compared.
  std::vector<std::string> condition_notes;
};

/// Compiles the patterns of `issues` (which must outlive the matcher). Fails naming the entry
/// file and line of the first pattern RE2 rejects.
class Matcher {
 public:
  static core::Result<std::unique_ptr<Matcher>> Build(const std::vector<KnownIssue>& issues);

  /// A fresh scan: clears what earlier Feed calls found.
  void Reset();

  /// Matches one line (without its newline). Returns how many signals matched for the first time.
  size_t Feed(LineSource source, std::string_view line, size_t line_number, std::string_view input);

  /// Entries whose required signals all matched and whose conditions are not known to be
  /// false, best first. `facts` may be null (no snapshot: conditions are unknown).
  std::vector<IssueMatch> Results(const Facts* facts) const;

  size_t pattern_count() const { return refs_.size(); }

  /// The distinct patterns that lines from `source` are matched against and that have not
  /// matched yet: what a prefilter over many lines at once must look for.
  std::vector<std::string> PendingPatterns(LineSource source) const;

 private:
  Matcher() = default;
  struct Ref {
    size_t issue;
    size_t signal;
  };
  struct SourceSet {
    std::unique_ptr<RE2::Set> set;
    std::vector<size_t> refs;  // set index -> index into refs_
  };
  const SourceSet& SetFor(LineSource source) const;

  const std::vector<KnownIssue>* issues_ = nullptr;
  std::vector<Ref> refs_;
  SourceSet stderr_, kmsg_, unknown_, frames_, signal_;
  // hits_[issue][signal]: the first line that matched it.
  std::vector<std::vector<std::optional<Hit>>> hits_;
  std::vector<int> scratch_;
};

/// Evaluates one condition against the facts.
ConditionResult Evaluate(const Condition& condition, const Facts& facts, std::string* note);

/// True when `version` ("6.1.3", "12.4.127", "2.5.1+rocm6.2") satisfies `range`
/// (">=6.0, <6.2", "==12.4", "<2.0"); nullopt when either does not parse.
std::optional<bool> VersionInRange(std::string_view version, std::string_view range);

}  // namespace gputriage::kb
