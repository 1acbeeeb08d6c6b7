#!/usr/bin/env bash
# Issue 17: real flight-recorder dumps of more than one rank, on a one-GPU machine. Writes $OUT/fr2/:
# - gloo_missing_rank_{0,1}: two CPU ranks (gloo) under torchrun; after two all_reduce, rank 0
#   issues a third one (async) that rank 1 does not; each rank then dumps PyTorch's flight
#   recorder (torch._C._distributed_c10d._dump_fr_trace()), as the watchdog would on a timeout.
# - gloo_mismatch_rank_{0,1}: the same, but the third collective is an all_reduce of 4 floats on
#   rank 0 and a broadcast of 8 on rank 1.
# (A real NCCL collective timeout, whose dump PyTorch's watchdog writes itself, is
# scripts/device/fr_run.sh, under `gputriage run`.)
# Also each dump as Python's pickle reads it (summary.txt). No GPU settings are changed.
set -u
out=${OUT:-/tmp/gputriage-out}/fr2
mkdir -p "$out"
cat > /tmp/fr_job.py <<'JOB'
import datetime, os, sys, torch, torch.distributed as dist
mode, out = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
r = dist.get_rank()
x = torch.ones(4)
for _ in range(2):
    dist.all_reduce(x)
work = None
if mode == "missing" and r == 0:
    work = dist.all_reduce(x, async_op=True)
if mode == "mismatch":
    work = dist.all_reduce(x, async_op=True) if r == 0 else dist.broadcast(torch.ones(8), 0, async_op=True)
# Each rank's dump holds its own collectives: dumped at once, before the ranks' disagreement can end them.
b = torch._C._distributed_c10d._dump_fr_trace()
open(f"{out}/gloo_{mode}_rank_{r}", "wb").write(b)
print("rank", r, "dumped", len(b), "bytes", flush=True)
os._exit(0)
JOB
for mode in missing mismatch; do
  TORCH_FR_BUFFER_SIZE=64 MASTER_PORT=29521 timeout 60 \
    python3 -m torch.distributed.run --nproc-per-node 2 --master-port 29521 /tmp/fr_job.py $mode "$out" > "$out/gloo-$mode.log" 2>&1
  echo "gloo $mode rc=$?" >> "$out/log.txt"
done
python3 - "$out" >> "$out/summary.txt" 2>&1 <<'PY'
import os, pickle, sys
out = sys.argv[1]
for f in sorted(os.listdir(out)):
    if "_rank_" not in f: continue
    try:
        d = pickle.load(open(os.path.join(out, f), "rb"))
    except Exception as e:
        print(f, "unreadable:", e); continue
    print("==", f, "version", d.get("version"), "pg_config", d.get("pg_config"), "pg_status", d.get("pg_status"))
    for e in d.get("entries", []):
        print("  ", e.get("collective_seq_id"), e.get("p2p_seq_id"), e.get("profiling_name"), e.get("state"),
              e.get("input_sizes"), e.get("output_sizes"), e.get("time_created_ns"))
PY
ls -la "$out" >> "$out/log.txt"
