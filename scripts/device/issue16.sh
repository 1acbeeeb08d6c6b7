#!/usr/bin/env bash
# One GPU-machine call for issue 16 (shipping conventions): unpacks dist/device.tar.xz (dist/gputriage
# from scripts/bundle), then on the H200: the CUDA toolkit's release in the snapshot (the image has
# no version.json), doctor's exit-code conventions, run's 124/125/--json-file, a PyTorch job that
# dies in native code (PYTHONFAULTHANDLER and analyze's python_fault), a report in HTML when the
# build has it. Everything goes to $OUT/issue16.tar.gz; the log is printed at the end.
set -u
out=${OUT:-/tmp/gputriage-out}
rm -rf /tmp/issue16; work=/tmp/issue16  # the device tool brings back a few files only: the chosen ones are copied to $out at the end
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
  step "doctor and snapshot next to nvidia-smi -q, interleaved, 7 warm runs each (wall seconds)"
  python3 - "$gt" <<'PY'
import subprocess, sys, time, statistics
gt = sys.argv[1]
cmds = {"gputriage doctor": [gt, "doctor"], "gputriage snapshot --json": [gt, "snapshot", "--json"],
        "nvidia-smi -q": ["nvidia-smi", "-q"]}
times = {k: [] for k in cmds}
for k, c in cmds.items(): subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warm
for i in range(7):
    for k, c in cmds.items():
        t0 = time.monotonic(); rc = subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        times[k].append(time.monotonic() - t0)
for k, v in times.items():
    print(f"{k:28s} median {statistics.median(v):.3f}  min {min(v):.3f}  max {max(v):.3f}")
PY
  $gt doctor --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print("doctor timings:", json.dumps(d.get("timings") or d.get("collector_timings") or "n/a")[:1500])'
  step "run with NVML telemetry: 6 s of matmuls, then a native crash"
  $gt run --bundle-dir "$bundles" --telemetry-period 0.2 --core --json-file "$work/telemetry.json" -- \
    python3 -c 'import torch,ctypes,time; a=torch.randn(8192,8192,device="cuda"); t=time.time()
while time.time()-t<6: a=(a@a).clamp_(-1,1)
torch.cuda.synchronize(); print("matmuls done", flush=True); ctypes.string_at(0)'
  echo "rc=$?"
  tb=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["bundle"])' "$work/telemetry.json")
  echo "bundle=$tb"; ls -la "$tb"
  wc -l "$tb/telemetry.csv"; head -3 "$tb/telemetry.csv"; tail -2 "$tb/telemetry.csv"
  python3 - "$tb/telemetry.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
print("samples:", len(rows), "columns:", list(rows[0].keys()) if rows else None)
for col in rows[0].keys() if rows else []:
    vals = [r[col] for r in rows if r[col] not in ("", None)]
    if vals and all(v.replace(".", "", 1).lstrip("-").isdigit() for v in vals):
        f = [float(v) for v in vals]; print(f"  {col}: min {min(f)} max {max(f)}")
PY
  python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print("manifest telemetry:", json.dumps(m.get("telemetry"))[:800]); print("core:", json.dumps(m.get("core"))[:400])' "$tb/manifest.json"
  $gt analyze "$tb" | head -30; echo "analyze rc=$?"
  $gt report "$tb" --format html -o "$work/telemetry-report.html"; echo "report rc=$?"; grep -c "<polyline\|<path" "$work/telemetry-report.html"; grep -o "Telemetry[^<]*" "$work/telemetry-report.html" | head -3
  step "bundles pack of that bundle, analyze of the pack"
  $gt bundles pack "$tb" -o "$work/crash.tar.zst" --json | head -c 1500; echo; echo "rc=$?"
  ls -la "$work/crash.tar.zst"; $gt analyze "$work/crash.tar.zst" | head -6; echo "analyze pack rc=$?"
  step "inspect --pid on a live PyTorch process (cuBLAS, cuDNN loaded)"
  python3 -c 'import torch,time; x=torch.randn(8,3,64,64,device="cuda"); c=torch.nn.Conv2d(3,8,3).cuda(); y=c(x); z=x.flatten(1)@x.flatten(1).T; torch.cuda.synchronize(); print("ready", flush=True); time.sleep(120)' > "$work/live.out" 2>&1 &
  live=$!
  for i in $(seq 1 60); do grep -q ready "$work/live.out" && break; sleep 0.5; done; cat "$work/live.out"
  python3 bench/timed.py "$work/inspect-pid.txt" $gt inspect --pid $live; echo "rc=$?"
  head -60 "$work/inspect-pid.txt"; echo "... $(wc -l < "$work/inspect-pid.txt") lines"
  $gt inspect --pid $live --verbose > "$work/inspect-pid-verbose.txt" 2>&1; echo "verbose rc=$? lines=$(wc -l < "$work/inspect-pid-verbose.txt")"
  $gt inspect --pid $live --json > "$work/inspect-pid.json" 2>/dev/null; echo "json rc=$?"
  python3 - "$work/inspect-pid.json" <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1]))
f = d.get("findings", [])
print("findings:", len(f), "folded:", sum(1 for x in f if x.get("folded")), "actionable:", sum(1 for x in f if x.get("actionable")))
print("by scope:", collections.Counter(x.get("scope") for x in f))
print("by severity:", collections.Counter(x.get("severity") for x in f))
for x in f[:8]: print(" ", x.get("rank"), x.get("severity"), x.get("scope"), (x.get("message") or x.get("title") or "")[:140])
PY
  kill $live 2>/dev/null; wait $live 2>/dev/null
  step "capture PID of a PyTorch job hung in cudaDeviceSynchronize behind a 20 s kernel"
  python3 -c 'import torch,time; torch.cuda.init(); x=torch.ones(1,device="cuda"); print("spinning", flush=True); torch.cuda._sleep(40_000_000_000); torch.cuda.synchronize(); print("done after the kernel", flush=True)' > "$work/hung.out" 2>&1 &
  hung=$!
  for i in $(seq 1 60); do grep -q spinning "$work/hung.out" && break; sleep 0.5; done; sleep 2
  t0=$(date +%s.%N)
  $gt capture $hung --bundle-dir "$bundles" --json > "$work/capture.json" 2> "$work/capture.err"; echo "capture rc=$? in $(python3 -c "import sys,time; print(round(time.time()-float(sys.argv[1]),2))" $t0) s"
  head -c 2000 "$work/capture.json"; echo; cat "$work/capture.err" | head -20
  grep TracerPid /proc/$hung/status; cat /proc/$hung/stat | cut -d' ' -f3
  cb=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("bundle",""))' "$work/capture.json")
  [ -n "$cb" ] && $gt analyze "$cb" | head -25
  wait $hung; echo "hung job exit=$?"; cat "$work/hung.out"
  step "libcufft.so.12: where its GPU code is (sections, fatbin magics)"
  cufft=$(ls /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcufft.so.* 2>/dev/null | head -1)
  if [ -n "$cufft" ]; then
    ls -la "$cufft"; readelf -SW "$cufft" 2>&1 | grep -E "fatbin|rodata|nv_|\.data|Name" | head -20
    python3 - "$cufft" <<'PY'
import mmap, sys, struct
f = open(sys.argv[1], "rb"); m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
for name, magic in (("fatbin header 0xBA55ED50", struct.pack("<I", 0xBA55ED50)), ("fatbin wrapper 0x466243B1", struct.pack("<I", 0x466243B1)), ("ELF", b"\x7fELF\x02\x01\x01\x33")):
    hits, pos = [], m.find(magic)
    while pos >= 0 and len(hits) < 100000: hits.append(pos); pos = m.find(magic, pos + 1)
    print(name, len(hits), "first", [hex(h) for h in hits[:5]])
PY
    $gt inspect --no-snapshot "$cufft" 2>&1 | head -8
  fi
} > "$work/log.txt" 2>&1
mkdir -p "$out/issue16"
for f in log.txt doctor.txt capture.json inspect-pid.txt inspect-pid-verbose.txt telemetry-report.html report.html; do
  [ -f "$work/$f" ] && cp "$work/$f" "$out/issue16/"
done
[ -n "${tb:-}" ] && [ -f "$tb/telemetry.csv" ] && cp "$tb/telemetry.csv" "$out/issue16/"
cat "$work/log.txt"
