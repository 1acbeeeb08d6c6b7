#!/usr/bin/env bash
# Runs on the GPU machine with the bundle carried in dist/gputriage (scripts/bundle): checks that
# snapshot and doctor run, compares NVML values with nvidia-smi, measures snapshot against the
# peer tools, and captures Python-side fixtures. Everything lands in $OUT.
set -u
final=${OUT:-/tmp/gputriage-out}
out=$(mktemp -d)
mkdir -p "$final"
gt=$PWD/dist/gputriage/bin/gputriage
log() { echo "== $*" | tee -a "$out/verify.log"; }
log "version"; "$gt" --version 2>&1 | tee -a "$out/verify.log"
ldd "$gt" | grep -E 'not found' && log "MISSING LIBRARIES"
log "snapshot (human)"; ( time "$gt" snapshot ) >> "$out/verify.log" 2>&1
"$gt" snapshot --json > "$out/snapshot.json" 2>> "$out/verify.log"; log "snapshot --json rc=$?"
log "doctor (human)"; "$gt" doctor >> "$out/verify.log" 2>&1; log "doctor rc=$?"
"$gt" doctor --json > "$out/doctor.json" 2>> "$out/verify.log"; log "doctor --json rc=$?"
py=$(command -v python3)
log "snapshot --python $py"
"$gt" snapshot --json --python "$py" > "$out/snapshot-python.json" 2>> "$out/verify.log"; log "rc=$?"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps(s["software"].get("python_probe",{}).get("torch"), indent=1)); print(json.dumps(s["software"].get("python",{}).get("torch",{}), indent=1)[:800])' "$out/snapshot-python.json" >> "$out/verify.log" 2>&1
log "NVML vs nvidia-smi -q"
nvidia-smi -q -x > "$out/nvidia-smi-q.xml" 2>> "$out/verify.log"
python3 scripts/compare-nvml.py --snapshot "$out/snapshot.json" --xml "$out/nvidia-smi-q.xml" > "$out/compare-nvml.txt" 2>&1
log "compare rc=$?"; tail -40 "$out/compare-nvml.txt" >> "$out/verify.log"
log "bench"
bash bench/snapshot_vs_peers.sh "$gt" 10 python3 > "$out/bench.md" 2>> "$out/verify.log"
cat "$out/bench.md" >> "$out/verify.log"
log "fixtures: torch version.py and site-packages listing"
site=$(python3 -c 'import torch,os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
{ echo "# source: captured on the project's NVIDIA H200 test machine, $(date -u +%F): $site/torch/version.py"; cat "$site/torch/version.py"; } > "$out/torch-version.py.txt"
{ echo "# source: captured on the project's NVIDIA H200 test machine, $(date -u +%F): ls $site | grep -E 'dist-info|egg-info'"; ls "$site" | grep -E 'dist-info|egg-info'; } > "$out/site-packages-listing.txt"
tar -C "$out" -czf "$final/results.tar.gz" . && cp "$out/verify.log" "$out/bench.md" "$final/"
tail -120 "$out/verify.log"
