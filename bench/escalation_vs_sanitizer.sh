#!/usr/bin/env bash
# `gputriage run --escalate` against the peer it replaces, the whole job under compute-sanitizer
# (issue 12), on a machine with an NVIDIA GPU: for each faulting job, in one run, the job bare,
# `compute-sanitizer JOB`, and `gputriage run --escalate -- JOB` (the failed run, the synchronous
# rerun that names the kernel, the memcheck rerun restricted to it), wall seconds each, with the
# escalation's own step times and what it named.
#   bench/escalation_vs_sanitizer.sh GPUTRIAGE JOB...     (each JOB one quoted command line)
set -u
cd "$(dirname "$0")/.."
gt=$1; shift
work=$(mktemp -d)
secs() { python3 -c "print(round($2 - $1, 2))"; }
for job in "$@"; do
  start=$(date +%s.%N); $job > /dev/null 2>&1; end=$(date +%s.%N)
  echo "bare $job: $(secs "$start" "$end") s"
  start=$(date +%s.%N); timeout 300 compute-sanitizer $job > "$work/sanitizer.txt" 2>&1; end=$(date +%s.%N)
  echo "compute-sanitizer whole $job: $(secs "$start" "$end") s"
  start=$(date +%s.%N)
  "$gt" run --no-snapshot --escalate --bundle-dir "$work/bundles" -- $job > "$work/escalate.txt" 2>&1
  end=$(date +%s.%N)
  echo "gputriage run --escalate $job: $(secs "$start" "$end") s"
  grep -E "escalation (sync|sanitizer) \(|kernel:" "$work/escalate.txt" | cut -c1-300
  tail -3 "$work/sanitizer.txt"
done
rm -rf "$work"
