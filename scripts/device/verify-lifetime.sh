#!/usr/bin/env bash
# Runs on the GPU machine (issue 11): does `gputriage run --timeout` leave GPU workers behind?
# tests/gpu/torch_orphan_workers.py forks a worker that ignores SIGTERM and a setsid worker, each
# holding 1 GiB of GPU memory. For the build before the fix (dist/gputriage-old, if present) and
# the current one (dist/gputriage), runs the job under --timeout 20 and records, 3 s after
# gputriage returned, which of its processes still exist and what nvidia-smi says they hold; then
# kills any leftovers. Also times `gputriage run -- yes | head -1` (must end, not hang).
# Results: $OUT/lifetime.log.
set -u
out=${OUT:-/tmp/gputriage-out}
mkdir -p "$out"
log=$out/lifetime.log
export GPUTRIAGE_HOME=$(mktemp -d)
for which in old new; do
  if [ $which = old ]; then gt=$PWD/dist/gputriage-old/bin/gputriage; else gt=$PWD/dist/gputriage/bin/gputriage; fi
  [ -x "$gt" ] || { echo "== $which: $gt missing" >> "$log"; continue; }
  echo "== $which: run --timeout 20 -- python3 tests/gpu/torch_orphan_workers.py" >> "$log"
  start=$(date +%s.%N)
  timeout 120 "$gt" run --timeout 20 --bundle-dir "$GPUTRIAGE_HOME/b-$which" -- python3 tests/gpu/torch_orphan_workers.py \
    > "$out/lifetime-$which.out" 2> "$out/lifetime-$which.err"
  rc=$?
  echo "rc=$rc after $(awk -v a="$start" -v b="$(date +%s.%N)" "BEGIN{printf \"%.1f\", b-a}") s" >> "$log"
  grep -E "worker|parent" "$out/lifetime-$which.out" >> "$log"
  tail -5 "$out/lifetime-$which.err" >> "$log"
  sleep 3
  echo "-- processes of the job still alive 3 s later:" >> "$log"
  ps -eo pid,ppid,pgid,sid,stat,etimes,cmd | grep '[t]orch_orphan_workers' >> "$log" || echo "none" >> "$log"
  echo "-- nvidia-smi compute apps:" >> "$log"
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader >> "$log" 2>&1
  pkill -9 -f torch_orphan_workers && echo "(leftovers killed by the script)" >> "$log"
  sleep 2
done
gt=$PWD/dist/gputriage/bin/gputriage
echo "== run -- yes | head -1 (new)" >> "$log"
start=$(date +%s.%N)
timeout 30 bash -c "'$gt' run -- yes | head -1" >> "$log" 2>&1
rc=$?
echo "rc=$rc after $(awk -v a="$start" -v b="$(date +%s.%N)" "BEGIN{printf \"%.1f\", b-a}") s (124 = still running after 30 s)" >> "$log"
cat "$log"
