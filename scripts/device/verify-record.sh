#!/usr/bin/env bash
# Runs on the GPU machine (issue 12): `gputriage run --record` and `run --escalate` on the six
# faults of the issue — a CUDA kernel writing out of bounds (tests/gpu/cuda_oob), PyTorch's
# device-side assert (index_add_ in a custom backward), a Triton kernel storing past its output,
# cuBLAS SGEMM given an output pointer in no allocation, a program built for sm_80 only that
# ignores "no kernel image", a kernel that spins forever (--timeout) — then the recorder's cost
# on a PyTorch training step and a tight launch loop (bench/record_overhead.sh: medians),
# and the escalation against the whole job under compute-sanitizer (bench/escalation_vs_sanitizer.sh). Needs the bundle
# (scripts/bundle) and the test programs (scripts/device/pack-tests) in dist/. Results: $OUT/record.
#   verify-record.sh [cases] [bench] [cost]     (all three when none is named)
set -u
phases=" ${*:-cases bench cost} "
out=${OUT:-/tmp/gputriage-out}/record
mkdir -p "$out"
gt=$PWD/dist/gputriage/bin/gputriage
lib=$PWD/dist/gputriage/lib/libgputriage-record.so
t=$PWD/dist/tests
cublas=$(find / -xdev -name 'libcublas.so.13*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$t${cublas:+:$(dirname "$cublas")}
export GPUTRIAGE_HOME=$out/home
b=$out/bundles
log() { echo "== $*" | tee -a "$out/verify.log"; }
keep() {  # copy the newest bundle's GPU files under $out/NAME
  local d; d=$(ls -td "$b"/*/ 2>/dev/null | head -1)
  mkdir -p "$out/$1"
  for f in gpu_calls.json escalation.json process.json manifest.json findings.json; do
    [ -f "$d/$f" ] && cp "$d/$f" "$out/$1/"
  done
  python3 - "$d" <<'PY' | tee -a "$out/verify.log"
import json, os, sys
d = sys.argv[1]
g = json.load(open(d + "/gpu_calls.json")) if os.path.exists(d + "/gpu_calls.json") else {}
print(" processes", [(p["pid"], p["hooks"], p["calls"], p["launches"], p.get("switched_off"), p.get("note")) for p in g.get("processes", [])])
print(" candidates", [(c.get("kernel"), c.get("grid"), c.get("block")) for c in g.get("candidates", [])[:5]])
print(" in_progress", [(c["api"]) for c in g.get("in_progress", [])])
print(" errors", [(e["api"], e["result"], e.get("result_name"), e["count"]) for e in g.get("errors", [])][:8])
print(" attributions", [a["summary"] for a in g.get("attributions", [])])
print(" not_recorded", g.get("not_recorded"))
if os.path.exists(d + "/escalation.json"):
    e = json.load(open(d + "/escalation.json"))
    print(" escalation kernel", e.get("kernel"), "location", e.get("location"), "job_s", e.get("job_seconds"))
    for s in e["steps"]:
        print("  step", s["step"], round(s["seconds"], 2), "s:", s["outcome"][:400])
PY
}
case_run() {  # NAME [run options] -- CMD...   (CASES="a b": only those)
  local name=$1; shift
  [ -n "${CASES:-}" ] && [[ " $CASES " != *" $name "* ]] && return 0
  local start=$(date +%s.%N)
  timeout -k 10 240 "$gt" run --no-snapshot --bundle-dir "$b" "$@" > "$out/$name.out" 2>&1
  local rc=$? end=$(date +%s.%N)
  log "$name: rc=$rc, $(python3 -c "print(round($end-$start,2))") s"
  tail -12 "$out/$name.out" >> "$out/verify.log"
  keep "$name"
}

log "version"; "$gt" --version >> "$out/verify.log" 2>&1
ldd "$gt" | grep 'not found' && log "MISSING LIBRARIES"
log "tools"; (command -v compute-sanitizer; compute-sanitizer --version | tail -2; compute-sanitizer --help | grep -A4 -- '--kernel-name') >> "$out/verify.log" 2>&1
log "cupti found by run --record"; find / -xdev -name 'libcupti.so*' 2>/dev/null | head -5 >> "$out/verify.log"

if [[ $phases == *" cases "* ]]; then
case_run oob-record --record -- "$t/cuda_oob"
case_run oob-escalate --escalate -- "$t/cuda_oob"
case_run torch-assert-record --record -- python3 tests/gpu/torch_index_add_assert.py
case_run torch-assert-escalate --escalate -- python3 tests/gpu/torch_index_add_assert.py
case_run triton-record --record -- python3 tests/gpu/triton_oob_store.py
case_run triton-escalate --escalate -- python3 tests/gpu/triton_oob_store.py
case_run cublas-record --record -- "$t/cublas_bad_output"
case_run cublas-escalate --escalate -- "$t/cublas_bad_output"
case_run no-kernel-image --record -- "$t/cuda_no_kernel_image"
GPUTRIAGE_RECORD_DRIVER_ALL=1 case_run no-kernel-image-all --record -- "$t/cuda_no_kernel_image"
case_run launch-loop-record --record -- python3 tests/gpu/torch_launch_loop.py 20000
case_run spin --record --timeout 8 -- "$t/cuda_spin"
case_run graph-escalate --escalate -- "$t/cuda_graph_oob"
log "dmesg"; dmesg 2>/dev/null | tail -20 >> "$out/verify.log"
fi
if [[ $phases == *" bench "* ]]; then
  log "cost of the recorder (bench/record_overhead.sh, ${RUNS:-7} rounds)"
  bench/record_overhead.sh "$lib" "${RUNS:-7}" > "$out/bench.txt" 2>&1
  cat "$out/bench.txt" >> "$out/verify.log"
fi
if [[ $phases == *" cost "* ]]; then
  log "escalation vs the whole job under compute-sanitizer (bench/escalation_vs_sanitizer.sh)"
  bench/escalation_vs_sanitizer.sh "$gt" "$t/cuda_oob" "python3 tests/gpu/triton_oob_store.py" \
    "python3 tests/gpu/torch_index_add_assert.py" "python3 tests/gpu/torch_train_then_oob.py ${LATE_STEPS:-1000}" \
    > "$out/cost.txt" 2>&1
  cat "$out/cost.txt" >> "$out/verify.log"
fi
rm -rf "$out/home" "$b"
