#!/usr/bin/env bash
# Runs on the 16-core GPU machine: every fuzz target packed by scripts/device/pack-fuzz, side by
# side, to --runs executions or --seconds (arguments are passed to scripts/fuzz-campaign).
# Results (summary, each target's logs, any crashing input) under $OUT/fuzz.
set -u
out=${OUT:-/tmp/gputriage-out}
mkdir -p "$out/fuzz"
export LD_LIBRARY_PATH=$PWD/dist/fuzz/lib
nproc > "$out/fuzz/nproc"
scripts/fuzz-campaign --bin dist/fuzz/bin --work /tmp/gputriage-fuzz "$@" > "$out/fuzz/summary.txt" 2>&1
echo "rc=$?" >> "$out/fuzz/summary.txt"
for d in /tmp/gputriage-fuzz/*/; do
  n=$(basename "$d")
  mkdir -p "$out/fuzz/$n"
  tail -c 20000 "$d/main.log" > "$out/fuzz/$n/main.log.tail" 2>/dev/null
  cp "$d"/artifacts/* "$out/fuzz/$n/" 2>/dev/null
  echo "$(find "$d/corpus" -type f | wc -l) files, $(du -sk "$d/corpus" | cut -f1) KiB" > "$out/fuzz/$n/corpus-size"
done
cat "$out/fuzz/summary.txt"
