#!/usr/bin/env bash
# Second GPU-machine call for issue 16: doctor and snapshot next to `nvidia-smi -q` in the same
# run (the development bundle, -O1, and the relocatable tarball, -O2), the tarball on Ubuntu
# 24.04, and a real device-side assert under `run --repeat 3` with telemetry, read back by
# analyze and report (HTML with the repeat series and the threads). Needs dist/device.tar.xz
# (scripts/bundle) and dist/gputriage-*-linux-x86_64.tar.gz (scripts/tarball). Log: $OUT/issue16b/.
set -u
out=${OUT:-/tmp/gputriage-out}/issue16b
mkdir -p "$out"
rm -rf /tmp/issue16b; work=/tmp/issue16b; mkdir -p "$work"
tar xJf dist/device.tar.xz -C dist
tar xzf dist/gputriage-*-linux-x86_64.tar.gz -C "$work"
dev=$PWD/dist/gputriage/bin/gputriage
rel=$(ls -d "$work"/gputriage-*-linux-x86_64)/bin/gputriage
export GPUTRIAGE_HOME=$work/home
step() { echo; echo "== $*"; }
{
  echo "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  step "the tarball on $(. /etc/os-release; echo "$PRETTY_NAME"), glibc $(ldd --version | head -1 | awk '{print $NF}')"
  env -i PATH=/usr/bin:/bin HOME="$work" "$rel" --version; echo "rc=$?"
  env -i PATH=/usr/bin:/bin HOME="$work" GPUTRIAGE_HOME="$work/home" "$rel" doctor | tail -3; echo "rc=${PIPESTATUS[0]}"
  step "doctor and snapshot next to nvidia-smi -q, interleaved, 9 warm runs each (wall seconds)"
  python3 - "$dev" "$rel" <<'PY'
import subprocess, sys, time, statistics
dev, rel = sys.argv[1], sys.argv[2]
cmds = {"doctor (dev bundle, -O1)": [dev, "doctor"], "doctor (tarball, -O2)": [rel, "doctor"],
        "snapshot --json (tarball)": [rel, "snapshot", "--json"], "nvidia-smi -q": ["nvidia-smi", "-q"]}
times = {k: [] for k in cmds}
for k, c in cmds.items():
    r = subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    print(f"warm-up {k}: rc {r.returncode} {r.stderr.decode()[-200:].strip()}")
for i in range(9):
    for k, c in cmds.items():
        t0 = time.monotonic(); subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[k].append(time.monotonic() - t0)
for k, v in times.items():
    print(f"{k:28s} median {statistics.median(v):.3f}  min {min(v):.3f}  max {max(v):.3f}")
PY
  "$rel" snapshot --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print("collection_ms:", s.get("collection_ms")); print("not_collected:", [n.get("item") for n in s.get("not_collected", [])])'
  step "run --repeat 3 of a PyTorch device-side assert (index out of bounds), telemetry on"
  "$rel" run --repeat 3 --bundle-dir "$work/bundles" --json-file "$work/repeat.json" -- \
    python3 -c 'import torch; x=torch.zeros(4, device="cuda"); i=torch.tensor([10], device="cuda"); x[i]=1; torch.cuda.synchronize()'
  echo "rc=$?"
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(json.dumps(j.get("verdict"))[:600]); [print(r.get("index"), r.get("exit_status"), r.get("failed"), r.get("signature"), r.get("bundle")) for r in j["runs"]]' "$work/repeat.json"
  b=$(python3 -c 'import json,sys; print([r["bundle"] for r in json.load(open(sys.argv[1]))["runs"] if r.get("bundle")][0])' "$work/repeat.json")
  cat "$b/repeat.json"; wc -l "$b/telemetry.csv"
  "$rel" analyze "$b" | tail -12
  "$rel" report "$b" | sed -n '/### Reproduction/,/### What happened/p'
  "$rel" report "$b" --format html -o "$out/assert-report.html"; echo "html rc=$?"
  grep -c "<details" "$out/assert-report.html"
} > "$out/log.txt" 2>&1
cat "$out/log.txt"
