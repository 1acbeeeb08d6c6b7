#!/usr/bin/env bash
# Time from the fatal signal to the crash bundle written (manifest.json timings), for a command
# that crashes, N runs; prints the median and the range as a Markdown table row. The default
# bundle includes a node snapshot, as a user's would.
#   bench/signal_to_bundle.sh GPUTRIAGE N LABEL -- CMD [ARGS...]
set -euo pipefail
gt=$1 n=$2 label=$3
shift 3
[ "$1" = "--" ] && shift
bundles=$(mktemp -d)
trap 'rm -rf "$bundles"' EXIT
for ((i = 0; i < n; i++)); do
  "$gt" run --quiet --bundle-dir "$bundles" -- "$@" > /dev/null 2>&1 || true
done
python3 - "$bundles" "$label" "$n" <<'PY'
import glob, json, statistics, sys
bundles, label, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ms, cap = [], []
for m in glob.glob(bundles + "/*/manifest.json"):
    t = json.load(open(m))["timings"]
    if "signal_to_bundle_ms" in t:
        ms.append(t["signal_to_bundle_ms"]); cap.append(t["capture_ms"])
if not ms:
    sys.exit(f"signal_to_bundle: no crash bundle with timings in {bundles}")
print(f"| {label} | {len(ms)}/{n} | {statistics.median(ms):.0f} ms | {min(ms):.0f}-{max(ms):.0f} ms | {statistics.median(cap):.0f} ms |")
PY
