#!/usr/bin/env bash
# Peak RSS and wall time of `gputriage inspect` on a large AMD library: by default Debian's
# librocsparse.so.0 (package librocsparse0, 1.3 GB, a 1.2 GB .hip_fatbin section of offload
# bundles). Each GPUTRIAGE given is run RUNS times (default 3; GNU time -v), text and --json to
# /dev/null, and the median wall time and the largest peak RSS are printed, one row per binary:
# give the build before a change and after it to compare them in one run.
#   bench/inspect_rss.sh GPUTRIAGE... [-- FILE]     (RUNS=5 bench/inspect_rss.sh ...)
#
# Measured on the 2-core build VM (Debian 12, librocsparse0 5.3.0+dfsg-2, warm page cache,
# --no-snapshot, load average 7-10 from other builds), 2026-12-05, before (main 4dd1a75: the
# .hip_fatbin section read whole) and after (StreamHipFatbin: one offload bundle at a time):
#   | build  | output | peak RSS  | wall                                                  |
#   | before | text   | 1,311 MiB | 10.2, 15.3 s paired single runs; 47 s median (bench)  |
#   | before | --json | 1,315 MiB | 61 s median (bench)                                   |
#   | after  | text   |   120 MiB | 7.7, 11.7 s paired single runs; 6.4 s median (bench)  |
#   | after  | --json |   121 MiB | 7.4 s median (bench)                                  |
# (the earlier, idle machine: 1.34 GB and ~2 s before; this VM's absolute times are noisy, the
# pairs in one run are the comparison).
set -euo pipefail
binaries=()
file=/usr/lib/x86_64-linux-gnu/librocsparse.so.0
while (($#)); do
  if [[ $1 == -- ]]; then
    file=$2
    shift 2
    continue
  fi
  binaries+=("$(realpath "$1")")
  shift
done
((${#binaries[@]})) || { echo "usage: $0 GPUTRIAGE... [-- FILE]" >&2; exit 2; }
[[ -r $file ]] || { echo "$file: not readable (apt-get install -y --no-install-recommends librocsparse0)" >&2; exit 77; }
runs=${RUNS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat "$file" > /dev/null  # warm the page cache: every binary reads the same cached bytes
echo "file: $file ($(stat -L -c %s "$file") bytes), $runs run(s) each, $(nproc) CPU(s)"
printf '| binary | mode | peak RSS (max) | wall (median) |\n|---|---|---|---|\n'
for gt in "${binaries[@]}"; do
  for mode in text json; do
    flags=(--no-snapshot)
    [[ $mode == json ]] && flags+=(--json)
    : > "$work/runs"
    for ((i = 0; i < runs; i++)); do
      /usr/bin/time -v -o "$work/time" "$gt" inspect "${flags[@]}" "$file" > /dev/null 2>&1 || true
      rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time")
      wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time")
      echo "$rss $wall" >> "$work/runs"
    done
    python3 - "$work/runs" "$gt" "$mode" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def seconds(t):  # GNU time: [h:]m:ss.ss
    s = 0.0
    for part in t.split(":"):
        s = s * 60 + float(part)
    return s
rss = max(int(r[0]) for r in rows)
wall = statistics.median(seconds(r[1]) for r in rows)
print(f"| {sys.argv[2]} | {sys.argv[3]} | {rss / 1024:.0f} MiB | {wall:.2f} s |")
PY
  done
done
