#!/usr/bin/env bash
# Issue 17 on one GPU: a real collective timeout under `gputriage run`. A one-rank NCCL group's
# all_reduce waits behind a 15 s kernel (torch.cuda._sleep) past the group's 5 s timeout; PyTorch's
# watchdog writes its flight-recorder dump (TORCH_NCCL_DUMP_ON_TIMEOUT=1) and aborts the process.
# Checks that run takes the dump into the bundle and that analyze reads it. Needs
# dist/device.tar.xz (scripts/bundle). Everything lands in $OUT/fr_run.tar.gz (log.txt inside).
# No GPU settings are changed.
set -u
work=/tmp/fr_run
rm -rf "$work" && mkdir -p "$work"
tar xJf dist/device.tar.xz -C "$work"
g=$work/gputriage/bin/gputriage
export GPUTRIAGE_HOME=$work/home
cat > "$work/nccl_timeout.py" <<'JOB'
import datetime, torch, torch.distributed as dist
dist.init_process_group("nccl", rank=0, world_size=1, timeout=datetime.timedelta(seconds=5),
                        device_id=torch.device("cuda:0"))
x = torch.ones(1 << 10, device="cuda")
for _ in range(3):
    dist.all_reduce(x)
torch.cuda.synchronize()
torch.cuda._sleep(int(3e10))  # ~15 s of GPU time ahead of the collective on its stream
dist.all_reduce(x)
torch.cuda.synchronize()
print("not reached")
JOB
{
  echo "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29531 TORCH_FR_BUFFER_SIZE=64 TORCH_NCCL_DUMP_ON_TIMEOUT=1 \
    TORCH_FR_DUMP_TEMP_FILE=$work/trace_ timeout 120 "$g" run --bundle-dir "$work/bundles" -- \
    python3 "$work/nccl_timeout.py"
  echo "run rc=$?"
  ls -la "$work" "$work"/bundles/*/
  b=$(ls -d "$work"/bundles/*/ | head -1)
  echo "== collectives.json"; cat "$b/collectives.json"
  echo "== manifest files"; python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["files"], indent=1))' "$b/manifest.json"
  echo "== analyze"; "$g" analyze "$b"
  echo "== analyze --json collective_findings"
  "$g" analyze "$b" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d.get("collective_findings", d), indent=1)[:3000])'
} > "$work/log.txt" 2>&1
tar czf "$OUT/fr_run.tar.gz" -C "$work" log.txt bundles $(cd "$work" && ls -d trace_* 2>/dev/null)
tail -c 6000 "$work/log.txt"
