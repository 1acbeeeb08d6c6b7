#!/usr/bin/env bash
# Runs on the GPU machine (issue 12): tests/gpu/torch_snapshot_after_fault.py bare (does PyTorch
# write its allocator snapshot after an illegal address?) and under `gputriage run --record`
# (the Xid fault address and the recorder's allocations of the same process). The snapshots and
# the bundle's files come back under $OUT for tests/fixtures/torch-snapshot/.
set -u
out=${OUT:-/tmp/gputriage-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/dist/tests
python3 tests/gpu/torch_snapshot_after_fault.py "$out/bare.pickle" > "$out/bare.log" 2>&1
echo "bare rc=$?" >> "$out/bare.log"
dist/gputriage/bin/gputriage run --no-snapshot --record --bundle-dir /tmp/b -- \
  python3 tests/gpu/torch_snapshot_after_fault.py /tmp/recorded.pickle > "$out/run.log" 2>&1
echo "run rc=$?" >> "$out/run.log"
d=$(ls -td /tmp/b/*/ | head -1)
tar -C "$d" -czf "$out/bundle.tar.gz" . && cp /tmp/recorded.pickle "$out/recorded.pickle"
python3 -c "
import pickle,sys
s=pickle.load(open(sys.argv[1],'rb'))
print(type(s), list(s.keys()) if isinstance(s,dict) else '')
seg=s['segments'][0]; print({k:(v if k!='blocks' else len(v)) for k,v in seg.items() if k!='frames'})
print(seg['blocks'][0])
" "$out/recorded.pickle"
cat "$out/bare.log" "$out/run.log" | cut -c1-300
