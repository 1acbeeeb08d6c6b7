#!/usr/bin/env bash
# Issue 16: where doctor's time goes on the GPU machine (per collector and per doctor step), next
# to nvidia-smi -q. Needs dist/device.tar.xz (scripts/bundle).
set -u
tar xJf dist/device.tar.xz -C dist
g=$PWD/dist/gputriage/bin/gputriage
export GPUTRIAGE_HOME=/tmp/gth
for i in 1 2 3 4 5; do $g doctor --json | python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["snapshot"]; print(round(s.get("collection_ms")), {k: round(v) for k, v in sorted(s.get("collector_ms",{}).items(), key=lambda x:-x[1])[:5]}, {k: round(v) for k, v in d["step_ms"].items()})'; done
for i in 1 2 3; do /usr/bin/time -f "doctor %e s" $g doctor | tail -1; /usr/bin/time -f "nvidia-smi -q %e s" nvidia-smi -q >/dev/null; done
$g snapshot --json | python3 -c 'import json,sys; s=json.load(sys.stdin)["software"]; print(s.get("tools")); print([c["path"] for c in s.get("compilers",[])])'
head -3 /opt/torch/.venv/bin/cmake; /usr/bin/time -f "venv cmake --version %e s" /opt/torch/.venv/bin/cmake --version
