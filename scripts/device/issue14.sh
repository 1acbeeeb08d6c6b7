#!/usr/bin/env bash
# One GPU-machine call for issue 14 (`gputriage validate`): unpacks dist/device.tar.xz (dist/gputriage
# from scripts/bundle), then every level on the GPU with its time, --inject-fault, JUnit output,
# doctor --validate, and bench/validate_vs_torch.py (level-3 GEMM and bandwidth against PyTorch in
# the same run). Everything goes to $OUT/issue14.tar.gz. DURATION (default 30) sets level 3's phases.
set -u
out=${OUT:-/tmp/gputriage-out}
work=$out/issue14
mkdir -p "$work"
[ -f dist/device.tar.xz ] && tar xJf dist/device.tar.xz -C dist
gt=$PWD/dist/gputriage/bin/gputriage
duration=${DURATION:-30}
# PyTorch's cuDNN and cuBLAS wheels, for the record (validate finds them by itself).
python3 -c 'import torch,os;print(torch.__version__, torch.version.cuda)' > "$work/torch.txt" 2>&1
timed() {  # name, command...
  local name=$1; shift
  local t0=$EPOCHREALTIME
  "$@" > "$work/$name.out" 2> "$work/$name.err"
  local rc=$?
  echo "$name rc=$rc seconds=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')" | tee -a "$work/times.txt"
}
{
  echo "== $(date -u) $($gt --version 2>&1 | head -1)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  timed level1 $gt validate --level 1 --junit "$work/level1.junit.xml"
  timed level1-json $gt validate --level 1 --json --quiet
  timed inject-gemm-fp16 $gt validate --level 1 --ops gemm --inject-fault gemm:fp16 --json --quiet --junit "$work/inject.junit.xml"
  for c in conv2d:fp32 layernorm:bf16 softmax:fp16 reduce:fp32 atomics:int64 launch_limits memory_pattern bandwidth pinned_copy; do
    timed "inject-${c/:/-}" $gt validate --level 1 --ops "${c%%:*}" --inject-fault "$c" --json --quiet
  done
  timed level2 $gt validate --level 2 --json --junit "$work/level2.junit.xml"
  timed level3 $gt validate --level 3 --duration "$duration" --json --junit "$work/level3.junit.xml"
  timed doctor-validate $gt doctor --validate
  timed bad-device $gt validate --device 7 --ops gemm --dtypes fp32 --json --quiet
  echo "== out of memory: PyTorch holds all but about 700 MiB of the GPU while validate runs"
  python3 -c 'import torch,time
free,total=torch.cuda.mem_get_info()
x=torch.empty(free-(700<<20), dtype=torch.uint8, device="cuda")
print("holding", x.numel(), flush=True); time.sleep(120)' > "$work/hold.txt" 2>&1 &
  hold=$!
  for _ in $(seq 60); do grep -q holding "$work/hold.txt" && break; sleep 1; done
  cat "$work/hold.txt"
  timed oom $gt validate --level 3 --duration 2 --ops gemm,stress_gemm,memory_pattern,bandwidth --dtypes bf16 --json --quiet
  kill $hold; wait $hold 2>/dev/null
  timed bench python3 bench/validate_vs_torch.py "$gt" "$duration"
  cat "$work/bench.out"
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv
} > "$work/log.txt" 2>&1
tar czf "$out/issue14.tar.gz" -C "$out" issue14
