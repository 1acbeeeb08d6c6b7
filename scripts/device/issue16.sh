#!/usr/bin/env bash
# One GPU-machine call for issue 16 (shipping conventions): unpacks dist/device.tar.xz (dist/gputriage
# from scripts/bundle), then on the H200: the CUDA toolkit's release in the snapshot (the image has
# no version.json), doctor's exit-code conventions, run's 124/125/--json-file, a PyTorch job that
# dies in native code (PYTHONFAULTHANDLER and analyze's python_fault), a report in HTML when the
# build has it. Everything goes to $OUT/issue16.tar.gz; the log is printed at the end.
set -u
out=${OUT:-/tmp/gputriage-out}
work=$out/issue16
mkdir -p "$work"
[ -f dist/device.tar.xz ] && tar xJf dist/device.tar.xz -C dist
gt=$PWD/dist/gputriage/bin/gputriage
export GPUTRIAGE_HOME=$work/home
bundles=$work/bundles
step() { echo; echo "== $*"; }
{
  echo "== $(date -u) $($gt --version 2>&1 | head -1)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  step "CUDA installs on disk"
  for d in /usr/local/cuda*; do
    echo "$d -> $(readlink -f "$d")"; ls "$d" 2>&1 | head -20 | tr '\n' ' '; echo
    ls "$d"/version.* 2>&1; ls "$d"/lib64/libcudart.so* "$d"/targets/*/lib/libcudart.so* 2>&1 | head -4
  done
  step "snapshot: CUDA installations"
  $gt snapshot --json > "$work/snapshot.json"; echo "rc=$?"
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps(s["software"]["cuda"], indent=1))' "$work/snapshot.json"
  $gt snapshot | grep -E '^software|^toolchain'
  step "doctor exit codes (default, nagios, npd)"
  $gt doctor > "$work/doctor.txt"; echo "default rc=$?"
  $gt doctor --exit-codes nagios | head -1; echo "nagios rc=${PIPESTATUS[0]}"
  $gt doctor --exit-codes npd; echo "npd rc=$?"
  $gt doctor --exit-codes nagios --no-such-flag; echo "nagios usage error rc=$?"
  step "run: a typo is 125 and the job does not run"
  $gt run --timout 30m -- touch "$work/should-not-exist"; echo "rc=$?"; ls "$work/should-not-exist" 2>&1
  step "run --timeout on a PyTorch job holding the GPU: 124"
  $gt run --bundle-dir "$bundles" --timeout 8s --json-file "$work/timeout.json" -- \
    python3 -c 'import torch,time; x=torch.ones(1<<20, device="cuda"); torch.cuda.synchronize(); print("on gpu", flush=True); time.sleep(60)'
  echo "rc=$?"; python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); r=j["runs"][0]; print({k: r.get(k) for k in ("exit_status","timed_out","failed","bundle")})' "$work/timeout.json"
  step "run: a PyTorch job that dies in native code (ctypes), faulthandler on by run"
  $gt run --bundle-dir "$bundles" --json-file "$work/segv.json" -- \
    python3 -c 'import torch,ctypes; x=torch.ones(4, device="cuda"); torch.cuda.synchronize()
def crash(): ctypes.string_at(0)
crash()'
  echo "rc=$?"
  b=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["bundle"])' "$work/segv.json")
  echo "bundle=$b"; grep -A6 "Fatal Python error" "$b/stderr.tail" | head -12
  $gt analyze --json "$b" > "$work/segv-analyze.json"; echo "analyze rc=$?"
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(json.dumps(a.get("python_fault"), indent=1)[:1500]); print(a["category"], a["verdict"])' "$work/segv-analyze.json"
  $gt analyze "$b" | head -12
  step "errors under --json"
  $gt analyze --json /nonexistent/job.log; echo "rc=$?"
  if $gt report --help 2>&1 | grep -q html; then
    step "report --format html of the crash bundle"
    $gt report "$b" --format html -o "$work/report.html"; echo "rc=$?"; wc -c "$work/report.html"
    grep -c "<svg" "$work/report.html"; grep -c "<script" "$work/report.html"
  fi
  step "bundles list (when this build has it)"
  $gt bundles list 2>&1 | head -10
} > "$work/log.txt" 2>&1
tar czf "$out/issue16.tar.gz" -C "$out" issue16
cat "$work/log.txt"
