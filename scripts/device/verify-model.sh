#!/usr/bin/env bash
# Runs on the GPU machine (issue 10, the typed model): checks that the refactored binary still
# does on a real H200 what it did before — snapshot, doctor (MIG and NVML read through the typed
# model), the snapshot's round trip through the history database, NVML against nvidia-smi —
# captures a fresh NVML probe section with nvidia-smi right after it (the golden test's fixture),
# and runs real GPU faults through run -> analyze -> report. Needs the bundle (scripts/bundle) and
# the test programs (scripts/device/pack-tests) in dist/. Results: $OUT.
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
log "version"; "$gt" --version >> "$out/verify.log" 2>&1
ldd "$gt" | grep 'not found' && log "MISSING LIBRARIES"

log "probe nvidia, then nvidia-smi -q -x (fixture pair)"
"$gt" __probe nvidia > "$out/probe-nvidia.json" 2>> "$out/verify.log"; log "probe rc=$?"
nvidia-smi -q -x > "$out/nvidia-smi-q-x.xml" 2>> "$out/verify.log"
python3 - "$out/probe-nvidia.json" <<'PY' >> "$out/verify.log" 2>&1
import json, sys
d = json.load(open(sys.argv[1]))["data"]
print("device_count", d.get("device_count"), "driver", d.get("driver_version"), "cuda", d.get("cuda_driver_version"))
for g in d.get("gpus", []):
    print(" gpu", g.get("pci_address"), g.get("name"), "cc", g.get("compute_capability"), "mig", g.get("mig_mode"))
PY

log "snapshot --json --save, then snapshot show latest --json (round trip)"
"$gt" snapshot --json --save > "$out/snapshot.json" 2>> "$out/verify.log"; log "rc=$?"
"$gt" snapshot show latest --json > "$out/snapshot-show.json" 2>> "$out/verify.log"; log "rc=$?"
python3 - "$out/snapshot.json" "$out/snapshot-show.json" <<'PY' >> "$out/verify.log" 2>&1
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a.pop("id", None); b.pop("id", None)
def diff(x, y, path=""):
    if type(x) != type(y): return [path]
    if isinstance(x, dict):
        return [p for k in set(x) | set(y) for p in diff(x.get(k), y.get(k), f"{path}.{k}")]
    if isinstance(x, list):
        if len(x) != len(y): return [path + "[len]"]
        return [p for i, (u, v) in enumerate(zip(x, y)) for p in diff(u, v, f"{path}[{i}]")]
    return [] if x == y else [path]
d = diff(a, b)
print("round trip: identical" if not d else f"round trip: {len(d)} differences: {d[:20]}")
PY
python3 scripts/compare-nvml.py --snapshot "$out/snapshot.json" --xml "$out/nvidia-smi-q-x.xml" > "$out/compare-nvml.txt" 2>&1
log "compare-nvml rc=$?"; tail -3 "$out/compare-nvml.txt" >> "$out/verify.log"

log "doctor"
"$gt" doctor >> "$out/verify.log" 2>&1; log "doctor rc=$?"
"$gt" doctor --json > "$out/doctor.json" 2>> "$out/verify.log"; log "doctor --json rc=$?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("findings:", [(f["id"], f["severity"]) for f in d["findings"]])' "$out/doctor.json" >> "$out/verify.log" 2>&1

for job in cuda_oob torch; do
  if [ $job = cuda_oob ]; then cmd=("$t/cuda_oob"); else cmd=(python3 tests/gpu/torch_index_add_assert.py); fi
  log "run: $job"
  "$gt" run --bundle-dir "$b" -- "${cmd[@]}" > "$out/$job.out" 2>&1; log "rc=$?"
  tail -6 "$out/$job.out" >> "$out/verify.log"
  d=$(newest); log "bundle $d"
  "$gt" analyze "$d" --json > "$out/analyze-$job.json" 2>> "$out/verify.log"; log "analyze rc=$?"
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print("category", a.get("category"), "verdict", a.get("verdict"), "confidence", a.get("confidence")); print("matches", [m.get("id") for m in a.get("matches", [])]); print("gpu_signature", a.get("gpu_signature")); print("xids", a.get("xids"))' "$out/analyze-$job.json" >> "$out/verify.log" 2>&1
  "$gt" report "$d" --format md -o "$out/report-$job.md" >> "$out/verify.log" 2>&1; log "report rc=$?"
  grep -iE "^#|kernel log|verdict|category" "$out/report-$job.md" | head -20 >> "$out/verify.log"
done
log "--repeat 3: cuda_oob"
"$gt" run --repeat 3 --json --quiet --bundle-dir "$b/repeat" -- "$t/cuda_oob" > "$out/repeat.json" 2> "$out/repeat.err"; log "rc=$?"
python3 -c 'import json,sys; t=open(sys.argv[1]).read(); print(json.dumps(json.loads(t[t.rfind("\n{\n")+1:])["verdict"], indent=1))' "$out/repeat.json" >> "$out/verify.log" 2>&1
log "crasher null"
"$gt" run --no-snapshot --bundle-dir "$b/crashers" -- "$t/crasher" null >> "$out/verify.log" 2>&1; log "rc=$?"

tar -C "$out" --exclude=home -czf "$final/results.tar.gz" .
cp "$out/verify.log" "$out/probe-nvidia.json" "$out/nvidia-smi-q-x.xml" "$final/"
tail -120 "$out/verify.log"
