#!/usr/bin/env bash
# The flight recorder's cost (issue 12), on a machine with an NVIDIA GPU and PyTorch: a tight
# launch loop (tests/gpu/torch_launch_loop.py, x.add_(1) 200,000 times: microseconds per launch)
# and a 2-layer MLP training loop (tests/gpu/torch_train_loop.py, 3000 steps: seconds), each
# timed by the job itself, bare and with the recorder loaded exactly as `run --record` loads it.
# The launch loop also runs with CUPTI subscribed but nothing recorded (GPUTRIAGE_RECORD_BENCH=
# cupti-only: CUPTI's own share) and with GPUTRIAGE_RECORD_DRIVER_ALL=1. Configurations alternate
# within each round; all pinned to cores 2-7. Prints every run, then the medians.
#   bench/record_overhead.sh LIBGPUTRIAGE_RECORD.so [RUNS]        (default 7 rounds)
set -u
cd "$(dirname "$0")/.."
lib=$1 runs=${2:-7}
[ -f "$lib" ] || { echo "record_overhead: $lib not found" >&2; exit 2; }
out=$(mktemp)
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>&1)" | tee -a "$out"
cupti=$(find / -xdev -name 'libcupti.so*' 2>/dev/null | sort | head -1)
echo "cupti: ${cupti:-none found}" | tee -a "$out"
rec=/tmp/gt-rec-bench
# The recorder as `run --record` loads it (the same variables), writing to a scratch directory.
# (env runs commands, not shell functions: each line names taskset itself.)
rec_env() { mkdir -p $rec; rm -f $rec/*; env GPUTRIAGE_RECORD_DIR=$rec LD_PRELOAD="$lib" CUDA_INJECTION64_PATH="$lib" GPUTRIAGE_RECORD_CUPTI="$cupti" "$@"; }
launch="python3 tests/gpu/torch_launch_loop.py 200000"
train="python3 tests/gpu/torch_train_loop.py 3000"
for i in $(seq "$runs"); do
  taskset -c 2-7 $launch | sed 's/^/bare /' | tee -a "$out"
  GPUTRIAGE_RECORD_BENCH=cupti-only rec_env taskset -c 2-7 $launch | sed 's/^/cupti-only /' | tee -a "$out"
  rec_env taskset -c 2-7 $launch | sed 's/^/record /' | tee -a "$out"
  GPUTRIAGE_RECORD_DRIVER_ALL=1 rec_env taskset -c 2-7 $launch | sed 's/^/record-all /' | tee -a "$out"
done
for i in $(seq "$runs"); do
  taskset -c 2-7 $train | sed 's/^/bare /' | tee -a "$out"
  rec_env taskset -c 2-7 $train | sed 's/^/record /' | tee -a "$out"
done
ls -la $rec
python3 - "$out" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) (launch_loop|train_loop): .*?([0-9.]+) (us per launch|s, loss)", line)
    if m:
        runs.setdefault((m.group(2), m.group(1)), []).append(float(m.group(3)))
for (loop, config), values in sorted(runs.items()):
    print(f"median {loop} {config}: {statistics.median(values):.3f} over {len(values)} runs {values}")
PY
rm -f "$out"
