#!/usr/bin/env bash
# Issue 17: real PyTorch NCCL flight-recorder dumps for the reader's tests (one GPU: a one-rank
# NCCL process group). Writes $OUT/fr/: the pickled dump PyTorch returns and the file it writes
# to TORCH_NCCL_DEBUG_INFO_TEMP_FILE, pickletools' disassembly of each, the JSON form where this
# PyTorch has it, and the versions. No GPU settings are changed.
set -u
out=${OUT:-/tmp/gputriage-out}/fr
mkdir -p "$out"
export TORCH_NCCL_TRACE_BUFFER_SIZE=64 TORCH_FR_BUFFER_SIZE=64 TORCH_NCCL_DEBUG_INFO_TEMP_FILE=$out/nccl_trace_rank_
export MASTER_ADDR=127.0.0.1 MASTER_PORT=29511
python3 - "$out" <<'PY' > "$out/log.txt" 2>&1
import os, sys, pickle, pickletools, io, json, torch, torch.distributed as dist
out = sys.argv[1]
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
x = torch.ones(1 << 20, device="cuda")
for i in range(5):
    dist.all_reduce(x)
dist.broadcast(x, 0)
y = [torch.zeros(4, device="cuda")]
dist.all_gather(y, torch.ones(4, device="cuda"))
dist.barrier()
torch.cuda.synchronize()
c10d = torch._C._distributed_c10d
print([n for n in dir(c10d) if "dump" in n.lower() or "trace" in n.lower()])
for name, kwargs in [("_dump_nccl_trace", {}), ("_dump_nccl_trace", {"includeCollectives": True, "includeStackTraces": False, "onlyActive": False})]:
    f = getattr(c10d, name, None)
    if f is None: continue
    try:
        b = f(**kwargs)
    except Exception as e:
        print(name, kwargs, "failed:", e); continue
    tag = "nostack" if kwargs else "default"
    open(f"{out}/dump-{tag}.pkl", "wb").write(b)
    with open(f"{out}/dump-{tag}.dis.txt", "w") as d:
        pickletools.dis(b, out=d)
    print(name, tag, len(b), "bytes")
    try:
        obj = pickle.loads(b)
        print("top keys", list(obj.keys()))
        print("entry keys", list(obj["entries"][0].keys()) if obj.get("entries") else None)
        print(repr(obj["entries"][0])[:1500] if obj.get("entries") else None)
        print("pg_config", repr(obj.get("pg_config"))[:600]); print("pg_status", repr(obj.get("pg_status"))[:600])
    except Exception as e:
        print("pickle.loads failed:", e)
for name in ["_dump_nccl_trace_json", "_dump_fr_trace_json"]:
    f = getattr(c10d, name, None)
    if f is None: continue
    try:
        s = f(includeCollectives=True, onlyActive=False)
        open(f"{out}/{name}.json", "w").write(s); print(name, len(s))
    except Exception as e:
        print(name, "failed:", e)
# The file written on a timeout goes through the same writer: ask for it the way the watchdog does.
try:
    from torch.distributed.distributed_c10d import _get_default_group
    pg = _get_default_group()
    be = pg._get_backend(torch.device("cuda"))
    print("backend", type(be), [n for n in dir(be) if "dump" in n.lower()])
except Exception as e:
    print("backend lookup failed:", e)
dist.destroy_process_group()
PY
# Two CPU ranks (gloo) under torchrun, as a real multi-rank log: rank 1 raises after the first
# all_reduce (torchrun then stops rank 0), and rank 1 sleeps while rank 0 hits the collective
# timeout (15 s). The flight recorder is on for gloo too, where this PyTorch has it.
cat > /tmp/job.py <<'JOB'
import datetime, os, sys, time, torch, torch.distributed as dist
mode = sys.argv[1]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
r = dist.get_rank()
x = torch.ones(4)
dist.all_reduce(x)
if r == 1 and mode == "raise":
    raise RuntimeError("rank 1 failed on purpose after the first all_reduce")
if r == 1 and mode == "hang":
    time.sleep(40)
dist.all_reduce(x)
print("rank", r, "done", x)
JOB
for mode in raise hang; do
  TORCH_FR_BUFFER_SIZE=64 TORCH_FR_DUMP_TEMP_FILE=$out/fr_gloo_${mode}_rank_ timeout 80 \
    python3 -m torch.distributed.run --nproc-per-node 2 --tee 3 /tmp/job.py $mode > "$out/torchrun-$mode.log" 2>&1
  echo "torchrun $mode rc=$?" >> "$out/log.txt"
done
ls -la "$out"; tail -30 "$out/log.txt"; tail -5 "$out"/torchrun-*.log
