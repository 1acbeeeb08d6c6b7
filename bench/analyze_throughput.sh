#!/usr/bin/env bash
# Throughput of `gputriage analyze` with the full knowledge base over a large log built from
# real lines (the kb/issues example logs and the captured fixtures, repeated), compared in the
# same run with `LC_ALL=C grep -E -f` over the same data and the same patterns (the knowledge
# base's signal patterns, translated to POSIX ERE: \d -> [0-9], (?:  -> (, (?i) dropped).
# Prints a Markdown table: wall time, MB/s and peak RSS of each.
#   bench/analyze_throughput.sh GPUTRIAGE [SIZE_MB]      (default 1024)
set -euo pipefail
gt=$1
size_mb=${2:-1024}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Seed: every real line we have, without the "# source:" headers.
cat kb/issues/*.log tests/fixtures/kernel_log/*.txt tests/fixtures/run/*.txt | grep -v '^# source:' > "$work/seed.txt"
seed_bytes=$(stat -c %s "$work/seed.txt")
reps=$(( size_mb * 1024 * 1024 / seed_bytes + 1 ))
for ((i = 0; i < reps; i++)); do cat "$work/seed.txt"; done > "$work/big.log"
truncate -s $(( size_mb * 1024 * 1024 )) "$work/big.log"
bytes=$(stat -c %s "$work/big.log")
python3 - "$work/patterns.txt" <<'PY'
import glob, re, sys
out = []
for f in sorted(glob.glob("kb/issues/*.yaml")):
    for m in re.finditer(r"^\s*pattern:\s*'(.*)'\s*$", open(f).read(), re.M):
        p = m.group(1).replace("''", "'")
        p = p.replace("(?i)", "").replace("(?:", "(").replace(r"\d", "[0-9]")
        out.append(p)
open(sys.argv[1], "w").write("\n".join(out) + "\n")
print(f"{len(out)} patterns", file=sys.stderr)
PY
npat=$(wc -l < "$work/patterns.txt")
measure() {  # label, command...
  local label=$1; shift
  # Output to a file, not /dev/null: GNU grep stops at the first match when it sees /dev/null.
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/out" 2> "$work/stderr" || true
  grep -v "^Command exited" "$work/stderr" | head -3 >&2 || true
  read -r secs kb < <(tail -n 1 "$work/time")
  awk -v l="$label" -v s="$secs" -v k="$kb" -v b="$bytes" \
    'BEGIN { printf "| %s | %.2f s | %.0f MB/s | %.1f MiB |\n", l, s, (s > 0 ? b / 1e6 / s : 0), k / 1024 }'
}
echo "| command ($((bytes / 1024 / 1024)) MiB of real log lines, $npat patterns) | wall | throughput | peak RSS |"
echo "|---|---|---|---|"
measure "gputriage analyze (full knowledge base + general classifier)" "$gt" analyze --json "$work/big.log"
measure "LC_ALL=C grep -a -E -c -f patterns" env LC_ALL=C grep -a -E -c -f "$work/patterns.txt" "$work/big.log"
