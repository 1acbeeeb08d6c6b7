#!/usr/bin/env bash
# One GPU-machine call for issue 12: unpacks dist/device.tar.xz (dist/gputriage, dist/tests and
# dist/fuzz, made here by scripts/bundle, scripts/device/pack-tests and scripts/device/pack-fuzz),
# starts the fuzz campaign in the background when dist/fuzz is there (FUZZ_ARGS go to
# scripts/fuzz-campaign), runs verify-record.sh with this script's arguments (the phases: cases,
# bench, cost), waits for the campaign, and packs everything into $OUT/issue12.tar.gz (a call brings
# back at most 8 files). The bench phase starts only after the campaign has ended, on idle cores.
set -u
out=${OUT:-/tmp/gputriage-out}
mkdir -p "$out"
[ -f dist/device.tar.xz ] && tar xJf dist/device.tar.xz -C dist
fuzz=
if [ -d dist/fuzz/bin ]; then
  scripts/device/fuzz.sh ${FUZZ_ARGS:-} > "$out/fuzz-console.log" 2>&1 &
  fuzz=$!
fi
phases=${*:-cases bench cost}
if [[ " $phases " == *" cases "* ]]; then
  PYTHONUNBUFFERED=1 scripts/device/verify-record.sh cases > "$out/cases-console.log" 2>&1
fi
[ -n "$fuzz" ] && wait "$fuzz"
# The later phases are skipped when the call's 10 minutes would not hold them (MAX_SECONDS).
for phase in bench cost; do
  [[ " $phases " == *" $phase "* ]] || continue
  if [ "$SECONDS" -gt "${MAX_SECONDS:-300}" ]; then
    echo "== $phase skipped: $SECONDS s already spent" | tee -a "$out/record/verify.log"
    continue
  fi
  PYTHONUNBUFFERED=1 scripts/device/verify-record.sh "$phase" > "$out/$phase-console.log" 2>&1
done
cat "$out/record/verify.log" 2>/dev/null
cat "$out/fuzz/summary.txt" 2>/dev/null
tar -C "$out" -czf /tmp/issue12.tar.gz . && rm -rf "${out:?}"/* && mv /tmp/issue12.tar.gz "$out/"
