#!/usr/bin/env bash
# `gputriage analyze -` over a stream far larger than memory: SIZE_GB (default 10) of real log
# lines (the kb/issues example logs and the captured fixtures, repeated) piped through
# stdin, so nothing can be mapped or read twice. Prints wall time, throughput and peak RSS (GNU
# time), and the line and byte counts analyze reports, which must equal what went in.
#   bench/analyze_streaming.sh GPUTRIAGE [SIZE_GB]
set -euo pipefail
gt=$(realpath "$1")
size_gb=${2:-10}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat kb/issues/*.log tests/fixtures/kernel_log/*.txt tests/fixtures/run/*.txt | grep -v '^# source:' > "$work/seed.txt"
bytes=$((size_gb * 1024 * 1024 * 1024))
# A 64 MiB block of the seed, cat over and over; head cuts at exactly SIZE_GB.
for ((i = 0; i < 64 * 1024 * 1024 / $(stat -c %s "$work/seed.txt") + 1; i++)); do cat "$work/seed.txt"; done > "$work/block.txt"
/usr/bin/time -f "%e %M" -o "$work/time" \
  bash -c 'while cat "$1"; do :; done 2>/dev/null | head -c "$2" | "$3" analyze --json - > "$4"' _ "$work/block.txt" "$bytes" "$gt" "$work/out.json" || true
read -r secs kb < <(tail -n 1 "$work/time")
python3 - "$work/out.json" "$bytes" "$secs" "$kb" <<'PY'
import json, sys
out, want, secs, kb = json.load(open(sys.argv[1])), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
got = out["input"]["bytes"]
print(f"| input | wall | throughput | peak RSS (whole pipeline) | bytes read | lines | category |")
print(f"|---|---|---|---|---|---|---|")
print(f"| {want / 2**30:.0f} GiB on stdin | {secs:.1f} s | {want / 1e6 / secs:.0f} MB/s | {kb / 1024:.1f} MiB | "
      f"{got} ({'all' if got == want else 'MISSING ' + str(want - got)}) | {out['input']['lines']} | {out['category']} |")
sys.exit(0 if got == want else 1)
PY
