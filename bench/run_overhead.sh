#!/usr/bin/env bash
# Overhead of `gputriage run` on a job that does not crash: the same command run directly and
# under the supervisor, N times each in the same session, after one warm-up run of each (page
# cache, GPU clocks); the order alternates every round (direct first, then supervised first) so
# drift does not favour either. Prints the medians of the wall times and the overhead as a
# Markdown table row.
#   bench/run_overhead.sh GPUTRIAGE N LABEL -- CMD [ARGS...]
set -euo pipefail
gt=$1 n=$2 label=$3
shift 3
[ "$1" = "--" ] && shift
bundles=$(mktemp -d)
trap 'rm -rf "$bundles"' EXIT
now() { date +%s.%N; }
direct=() supervised=()
run_direct() {
  local t0 t1
  t0=$(now); "$@" > /dev/null 2>&1; t1=$(now)
  direct+=("$(awk "BEGIN{print $t1 - $t0}")")
}
run_supervised() {
  local t0 t1
  t0=$(now); "$gt" run --quiet --no-snapshot --bundle-dir "$bundles" -- "$@" > /dev/null 2>&1; t1=$(now)
  supervised+=("$(awk "BEGIN{print $t1 - $t0}")")
}
run_direct "$@"
run_supervised "$@"
direct=() supervised=()
for ((i = 0; i < n; i++)); do
  if ((i % 2 == 0)); then
    run_direct "$@"; run_supervised "$@"
  else
    run_supervised "$@"; run_direct "$@"
  fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
md=$(median "${direct[@]}")
ms=$(median "${supervised[@]}")
overhead=$(awk "BEGIN{print ($ms - $md) / $md * 100}")
printf '| %s | %d | %.3f s | %.3f s | %+.2f %% |\n' "$label" "$n" "$md" "$ms" "$overhead"
