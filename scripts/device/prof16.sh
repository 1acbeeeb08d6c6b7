#!/usr/bin/env bash
# Issue 16: where doctor's time goes on the GPU machine (per collector and per doctor step), and
# doctor and `snapshot --json` against `nvidia-smi -q`, interleaved, in the same run. Needs
# dist/device.tar.xz (scripts/bundle). Log on stdout.
set -u
tar xJf dist/device.tar.xz -C dist
g=$PWD/dist/gputriage/bin/gputriage
export GPUTRIAGE_HOME=/tmp/gth
echo "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
echo "== doctor --json, 5 runs (the first fills the version cache): collection_ms, top collectors, doctor's steps"
for i in 1 2 3 4 5; do $g doctor --json | python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["snapshot"]; print(round(s.get("collection_ms")), {k: round(v) for k, v in sorted(s.get("collector_ms",{}).items(), key=lambda x:-x[1])[:4]}, {k: round(v) for k, v in d["step_ms"].items()})'; done
ls -la $GPUTRIAGE_HOME/cache/
echo "== interleaved, 11 warm runs each (wall seconds)"
python3 - "$g" <<'PY'
import subprocess, sys, time, statistics
g = sys.argv[1]
cmds = {"gputriage doctor": [g, "doctor"], "gputriage snapshot --json": [g, "snapshot", "--json"],
        "nvidia-smi -q": ["nvidia-smi", "-q"]}
times = {k: [] for k in cmds}
for i in range(11):
    for k, c in cmds.items():
        t0 = time.monotonic(); subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[k].append(time.monotonic() - t0)
for k, v in times.items():
    print(f"{k:28s} median {statistics.median(v):.3f}  min {min(v):.3f}  max {max(v):.3f}")
PY
$g doctor | tail -1
echo "== the libraries step's roots, each resolved alone by 'gputriage libs' (wall seconds, incl. start)"
$g snapshot --json > /tmp/snap.json
python3 - "$g" <<'PY'
import json, subprocess, sys, time, os
g = sys.argv[1]
s = json.load(open("/tmp/snap.json"))["software"]
roots = []
t = (s.get("python") or {}).get("torch") or {}
if t.get("lib_dir"): roots += [t["lib_dir"] + "/libtorch_cuda.so"]
roots += [l["path"] for l in s.get("libraries", []) if l.get("path")]
roots = [r for r in roots if os.access(r, os.R_OK)]
print(len(roots), "roots")
for r in roots:
    t0 = time.monotonic(); p = subprocess.run([g, "libs", "--json", r], capture_output=True)
    dt = time.monotonic() - t0
    try: n = len(json.loads(p.stdout)["libraries"])
    except Exception: n = -1
    print(f"{dt:.3f}  {n:3d} libs  {r}")
outs = {}
for extra in ([], [], ["--no-cache"], ["--no-cache"], ["--no-symbols"]):
    t0 = time.monotonic(); p = subprocess.run([g, "libs", "--json"] + extra + roots, capture_output=True)
    print(f"all together {' '.join(extra)} {time.monotonic()-t0:.3f}")
    outs[" ".join(extra)] = p.stdout
print("cached answer == uncached answer:", outs[""] == outs["--no-cache"])
PY
echo "== doctor's findings with an empty cache and with the cache it wrote"
rm -rf /tmp/gth2
GPUTRIAGE_HOME=/tmp/gth2 $g doctor --json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["findings"], sort_keys=True))' > /tmp/f1
GPUTRIAGE_HOME=/tmp/gth2 $g doctor --json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["findings"], sort_keys=True))' > /tmp/f2
cmp /tmp/f1 /tmp/f2 && echo "same findings ($(python3 -c 'import json; print(len(json.load(open("/tmp/f1"))))') of them)"
ls -la /tmp/gth2/cache
