#!/usr/bin/env bash
# One GPU-machine call for issue 11: unpacks dist/device.tar.xz (dist/gputriage, dist/gputriage-old,
# dist/fuzz; made here by scripts/device/pack-fuzz and scripts/bundle), starts the fuzz campaign
# on every core in the background (arguments go to scripts/fuzz-campaign), runs
# verify-lifetime.sh meanwhile, waits for the campaign. Results under $OUT.
set -u
out=${OUT:-/tmp/gputriage-out}
mkdir -p "$out"
[ -f dist/device.tar.xz ] && tar xJf dist/device.tar.xz -C dist
scripts/device/fuzz.sh "$@" > "$out/fuzz-console.log" 2>&1 &
fuzz=$!
scripts/device/verify-lifetime.sh > "$out/lifetime-console.log" 2>&1
wait $fuzz
cat "$out/lifetime.log" 2>/dev/null
cat "$out/fuzz/summary.txt" 2>/dev/null
