#!/usr/bin/env bash
# Runs on the GPU machine (issue 3): `gputriage run` on a CUDA kernel that writes out of bounds
# and on PyTorch's device-side assert from index_add_ in a custom autograd backward, each once
# and with --repeat 5; the time from a fatal signal to the bundle for a process with libtorch
# loaded; the supervisor's overhead on a PyTorch training loop and on a CPU-bound
# multi-threaded program; a few crashers for portability (Ubuntu's glibc). Needs the bundle
# (scripts/bundle) and the test programs (scripts/device/pack-tests) in dist/. Results: $OUT.
set -u
final=${OUT:-/tmp/gputriage-out}
out=$(mktemp -d)
mkdir -p "$final"
gt=$PWD/dist/gputriage/bin/gputriage
t=$PWD/dist/tests
export LD_LIBRARY_PATH=$t
export GPUTRIAGE_HOME=$out/home
b=$out/bundles
log() { echo "== $*" | tee -a "$out/verify.log"; }
newest() { ls -td "$b"/*/ 2>/dev/null | head -1; }
show() {  # the summary fields of the newest bundle
  local d; d=$(newest)
  python3 - "$d" <<'PY' | tee -a "$out/verify.log"
import json, sys
d = sys.argv[1]
p = json.load(open(d + "/process.json")); m = json.load(open(d + "/manifest.json"))
print("bundle", d)
print(" exit_status", p["exit_status"], "signal", p["signal"], "si_code", p["si_code"], "fault", p["fault_address"])
print(" classification", json.dumps(p["classification"])[:600])
print(" kernel_log", json.dumps(p["kernel_log"])[:1500])
print(" timings", m["timings"], "traced", m["traced"], "not_collected", m["not_collected"])
PY
}
log "version"; "$gt" --version >> "$out/verify.log" 2>&1
ldd "$gt" | grep 'not found' && log "MISSING LIBRARIES"
log "kernel log readable?"; (dmesg | tail -3) >> "$out/verify.log" 2>&1

log "CUDA out-of-bounds kernel"
"$gt" run --bundle-dir "$b" -- "$t/cuda_oob" >> "$out/verify.log" 2>&1; log "rc=$?"; show
log "PyTorch index_add_ device-side assert in a custom backward"
"$gt" run --bundle-dir "$b" -- python3 tests/gpu/torch_index_add_assert.py > "$out/torch-assert.out" 2>&1; log "rc=$?"
tail -25 "$out/torch-assert.out" >> "$out/verify.log"; show
log "dmesg after both"; dmesg | tail -12 >> "$out/verify.log" 2>&1

log "--repeat 5: CUDA out-of-bounds"
"$gt" run --repeat 5 --json --quiet --bundle-dir "$b/repeat-oob" -- "$t/cuda_oob" > "$out/repeat-oob.json" 2> "$out/repeat-oob.err"; log "rc=$?"
python3 -c 'import json,sys; t=open(sys.argv[1]).read(); print(json.dumps(json.loads(t[t.rfind("\n{\n")+1:])["verdict"], indent=1))' "$out/repeat-oob.json" >> "$out/verify.log" 2>&1
log "--repeat 5: PyTorch device-side assert"
"$gt" run --repeat 5 --json --quiet --bundle-dir "$b/repeat-torch" -- python3 tests/gpu/torch_index_add_assert.py > "$out/repeat-torch.json" 2> "$out/repeat-torch.err"; log "rc=$?"
python3 -c 'import json,sys; t=open(sys.argv[1]).read(); print(json.dumps(json.loads(t[t.rfind("\n{\n")+1:])["verdict"], indent=1))' "$out/repeat-torch.json" >> "$out/verify.log" 2>&1

log "signal to bundle, process with libtorch + CUDA loaded (bundle includes a snapshot)"
bash bench/signal_to_bundle.sh "$gt" 5 "python3 + torch 2.11 + CUDA context, SIGSEGV (H200 machine)" -- python3 tests/gpu/torch_segv_with_libtorch.py > "$out/bench.md" 2>> "$out/verify.log"
"$gt" run --bundle-dir "$b" -- python3 tests/gpu/torch_segv_with_libtorch.py >> "$out/verify.log" 2>&1; show

log "overhead"
bash bench/run_overhead.sh "$gt" 5 "PyTorch training loop, 2000 steps (H200 machine)" -- python3 tests/gpu/torch_train_loop.py 2000 >> "$out/bench.md" 2>> "$out/verify.log"
bash bench/run_overhead.sh "$gt" 5 "crasher spin: 8 threads, 5 s (H200 machine, 16 cores)" -- "$t/crasher" spin 8 5000 >> "$out/bench.md" 2>> "$out/verify.log"
cat "$out/bench.md" >> "$out/verify.log"

log "crashers on this machine's glibc"
for m in null stack assert thread lib; do
  "$gt" run --no-snapshot --bundle-dir "$b/crashers" -- "$t/crasher" "$m" >> "$out/verify.log" 2>&1; log "$m rc=$?"
done
tar -C "$out" -czf "$final/results.tar.gz" . && cp "$out/verify.log" "$out/bench.md" "$final/"
tail -150 "$out/verify.log"
